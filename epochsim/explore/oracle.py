"""Run one candidate schedule and say which invariants it confirmably broke.

Contract: `Oracle(scenario, target)` runs a `Case` with `run_scenario(scenario, seed,
schedule=steps, stop_at_first=...)` and returns the names of the invariants it violated.
Invariants that judge only at the end of a run (`finish`) are trusted only from complete runs:
a run stopped early at a safety violation would have them judge a half-finished story. So the
oracle stops early only when the target is checked online (or when no target is set yet), and
drops end-of-run verdicts from runs it stopped. `target` may be None (any invariant) until the
first failure fixes it. A model exception counts as the pseudo-invariant `model_error`.
With a `reference` oracle (the same scenario without its planted bug), a case fails only if
the reference does not fail it too: the failure must be the bug's doing, not the model's.
Results are cached by case, and the oracle counts runs and remembers which invariants it saw.
"""

from __future__ import annotations

import traceback
from collections import Counter

from epochsim.explore.strategies import apply_workload
from epochsim.runner import run_scenario
from invariants.base import Invariant
from invariants.registry import INVARIANTS

MODEL_ERROR = "model_error"


def end_checked(name: str) -> bool:
    """Whether an invariant judges (also) at the end of a run, so needs the whole run."""
    cls = INVARIANTS.get(name)
    return cls is not None and cls.finish is not Invariant.finish


class Oracle:
    def __init__(self, scenario, target: str | None = None, keep_events: bool = False,
                 reference: Oracle | None = None):
        self.scenario = scenario
        self.target = target
        self.reference = reference
        self.keep_events = keep_events  # hand the run's events to `on_events`
        self.on_events = None
        self.runs = 0
        self.shared = 0  # failing cases the reference failed as well
        self.seen: Counter = Counter()  # invariant -> runs that broke it
        self.errors: dict[str, str] = {}  # case key -> traceback of a model exception
        self._cache: dict[str, tuple] = {}

    def violated(self, case) -> tuple:
        """The invariants `case` confirmably violates, first-failing first."""
        key = case.key()
        if key not in self._cache:
            self._cache[key] = self._run(case, key)
        return self._cache[key]

    def known(self, case) -> bool:
        """Whether `case` has run already (its result is cached)."""
        return case.key() in self._cache

    def fails(self, case) -> bool:
        """Whether `case` violates the target (any invariant while no target is set), and the
        reference, if any, does not."""
        names = self.violated(case)
        hit = bool(names) if self.target is None else self.target in names
        if hit and self.reference is not None:
            self.reference.target = self.target
            hit = not self.reference.fails(case)
            self.shared += not hit
        return hit

    @property
    def all_runs(self) -> int:
        """Runs of this oracle and its reference."""
        return self.runs + (self.reference.runs if self.reference is not None else 0)

    def _run(self, case, key: str) -> tuple:
        self.runs += 1
        stop = self.target is None or not end_checked(self.target)
        keep = self.keep_events and self.on_events is not None
        try:
            verdict = run_scenario(apply_workload(self.scenario, case.workload), case.seed,
                                   schedule=list(case.steps), stop_at_first=stop,
                                   keep_events=keep)
        except Exception:  # noqa: BLE001 - a model crash is a finding, not a harness failure
            self.errors[key] = traceback.format_exc(limit=8)
            self.seen[MODEL_ERROR] += 1
            return (MODEL_ERROR,)
        if keep:
            self.on_events(verdict.pop("_events"), verdict["metrics"].get("liveness_judged", {}))
        names = confirmed(verdict)
        self.seen.update(names)
        return names


def confirmed(verdict: dict) -> tuple:
    """Violated invariants in order of first violation; end-of-run ones only if the run ended."""
    out: list[str] = []
    for v in verdict["violations"]:
        name = v["invariant"]
        if verdict.get("stopped_early") and end_checked(name):
            continue
        if name not in out:
            out.append(name)
    return tuple(out)
