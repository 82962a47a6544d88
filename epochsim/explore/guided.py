"""The cases a coverage-guided search runs: fresh ones, and ones derived from its corpus.

Contract: `guided_cases(space, corpus, valid)` is a hypothesis strategy of `Case`s. Every
example draws, in this order and always all of them (so that hypothesis sees the same shape
of choices whatever the corpus holds, and replays an example exactly while the corpus stays
as it was): a fresh case (`strategies.cases`), a mutation seed and a fresh episode at time 0.
A `random.Random` seeded by the mutation seed and the number of runs the corpus has counted
decides: the fresh case (always while the corpus is empty; then less often as the corpus
counts runs, down to 1 - MUTANT_SHARE), or a parent picked from the corpus and mutated
(`mutate.mutate`, which may follow one of the leads its run's chain recorded),
splicing in the fresh episode or copying a unit of another kept case. A mutant the scenario
loader would reject (`valid` says no) is drawn again, up to a few times, else the parent is
returned (already run: it costs no run). Hypothesis shrinks a mutant like any example: the
seed and the episode towards simpler ones.
`loader_check(scenario)` is the `valid` of a scenario: its steps written as [[faults]] parse.
"""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import strategies as st

from epochsim.explore.episodes import episode
from epochsim.explore.mutate import mutate
from epochsim.explore.strategies import apply_workload, cases
from scenarios.schema import ScenarioError, parse_scenario
from scenarios.writer import scenario_to_toml
from sim.kafka.faults.rules import CONTROL_KINDS

MUTANT_SHARE = 0.5  # at most this share of runs are mutants, the rest fresh cases
RAMP_RUNS = 40  # the share grows from 0 to MUTANT_SHARE over the first runs counted


def mutant_share(runs: int) -> float:
    """The chance that an example is a mutant after `runs` counted runs: fresh cases first
    (what a fresh case finds quickly stays quick), the corpus more as it grows."""
    return MUTANT_SHARE * min(1.0, runs / RAMP_RUNS)

TRIES = 4


@st.composite
def guided_cases(draw, space, corpus, valid):
    fresh = draw(cases(space))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(space.kinds))
    extra = draw(episode(kind, space, 0))
    # the runs counted so far make each example's edits its own, even where hypothesis
    # draws the same seed again; they stay put once a failure stops the corpus growing
    rng = random.Random(seed * 1_000_003 + corpus.runs)
    if not corpus.entries or rng.random() >= mutant_share(corpus.runs):
        return fresh
    parent, feats, leads = corpus.pick(rng)
    sent = tuple(k for k in CONTROL_KINDS if any(f.startswith(f"cell {k}/") for f in feats))
    sent += tuple(k for k in sent if k in corpus.focus)  # the target's kind twice as often
    for _ in range(TRIES):
        child = mutate(parent, rng, space, extra, corpus.donor(rng), sent, leads)
        if child.key() != parent.key() and valid(child):
            return child
    return parent


def loader_check(scenario):
    """Whether a case's steps (and workload) make a scenario the loader accepts."""
    def valid(case) -> bool:
        sc = replace(apply_workload(scenario, case.workload), mixes=[], expect="pass")
        try:
            parse_scenario(scenario_to_toml(sc, list(case.steps)), "<mutant>")
        except ScenarioError:
            return False
        return True
    return valid
