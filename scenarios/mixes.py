"""Random fault mixes ([[mix]]) of a scenario file.

Contract: values are read with `scenarios.tables` and errors raised as its `Bad`; nothing here
knows the file. `check_mixes(items, names, run)` returns the random mixes as resolved dicts in
file order, in the shape `sim.core.faults.materialise_mix` reads: a mix with a duration_ms
always names its undo.
"""

from __future__ import annotations

from typing import Any

from scenarios.params import check_not_self, check_params
from scenarios.tables import Bad, Names, Table, check_list, check_number, check_str, describe
from scenarios.targets import TARGETS, check_target
from sim.kafka.faults import ACTIONS, DEFAULT_UNDO, SETTLE_SAFE
from sim.kafka.options import RunOptions

# Steps of all mixes together, undo steps included: they are materialised up front
# (sim.core.faults.materialise_mix), before run.max_events can stop anything.
MAX_MIX_STEPS = 1_000_000


def _mix_duration(t: Table) -> Any:
    """duration_ms of a mix: a number >= 0 or [min, max]; None when absent."""
    value = t.raw("duration_ms", None)
    if isinstance(value, list):
        if len(value) != 2:
            raise Bad(t.path("duration_ms"), f"expected [min, max], got {describe(value)}",
                      "write two numbers, e.g. [1000, 5000]")
        lo = check_number(value[0], t.path("duration_ms") + "[0]", lo=0)
        hi = check_number(value[1], t.path("duration_ms") + "[1]", lo=0)
        if lo > hi:
            raise Bad(t.path("duration_ms"), f"min {lo} exceeds max {hi}", "swap them")
        return value
    return None if value is None else check_number(value, t.path("duration_ms"), lo=0)


def _mix_undo(t: Table, action: str, targets: list, has_duration: bool, names: Names) -> Any:
    """The undo action of a mix: explicit or the default; it must work on the mix's targets."""
    undo = t.raw("undo", None)
    if undo is None:
        undo = DEFAULT_UNDO.get(action) if has_duration else None
        if has_duration and undo is None:
            raise Bad(t.path("duration_ms"), f"'{action}' has no default undo action",
                      'add undo = "<action>" or remove duration_ms')
        return undo
    # Undo steps may land in the settle window, so only recovery actions may undo.
    check_str(undo, t.path("undo"), SETTLE_SAFE)
    if not has_duration:
        raise Bad(t.path("undo"), "undo fires after duration_ms, which is missing",
                  "add duration_ms or remove undo")
    if targets == [None] and TARGETS[ACTIONS[undo].target][1]:
        # a mix without targets gives its undo steps none: no `undo = ...` fixes that
        raise Bad(t.path("undo"), f"'{undo}' needs a target, and a '{action}' mix has none to "
                  "give it", 'use undo = "heal" or "clear_rules", which need none')
    for target in targets:
        check_target(undo, target, t.path("undo"), names)
    return undo


def check_mix(item: Any, key: str, names: Names, run: RunOptions) -> dict:
    """One [[mix]] entry resolved: window filled, targets and params checked for its action."""
    t = Table(item, key)
    action = t.str("action", choices=list(ACTIONS))
    # at least 1 ms between a mix's faults: a finer one materialises millions of steps
    out: dict[str, Any] = {"action": action, "every_ms": t.number("every_ms", lo=1)}
    targets = t.raw("targets", None)
    if targets is not None:
        check_list(targets, t.path("targets"))
        for j, target in enumerate(targets):
            check_target(action, target, f"{key}.targets[{j}]", names)
        out["targets"] = targets
    else:
        check_target(action, None, t.path("targets"), names)
    duration = _mix_duration(t)
    undo = _mix_undo(t, action, targets or [None], duration is not None, names)
    if duration is not None:
        out.update(duration_ms=duration, undo=undo)
    quiet_ms = run.duration_ms - run.settle_ms
    # faults stop settle_ms before the end, so the window must open before then: blame
    # start_ms (not an end_ms the user may not have written) when it opens too late
    start = t.int("start_ms", 0, lo=0)
    if start >= quiet_ms:
        raise Bad(t.path("start_ms"), f"{start} is not before the settle period, which starts "
                  f"at {quiet_ms} (run.duration_ms - run.settle_ms)",
                  f"use a start_ms below {quiet_ms}, or raise run.duration_ms")
    out["start_ms"] = start
    out["end_ms"] = t.int("end_ms", quiet_ms, lo=start + 1, hi=quiet_ms)
    raw = t.raw("params", {})
    out["params"] = check_params(action, Table(raw, t.path("params")).data, t.path("params"), names)
    for j, target in enumerate(targets or [None]):
        check_not_self(action, target, out["params"], t.path("params"), f"{key}.targets[{j}]",
                       blame_target=True)
    t.done()
    return out


def check_mixes(items: Any, names: Names, run: RunOptions) -> list[dict]:
    """All [[mix]] entries, resolved, in file order; together they may materialise about
    MAX_MIX_STEPS steps at most (each mix under the cap, many mixes could exhaust memory)."""
    mixes, total = [], 0.0
    for i, item in enumerate(check_list(items, "mix", nonempty=False)):
        mix = check_mix(item, f"mix[{i}]", names, run)
        steps = mix_steps(mix)
        total += steps
        if total > MAX_MIX_STEPS:
            alone = f"fires about {steps:.3g} steps" if i == 0 else (
                f"brings the mixes' steps to about {total:.3g}")
            raise Bad(f"mix[{i}].every_ms", f"{alone} between start_ms and end_ms (undo steps "
                      f"included), more than the {MAX_MIX_STEPS:,} steps a schedule may hold",
                      "raise every_ms, narrow the windows or drop a mix")
        mixes.append(mix)
    return mixes


def mix_steps(mix: dict) -> float:
    """About how many steps a resolved mix materialises: one per mean gap in its window, and
    an undo step after each when it has a duration_ms."""
    fired = (mix["end_ms"] - mix["start_ms"]) / mix["every_ms"]
    return fired * (2 if "duration_ms" in mix else 1)
