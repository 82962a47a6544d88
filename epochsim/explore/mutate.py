"""Derive a new case from one the search kept: coverage-guided explore's mutations.

Contract: `mutate(parent, rng, space, fresh, donor)` returns a new `Case` made from `parent`
by one to three stacked edits, each chosen by `rng` (a seeded `random.Random`, so the result
depends on the seed alone):
- move a unit (a fault with its undo, `shrink.units_of`) earlier or later, whole;
- lengthen or shorten a unit (its undo moves, never before its fault);
- retarget a unit: a broker, controller, client, role, partition or topic it names (as its
  target, or as the `dst`, `src` or `to` of a step) becomes another of the same sort;
- change a held or reordered control request's kind, or the kind that releases it;
- drop a unit;
- splice in `fresh` (a newly drawn episode, its steps at time 0), placed near a step of the
  parent most of the time, so that faults meet;
- copy a unit of `donor` (another kept case) at its own time;
- race a step (one that makes the controller send, when there is one): hold the control
  requests of a kind the parent's run delivered (`sent`), from the step's time for 1-30
  slots, until a later control request of another kind reaches the same broker (as
  `control_race` does), or reorder them; armed just before the step acts;
- align two units on one node: a broker (or controller, client) one unit names becomes the
  one another unit names, so that faults meet on the same node (a LeaderAndIsr held from a
  broker and leadership moved to that broker);
- revert a reassignment to the scenario's replicas a few slots later;
- another run seed; the donor's workload tweaks;
- follow a lead (`leads`, the parent run's `chains.ChainFold.leads`): add the operator action
  that would take the run one step further along the target's chain, 1 ms to 2 s after the
  moment the step before it began. Tried first, 80% of the time, when the parent has leads;
  a parent without any draws exactly as before.
Spliced and copied units get cut names of their own (`m<n>`), so their heals end their cuts
only. Times stay on the space's window: faults before its end, undos by its end.
"""

from __future__ import annotations

from dataclasses import replace

from epochsim.explore.shrink import units_of
from sim.core.faults import FaultStep, sorted_schedule
from sim.kafka.faults.rules import CONTROL_KINDS

NODE_PARAMS = ("dst", "src", "to")  # step params that name a node
# actions after which the controller sends control requests: what a race edit holds back
CONTROL_CHANGES = ("reassign", "move_leader", "move_all_leaders", "preferred_election",
                   "elect_leaders", "controlled_shutdown", "crash", "isolate", "restart", "heal")
SLOT_US = 100_000
FOLLOW = 0.8  # the chance a parent with leads has one followed
FOLLOW_AFTER_US = (1_000, 10_000, 100_000, 500_000, 1_000_000, 2_000_000)
NEEDS = {"race": ("rule:hold", "rule:reorder", "control_race"),
         "revert": ("reassign", "control_race")}
EDITS = ("shift", "stretch", "retarget", "align", "kinds", "drop", "splice", "splice", "copy",
         "race", "race", "revert", "seed", "workload")


def mutate(parent, rng, space, fresh: list | None = None, donor=None, sent: tuple = (),
           leads: tuple = ()):
    """A new case derived from `parent` (see the module contract); `sent` are the control
    request kinds the parent's run delivered, `leads` the steps its run's chain led to."""
    units = [[step for _i, step in unit] for unit in units_of(parent.steps)]
    case = parent
    if leads and rng.random() < FOLLOW:
        units = _follow(units, rng, space, leads)
    edits = allowed_edits(space.kinds)
    for _ in range(rng.choice((1, 1, 2, 3))):
        edit = rng.choice(edits)
        if edit == "seed":
            case = replace(case, seed=space.base_seed + rng.randrange(2**16))
        elif edit == "workload":
            if donor is not None and donor.workload != case.workload:
                case = replace(case, workload=donor.workload)
        elif edit == "race":
            units = _race(units, rng, space, sent)
        else:
            units = _EDITS[edit](units, rng, space, fresh or [], donor)
    steps = tuple(sorted_schedule([s for unit in units for s in unit]))
    return replace(case, steps=steps)


