"""Minimise a concrete failing schedule while the same invariant still fails.

Contract: `minimise(fails, case, seed=None)` returns a case no larger than `case` for which
`fails` (a deterministic predicate, normally `Oracle.fails`) still holds, by
0. seed simplification: with `seed` (the scenario's own), the case at that seed if it still
   fails there, tried before and after step 1;
1. delta debugging (Zeller's ddmin) over *units*: a fault together with the step that undoes
   it (crash/restart, isolate/heal, rule/clear_rules, reassign/cancel_reassignment: each
   undo's `undoes` and `pairs` in `sim.kafka.faults`), so a
   shrunk story never keeps a crash without its restart because the restart looked redundant;
2. time simplification: each step's time rounded down to the coarsest of 1 s, 100 ms, 10 ms,
   1 ms that still fails, never before the step ahead of it (the order stays the same) and
   never so early that an undo would find nothing to undo;
3. param simplification: rule delays and durations rounded down the same way.
The result is 1-minimal over units: removing any one unit makes the failure go away. Then
single steps go too where the failure stays: a fault whose undo matters for another reason
(a restart that revives a broker halted meanwhile keeps its unit, and with it a second power
loss that found the broker already down), and an undo left with nothing to undo.
"""

from __future__ import annotations

from dataclasses import replace

from sim.core.faults import FaultStep
from sim.kafka.faults import ACTIONS, OPENERS

GRIDS_US = (1_000_000, 100_000, 10_000, 1_000)
GRIDS_MS = (1000, 100, 10, 1)


def _pairs(undo: FaultStep, opener: FaultStep) -> bool:
    """Whether `undo` ends `opener`: the undo action names it (`FaultAction.undoes`) and its
    own pairing rule agrees (same target, same rule kind, same cut name)."""
    action = ACTIONS.get(undo.action)
    return action is not None and opener.action in action.undoes and action.pairs(undo, opener)


def _undo_after_us(opener: FaultStep) -> int:
    """How long after `opener` its undo must stay to undo anything."""
    action = ACTIONS.get(opener.action)
    return action.undo_after_us if action is not None else 0


def units_of(steps) -> list[list[tuple[int, FaultStep]]]:
    """Steps grouped into units: each undo joins the latest open fault it undoes (one with the
    same target first); other steps stand alone. Items keep their schedule index."""
    units: list[list[tuple[int, FaultStep]]] = []
    waiting: list[tuple[int, FaultStep]] = []  # (unit index, opener) not yet undone
    for index, step in enumerate(steps):
        candidates = [w for w in waiting if _pairs(step, w[1])]
        same = [w for w in candidates if w[1].target == step.target]
        match = (same or candidates)[-1] if candidates else None
        if match is None:
            units.append([(index, step)])
            if step.action in OPENERS:
                waiting.append((len(units) - 1, step))
        else:
            units[match[0]].append((index, step))
            waiting.remove(match)
    return units


def _flatten(units) -> tuple:
    return tuple(step for _i, step in sorted(item for unit in units for item in unit))


def ddmin(units: list, fails) -> list:
    """Zeller's ddmin: a 1-minimal sublist of `units` for which `fails(sublist)` holds."""
    n = 2
    while len(units) >= 2:
        chunks = [units[i * len(units) // n:(i + 1) * len(units) // n] for i in range(n)]
        for chunk in chunks:
            if fails(chunk):
                units, n = chunk, 2
                break
        else:
            for i in range(n):
                rest = [u for j, c in enumerate(chunks) if j != i for u in c]
                if fails(rest):
                    units, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(units):
                    break
                n = min(2 * n, len(units))
    return units


def minimise(fails, case, progress=None, seed=None):
    """The smallest case found for which `fails` still holds (see the module contract)."""
    if case.steps and fails(replace(case, steps=())):
        return replace(case, steps=())
    case = _simplify_seed(fails, case, seed)
    units = units_of(case.steps)
    units = ddmin(units, lambda us: fails(replace(case, steps=_flatten(us))))
    case = _drop_single_steps(fails, replace(case, steps=_flatten(units)))
    case = _simplify_seed(fails, case, seed)
    if progress:
        kept = len(case.steps)
        progress(f"delta debugging kept {kept} step{'s' if kept != 1 else ''}; simplifying times")
    case = _simplify_times(fails, case)
    return _simplify_params(fails, case)


def _simplify_seed(fails, case, seed):
    """`case` at the scenario's own `seed` if it still fails there."""
    if seed is None or case.seed == seed:
        return case
    trial = replace(case, seed=seed)
    return trial if fails(trial) else case


def _drop_single_steps(fails, case):
    """Remove steps one at a time, last first, while `fails` holds: any step except an undo
    that still undoes a fault kept in the story (its unit goes whole, or not at all)."""
    steps, changed = list(case.steps), True
    while changed:  # removing a fault frees its undo, which an earlier pass skipped
        changed = False
        undos = _openers(steps)
        for i in reversed(range(len(steps))):
            if i in undos:
                continue
            trial = steps[:i] + steps[i + 1:]
            if fails(replace(case, steps=tuple(trial))):
                steps, changed, undos = trial, True, _openers(trial)
    return replace(case, steps=tuple(steps))


def _openers(steps) -> dict[int, int]:
    """Index of each undo step -> index of the fault it undoes."""
    return {unit[k][0]: unit[0][0] for unit in units_of(steps) for k in range(1, len(unit))}


def _simplify_times(fails, case):
    steps = list(case.steps)
    openers = _openers(steps)
    for i, step in enumerate(steps):
        floor = steps[i - 1].at_us if i else 0
        if i in openers:
            opener = steps[openers[i]]
            floor = max(floor, opener.at_us + _undo_after_us(opener))
        for grid in GRIDS_US:
            at = max(step.at_us // grid * grid, floor)
            if at >= step.at_us:  # already on the grid, or the floor is later
                break
            trial = steps[:i] + [replace(step, at_us=at)] + steps[i + 1:]
            if fails(replace(case, steps=tuple(trial))):
                steps = trial
                break
    return replace(case, steps=tuple(steps))


def _simplify_params(fails, case):
    steps = list(case.steps)
    for i in range(len(steps)):
        for key in ("delay_ms", "duration_ms"):
            value = steps[i].params.get(key)
            if not isinstance(value, int | float):
                continue
            for grid in GRIDS_MS:
                rounded = int(value // grid * grid)
                if rounded == value:
                    break
                if key == "duration_ms" and rounded <= 0:
                    continue
                params = {**steps[i].params, key: rounded}
                trial = steps[:i] + [replace(steps[i], params=params)] + steps[i + 1:]
                if fails(replace(case, steps=tuple(trial))):
                    steps = trial
                    break
    return replace(case, steps=tuple(steps))
