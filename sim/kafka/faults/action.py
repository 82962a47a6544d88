"""What a fault action is: one record that holds everything the harness knows about it.

Contract: a `FaultAction` names its target kind and params (with their checks), how it
applies to a running cluster, how it pairs with its undo, how explore draws it, and how
reports word and mark it. Everything here is plain data and small functions, duck-typed on
what callers hand in, so this package imports no actor (reports and the loader read it):
- `apply(cluster, target, params)` acts on a `sim.kafka.cluster.Cluster` and returns an
  outcome for the trace (None when the action did what it says);
- a param checker is `check(value, key, checks)` and returns the value; `checks` is the
  loader's toolkit (`scenarios.params.LoaderChecks`): `int`, `number`, `str`, `list`,
  `node`, `link_end`, `topic_name` (each returns the value or raises the loader's error),
  `fail(key, problem, fix)`, `is_name(value)`, `describe(value)`, `names` (the scenario's
  brokers, nodes, topics) and `actions` (every action name);
- an explore draw is `draw(pick, space, start_ms)` returning the episode's `FaultStep`s;
  `pick` wraps hypothesis' `draw` (`epochsim.explore.picks.Pick`), `space` is explore's
  `FaultSpace`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sim.core.faults import FaultStep

# A param's default: REQUIRED, OPTIONAL (left out when absent), a value, or a function of
# the scenario's names.
REQUIRED, OPTIONAL = object(), object()
Check = Callable  # (value, key, checks) -> value


def any_pair(undo: FaultStep, opener: FaultStep) -> bool:
    """An undo that ends any step of the actions it undoes."""
    return True


@dataclass(frozen=True)
class FaultAction:
    """One fault action of `[[faults]]` and `[[mix]]` (see the module contract)."""

    name: str
    target: str  # a target kind: a key of `scenarios.targets.TARGETS`
    apply: Callable  # (cluster, resolved target, params) -> outcome or None
    sentence: Callable  # (target, params) -> the step in plain words (reports, explore)
    params: dict = field(default_factory=dict)  # name -> (check, REQUIRED | OPTIONAL | default)
    cross: Callable | None = None  # (params, key, checks): checks across params
    other_end: str | None = None  # the param naming the other end of the link it touches
    default_undo: str | None = None  # what undoes a mix's step after its duration_ms
    undoes: tuple = ()  # for an undo: the actions it ends (the shrinker keeps the pair)
    pairs: Callable = any_pair  # (undo step, opener step) -> whether this undo ends it
    undo_after_us: int = 0  # an undo earlier than this after the action finds nothing to undo
    window: str | None = None  # a timeline window it opens: "down", "cut" or "rule"
    ends: str | None = None  # the timeline windows it closes (an undo)
    mark_colour: str | None = None  # the line `epochsim study` draws at it (None: no line)
    draws: dict = field(default_factory=dict)  # explore fault kind -> draw(pick, space, start)


def cut_name(value, key, checks):
    """A cut's name: ties `isolate`, `partition` or `block` steps to the `heal` that ends
    them (and only them)."""
    if not isinstance(value, str) or not checks.is_name(value) or len(value) > 64:
        checks.fail(key, f"{checks.describe(value)} is no cut name",
                    "use up to 64 letters, digits, '.', '_' or '-', e.g. cut = \"a\"")
    return value


CUT = {"cut": (cut_name, OPTIONAL)}


def number(lo=None, hi=None, above=None) -> Check:
    return lambda v, k, c: c.number(v, k, lo, hi, above)


def integer(lo=None, hi=None) -> Check:
    return lambda v, k, c: c.int(v, k, lo, hi)


def choice(choices) -> Check:
    return lambda v, k, c: c.str(v, k, choices)


def node(v, k, c):
    return c.node(v, k)


def same_target(undo: FaultStep, opener: FaultStep) -> bool:
    """An undo that ends the action on its own target only (restart, cancel_reassignment)."""
    return undo.target == opener.target


def target_words(target: str | None) -> str:
    """A target in words: roles read as roles ("the leader of t-0")."""
    if target is None:
        return "every partition"
    if target == "controller":
        return "the active controller"
    role, _, tp = target.partition(":")
    if role == "leader" and tp:
        return f"the leader of {tp}"
    if role == "follower" and tp:
        return f"a follower of {tp}"
    return target


def pair(start_ms: int, action: str, target, undo_ms: int, undo: str,
         params: dict | None = None) -> list[FaultStep]:
    """An explore episode of an action and its undo."""
    return [FaultStep(start_ms * 1000, action, target, params or {}),
            FaultStep(undo_ms * 1000, undo, target)]


def step(start_ms: int, action: str, target=None, params: dict | None = None) -> FaultStep:
    """One explore step at `start_ms`."""
    return FaultStep(start_ms * 1000, action, target, params or {})