def allowed_edits(kinds: tuple) -> tuple:
    """The edits that add only faults of `kinds` (a race needs a held or reordered kind, a
    revert a reassignment): a search with --faults draws nothing else."""
    return tuple(e for e in EDITS if e not in NEEDS or set(NEEDS[e]) & set(kinds))


def _race_rules(kinds: tuple) -> tuple:
    hold = ("hold", "hold") if {"rule:hold", "control_race"} & set(kinds) else ()
    return hold + (("reorder",) if "rule:reorder" in kinds else ())


def _window_us(space) -> int:
    return space.window_ms * 1000


def _clamp_unit(unit: list, delta_us: int, space) -> list:
    """`unit` moved by `delta_us`, kept inside the window: its fault before the window ends,
    its undos by then, and a rule lapsing by then (as a fresh draw's does: a message held
    into the quiet time leaves the run unfinished, and its end-of-run checks judge that)."""
    lo = -min(s.at_us for s in unit)
    hi = _window_us(space) - SLOT_US - unit[0].at_us
    delta = max(lo, min(delta_us, hi))
    last = _window_us(space)
    return [_lapse(replace(s, at_us=min(s.at_us + delta, last)), last) for s in unit]


def _lapse(step: FaultStep, last_us: int) -> FaultStep:
    """A rule step whose duration is cut to end by `last_us`."""
    duration = step.params.get("duration_ms") if step.action == "rule" else None
    if duration is None or step.at_us + duration * 1000 <= last_us:
        return step
    room_ms = max(SLOT_US, last_us - step.at_us) // 1000
    return replace(step, params={**step.params, "duration_ms": room_ms})


def _pick(units: list, rng) -> int | None:
    return rng.randrange(len(units)) if units else None


def _shift(units, rng, space, _fresh, _donor):
    i = _pick(units, rng)
    if i is None:
        return units
    slots = rng.choice((1, 1, 2, 3, 5, 10, 20))
    units = list(units)
    units[i] = _clamp_unit(units[i], rng.choice((-1, 1)) * slots * SLOT_US, space)
    return units


def _stretch(units, rng, space, _fresh, _donor):
    paired = [i for i, u in enumerate(units) if len(u) > 1]
    if not paired:
        return units
    i = rng.choice(paired)
    unit = units[i]
    gap = rng.randint(1, 30) * SLOT_US
    end = min(unit[0].at_us + gap, _window_us(space))
    moved = [unit[0]] + [replace(s, at_us=max(end, unit[0].at_us)) for s in unit[1:]]
    return units[:i] + [moved] + units[i + 1:]


def peers(name: str, space) -> tuple:
    """The names `name` may become: others of its sort in `space` (itself if none)."""
    for group in (space.brokers, space.controllers, space.producers, space.consumers,
                  space.roles(), space.tps, space.topics):
        if name in group:
            return group
    return (name,)


def _names(unit) -> list[str]:
    out = []
    for s in unit:
        for value in [s.target] + [s.params.get(k) for k in NODE_PARAMS]:
            if isinstance(value, str) and value not in out:
                out.append(value)
    return out


def _retarget(units, rng, space, _fresh, _donor):
    i = _pick(units, rng)
    if i is None:
        return units
    names = [n for n in _names(units[i]) if len(peers(n, space)) > 1]
    if not names:
        return units
    old = rng.choice(names)
    return _swap_name(units, i, old, rng.choice([p for p in peers(old, space) if p != old]))


def _align(units, rng, space, _fresh, _donor):
    """One unit's node becomes a node of the same sort that another unit names."""
    named = [(i, n) for i, u in enumerate(units) for n in _names(u) if len(peers(n, space)) > 1]
    if len({i for i, _n in named}) < 2:
        return units
    i, old = rng.choice(named)
    choices = [n for j, n in named if j != i and n != old and n in peers(old, space)]
    if not choices:
        return units
    return _swap_name(units, i, old, rng.choice(choices))


def _swap_name(units, i: int, old: str, new: str) -> list:
    """`units` with the name `old` replaced by `new` in unit `i` (target and node params)."""
    def swap(s: FaultStep) -> FaultStep:
        params = {k: (new if k in NODE_PARAMS and v == old else v) for k, v in s.params.items()}
        return replace(s, target=new if s.target == old else s.target, params=params)

    return units[:i] + [[swap(s) for s in units[i]]] + units[i + 1:]


