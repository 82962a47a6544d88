"""Hypothesis-driven, coverage-guided counterexample search over one scenario.

Contract: `explore(scenario, budget, seed, target=None, ...)` runs up to `budget` generated
cases (`guided.guided_cases`: fresh ones from `strategies.cases`, and mutants of the cases
kept in a `novelty.Corpus` for reaching a feature no earlier run reached) with hypothesis,
seeded by `seed` alone (no example database unless one is passed), against the scenario's
cluster, topics, workload and protocol with the generated schedule in place of the
scenario's own faults (or, with `story`, added to them; the story alone runs first), and
stops at the first case that
violates `target` (or any invariant when `target` is None: the first one violated becomes the
target). It then shrinks with hypothesis' own shrinker while that same invariant fails (at
most `max_shrink_runs` runs), then polishes the result with `shrink.minimise`, which also
tries the scenario's own seed. The phases are generate and shrink only (the
explain phase multiplies shrink time several-fold for nothing a schedule needs). Same scenario,
budget and seed give the same result. Coverage, and coverage over time, are folded from
every generated run.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky

from epochsim.explore.chains import STAGES, ChainFold
from epochsim.explore.coverage import RELEVANT, Coverage
from epochsim.explore.guided import guided_cases, loader_check
from epochsim.explore.novelty import Corpus, SignalFold, chain_feature, features, focus_words
from epochsim.explore.oracle import Oracle
from epochsim.explore.shrink import minimise
from epochsim.explore.strategies import KINDS, Case, FaultSpace


class Found(Exception):
    """Raised inside the hypothesis test when a case violates the target."""


class _BudgetSpent(BaseException):
    """Raised inside the hypothesis test once the budget is spent with nothing found, or the
    shrink budget with a failure found: it ends hypothesis' run at once (a BaseException,
    which hypothesis does not take for a failure), where returning would let it draw up to its
    `max_examples` more cases (or shrink candidates), each a fresh draw of a whole schedule,
    to run none of them."""


@dataclass
class ExploreResult:
    scenario: object
    seed: int  # the search seed
    budget: int
    asked: str | None  # the target as asked (None: any invariant)
    invariant: str | None = None  # the invariant the counterexample violates
    case: object = None  # the shrunk case
    first_case: object = None
    runs: int = 0  # every simulation run, generation and shrinking
    runs_to_first: int | None = None
    generated: int = 0  # generation-phase runs (at most the budget)
    coverage: Coverage = field(default_factory=Coverage)
    seen: dict = field(default_factory=dict)  # invariant -> generated runs that broke it
    elapsed_s: float = 0.0
    error: str | None = None  # traceback, when the invariant is `model_error`
    shared: int = 0  # failing cases that the reference scenario failed as well
    kinds: tuple = KINDS  # the fault kinds schedules were drawn from
    over_time: list = field(default_factory=list)  # (run, request cells, features) reached
    corpus_size: int = 0  # generated cases kept for reaching something new
    story: int = 0  # scripted steps of the scenario every case kept
    chain: list = field(default_factory=list)  # [step, passing runs that reached it] in order

    @property
    def found(self) -> bool:
        return self.case is not None


class _Search:
    """State shared by the hypothesis test function across examples."""

    def __init__(self, scenario, target, budget, max_shrink_runs, progress, reference=None):
        ref = None if reference is None else Oracle(reference, target)
        self.oracle = Oracle(scenario, target, keep_events=True, reference=ref)
        self.coverage = Coverage()
        self.stages = STAGES.get(target, ())  # the steps towards the target's violation
        self.corpus = Corpus(focus_words(RELEVANT.get(target, ("", ()))[1]), self.stages)
        self.oracle.on_events = self._fold
        self._features: frozenset | None = None
        self._leads: tuple = ()
        self.budget = budget
        self.max_shrink_runs = max_shrink_runs
        self.progress = progress
        self.first = self.last = None
        self.runs_to_first = None
        self.seen: dict = {}  # invariant -> generation runs that broke it
        self.started = time.monotonic()

    def _fold(self, events, judged) -> None:
        signals = SignalFold()
        # the chain's fold only where the target has a chain: the others would drop its steps
        chains = ChainFold(self.stages) if self.stages else None
        also = (signals, chains) if chains is not None else (signals,)
        fold = self.coverage.add_events(events, judged, also=also)
        self._features = features(fold, signals, chains, self.stages)
        self._leads = tuple(chains.leads) if chains is not None else ()

    def probe(self, case) -> None:
        if self.first is not None and self._over_shrink_budget(case):
            # past the shrink budget: end hypothesis' shrinking now, where returning would
            # let it draw (and discard) hundreds more candidates; the last failure stands
            raise _BudgetSpent()
        if self.first is None and self.oracle.runs >= self.budget and not self.oracle.known(case):
            raise _BudgetSpent()
        names = self.oracle.violated(case)
        feats, self._features = self._features, None  # set when this case ran just now
        if self.first is None:
            if self.oracle.target is None and names:
                self.oracle.target = names[0]
            if self.oracle.fails(case):
                if feats is not None:
                    self.corpus.last(feats, self.oracle.runs, len(self.coverage.cells))
                self._first_failure(case)
            else:  # the corpus grows with passing runs only: a failure's replay sees it as was
                if feats is not None:
                    self.corpus.add(case, feats, self.oracle.runs, len(self.coverage.cells),
                                    self._leads)
                    self._report_progress()
                return
        if self.oracle.fails(case):
            self.last = case
            raise Found()

    def _first_failure(self, case) -> None:
        self.first = case
        self.runs_to_first = self.oracle.runs
        self.all_runs_at_first = self.oracle.all_runs
        self.seen = dict(self.oracle.seen)
        self.oracle.keep_events = False  # coverage describes the search, not the shrinking
        self.progress(f"found {self.oracle.target} at run {self.oracle.runs} "
                      f"({len(case.steps)} steps, {self._elapsed()}); shrinking")

    def _over_shrink_budget(self, case) -> bool:
        spent = self.oracle.all_runs - self.all_runs_at_first
        return spent >= self.max_shrink_runs and not self.oracle.known(case)

    def _report_progress(self) -> None:
        runs = self.oracle.runs
        if runs % 50 == 0:
            self.progress(f"{runs}/{self.budget} runs, {self._elapsed()}, "
                          f"{len(self.coverage.cells)} request situations reached")

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self.started:.1f}s"


def explore(scenario, budget: int, seed: int, target: str | None = None, max_faults: int = 8,
            max_shrink_runs: int = 300, database=None, progress=None,
            reference=None, kinds: tuple = KINDS, story: bool = False) -> ExploreResult:
    """Search for a counterexample; see the module contract. With a `reference` scenario (the
    same without its planted bug; needs a target), a case counts only if the reference does
    not break the target on it. `kinds` are the fault kinds schedules are drawn from. With
    `story`, the scenario's scripted steps are every case's base: the first run is the
    scenario as written, and every other adds episodes around its steps."""
    if reference is not None and target is None:
        raise ValueError("a reference scenario needs a target invariant")
    progress = progress or (lambda text: None)
    space = FaultSpace.of(scenario, max_faults=max_faults, kinds=kinds, story=story)
    search = _Search(scenario, target, budget, max_shrink_runs, progress, reference)
    if space.story:
        _probe_story(search, Case(space.base_seed, space.story))
    if search.first is None:
        strategy = guided_cases(space, search.corpus, loader_check(scenario))
        _run_hypothesis(strategy, search, 2 * budget, seed, database,
                        _database_key(scenario, target, space))
    result = ExploreResult(scenario, seed, budget, target, coverage=search.coverage, kinds=kinds,
                           story=len(space.story))
    oracle = search.oracle
    result.generated = search.runs_to_first or oracle.runs
    search.corpus.finish(result.generated)
    result.over_time = list(search.corpus.over_time)
    result.corpus_size = len(search.corpus.entries)
    result.chain = [[step, search.corpus.hits.get(chain_feature(step), 0)]
                    for step in search.stages]
    result.seen = search.seen if search.first is not None else dict(oracle.seen)
    if search.last is not None:
        result.invariant = oracle.target
        result.first_case = search.first
        result.runs_to_first = search.runs_to_first
        progress(f"shrunk to {len(search.last.steps)} steps by hypothesis; polishing")
        result.case = minimise(oracle.fails, search.last, progress, space.base_seed)
        result.error = oracle.errors.get(result.case.key())
    result.runs = oracle.all_runs
    result.shared = oracle.shared
    result.elapsed_s = time.monotonic() - search.started
    return result


def _probe_story(search, case) -> None:
    """Run the scenario's own story first: a story that breaks the target is the first
    failure, shrunk by `minimise` alone."""
    try:
        search.probe(case)
    except Found:
        pass


def _run_hypothesis(strategy, search, examples, seed, database, key: bytes) -> None:
    """Run hypothesis' phases with `search.probe` as the test: up to `examples` examples
    (some are cases run before, which cost nothing; `probe` stops running at the budget)."""
    phases = [Phase.generate, Phase.shrink]
    if database is not None:
        phases.insert(0, Phase.reuse)
    config = settings(max_examples=examples, phases=phases, database=database, deadline=None,
                      derandomize=False, suppress_health_check=list(HealthCheck),
                      verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)

    # settings outermost: @seed alone would switch the example database off
    @config
    @hypothesis_seed(seed)
    @given(strategy)
    def probe(case):
        search.probe(case)

    probe._hypothesis_internal_database_key = key  # one key per scenario and target
    try:
        with _without_local_constants():
            probe()
    except (Found, _BudgetSpent):
        pass
    except Flaky as exc:  # cannot happen with a deterministic model; say so if it does
        print(f"warning: hypothesis reported a flaky failure ({type(exc).__name__}); "
              "the last failing case is used", file=sys.stderr)


@contextmanager
def _without_local_constants():
    """Hypothesis draws, now and then (5% of its draws), a literal it found in any module of the
    project that happens to be imported. The search would then depend on every constant in the
    code, a command's own among them, and on which modules are loaded when it runs: one seed
    gave another counterexample after an edit to an unrelated module, or from `epochsim
    explore` and the API. Within this block hypothesis sees no local constants, only its own."""
    try:
        from hypothesis.internal.conjecture import providers
        get, cache, empty = providers._get_local_constants, providers.CONSTANTS_CACHE, \
            providers.Constants()
    except (ImportError, AttributeError):  # a hypothesis without them: nothing to switch off
        yield
        return
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # the allowed constants of each kind, local ones included
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()


def _database_key(scenario, target, space) -> bytes:
    key = [scenario.options.to_json(), scenario.invariants, target, space.max_faults]
    if space.kinds != KINDS:  # default searches keep the keys they always had
        key.append(list(space.kinds))
    if space.story:
        key.append([s.to_json() for s in space.story])
    text = json.dumps(key, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()
