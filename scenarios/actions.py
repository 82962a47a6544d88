"""Scripted fault steps ([[faults]]) of a scenario file.

Contract: values are read with `scenarios.tables` and errors raised as its `Bad`; nothing here
knows the file. Each action's target kind, params and their checks live with the action in
`sim.kafka.faults`; targets are checked in `scenarios.targets`, params in `scenarios.params`,
random mixes in `scenarios.mixes`. `check_faults(items, names, run)` returns the scripted
steps as `FaultStep`s sorted by time (stable); `created_topics` finds the topics that
create_topic steps and mixes make, so targets may name them.
"""

from __future__ import annotations

from typing import Any

from scenarios.mixes import check_mixes
from scenarios.params import check_not_self, check_params
from scenarios.tables import Bad, Names, Table, check_list
from scenarios.targets import check_target, check_topic_name
from sim.core.faults import FaultStep, sorted_schedule
from sim.kafka.faults import ACTIONS, SETTLE_SAFE
from sim.kafka.options import RunOptions

__all__ = ["check_faults", "check_mixes", "check_step", "check_topic_name", "created_topics"]


def _at_us(t: Table, duration_ms: int) -> int:
    """The step time in µs from exactly one of at_ms / at_us (at_us keeps replays exact)."""
    if "at_ms" not in t.data and "at_us" not in t.data:
        raise Bad(t.path("at_ms"), "missing required key", "add at_ms = <time>")
    if "at_ms" in t.data and "at_us" in t.data:
        raise Bad(t.path("at_us"), "give only one of at_ms and at_us", "remove one")
    if "at_ms" in t.data:
        at_us = t.int("at_ms", lo=0) * 1000
    else:
        at_us = t.int("at_us", lo=0)
    t.asked += ["at_ms", "at_us"]
    if at_us >= duration_ms * 1000:
        raise Bad(t.path("at_ms" if "at_ms" in t.data else "at_us"),
                  f"at {at_us / 1000:g} ms is not before run.duration_ms = {duration_ms}",
                  "move the step earlier or raise run.duration_ms")
    return at_us


def check_step(item: Any, key: str, names: Names, run: RunOptions) -> FaultStep:
    """One [[faults]] entry as a FaultStep; its keys other than at/action/target are params."""
    t = Table(item, key)
    at_us = _at_us(t, run.duration_ms)
    action = t.str("action", choices=list(ACTIONS))
    target = check_target(action, t.raw("target", None), t.path("target"), names)
    base = ("at_ms", "at_us", "action", "target")
    raw = {k: v for k, v in t.data.items() if k not in base}
    params = check_params(action, raw, key, names, also_valid=base)
    check_not_self(action, target, params, key, t.path("target"))
    quiet_us = (run.duration_ms - run.settle_ms) * 1000
    if at_us >= quiet_us and action not in SETTLE_SAFE:
        raise Bad(t.path("at_ms" if "at_ms" in t.data else "at_us"),
                  f"'{action}' at {at_us / 1000:g} ms falls in the settle window "
                  f"(from {quiet_us // 1000} ms)",
                  f"move it earlier or lower run.settle_ms "
                  f"(only {', '.join(SETTLE_SAFE)} may run there)")
    return FaultStep(at_us, action, target, params)


def check_faults(items: Any, names: Names, run: RunOptions) -> list[FaultStep]:
    """All [[faults]] entries as steps, stably sorted by time."""
    steps = [check_step(item, f"faults[{i}]", names, run)
             for i, item in enumerate(check_list(items, "faults", nonempty=False))]
    return sorted_schedule(steps)


def created_topics(*lists: Any) -> dict[str, int]:
    """Topics that create_topic steps/mixes make (name -> partitions), so targets may name them.

    Best effort over unchecked input: the entries themselves are checked later.
    """
    out: dict[str, int] = {}
    for items in lists:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("action") != "create_topic":
                continue
            params = item.get("params", item)  # mixes nest params, steps do not
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                continue
            parts = params.get("partitions", 1)
            parts = parts if isinstance(parts, int) and not isinstance(parts, bool) else 1
            out[params["name"]] = max(out.get(params["name"], 0), parts)
    return out