def _kinds(units, rng, _space, _fresh, _donor):
    held = [i for i, u in enumerate(units)
            if u[0].action == "rule" and u[0].params.get("rule") in ("hold", "reorder")]
    if not held:
        return units
    i = rng.choice(held)
    first = units[i][0]
    key = rng.choice(("kind", "release_kind") if "release_kind" in first.params else ("kind",))
    params = {**first.params, key: rng.choice(CONTROL_KINDS)}
    return units[:i] + [[replace(first, params=params)] + units[i][1:]] + units[i + 1:]


def _drop(units, rng, _space, _fresh, _donor):
    if len(units) < 2:
        return units
    i = rng.randrange(len(units))
    return units[:i] + units[i + 1:]


def _rename_cuts(steps: list, units: list) -> list:
    """`steps` with each cut name replaced by a fresh `m<n>` unused in `units`."""
    used = {s.params.get("cut") for u in units for s in u}
    mapping: dict = {}
    out = []
    for s in steps:
        cut = s.params.get("cut")
        if cut is None:
            out.append(s)
            continue
        if cut not in mapping:
            n = 0
            while f"m{n}" in used or f"m{n}" in mapping.values():
                n += 1
            mapping[cut] = f"m{n}"
        out.append(replace(s, params={**s.params, "cut": mapping[cut]}))
    return out


def _splice(units, rng, space, fresh, _donor):
    if not fresh:
        return units
    times = [s.at_us for u in units for s in u]
    if times and rng.random() < 0.7:
        at = rng.choice(times) + rng.randint(-5, 5) * SLOT_US
    else:
        at = rng.randrange(space.slots) * SLOT_US
    steps = _rename_cuts(list(fresh), units)
    return units + [_clamp_unit(steps, max(0, at), space)]


def _copy(units, rng, _space, _fresh, donor):
    if donor is None or not donor.steps:
        return units
    theirs = [[step for _i, step in unit] for unit in units_of(donor.steps)]
    return units + [_rename_cuts(rng.choice(theirs), units)]


def _race(units, rng, space, sent: tuple):
    openers = [u[0] for u in units if u[0].action != "rule"]
    changes = [s for s in openers if s.action in CONTROL_CHANGES]
    if not openers:
        return units
    at = rng.choice(changes or openers).at_us
    kind = rng.choice(sent or CONTROL_KINDS)
    # the rule lapses by the window's end, as every undo does: a request held into the quiet
    # time at the end leaves the run unfinished, and its end-of-run checks would judge that
    room_ms = max(SLOT_US, _window_us(space) - at) // 1000
    params = {"rule": rng.choice(_race_rules(space.kinds)), "kind": kind,
              "duration_ms": min(room_ms, SLOT_US // 1000 * rng.choice((1, 5, 10, 30)))}
    if params["rule"] == "hold":
        params["release_kind"] = rng.choice([k for k in CONTROL_KINDS if k != kind])
    dst = rng.choice((None,) * len(space.brokers) + space.brokers)
    if dst is not None:
        params["dst"] = dst
    return [[FaultStep(at, "rule", None, params)]] + units  # first: armed before the step


def _follow(units, rng, space, leads: tuple) -> list:
    lead = rng.choice(leads)
    at = min(lead.at_us + rng.choice(FOLLOW_AFTER_US), _window_us(space) - SLOT_US)
    return units + [[replace(lead, at_us=max(0, at))]]


def _revert(units, rng, space, _fresh, _donor):
    moves = [s for u in units for s in u if s.action == "reassign"]
    if not moves:
        return units
    move = rng.choice(moves)
    back = dict(space.assignment).get(move.target)
    if back is None:
        return units
    at = min(move.at_us + rng.randint(0, 10) * SLOT_US, _window_us(space) - SLOT_US)
    return units + [[FaultStep(at, "reassign", move.target, {"replicas": list(back)})]]


_EDITS = {"revert": _revert, "shift": _shift, "stretch": _stretch, "retarget": _retarget,
          "align": _align, "kinds": _kinds,
          "drop": _drop, "splice": _splice, "copy": _copy}
