"""The params of a fault step or mix, checked with the checks its action declares.

Contract: `check_params(action, raw, prefix, names)` returns the params of `action`
(`sim.kafka.faults.ACTIONS`) checked, defaults filled in; `check_not_self` refuses a link
fault whose two ends are one node. `LoaderChecks` is the toolkit an action's param checks
receive (see `sim.kafka.faults.action`): the loader's generic checks, raising `Bad`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from scenarios.tables import (
    NAME_RE,
    Bad,
    Names,
    check_int,
    check_list,
    check_number,
    check_str,
    describe,
    unknown_key,
)
from scenarios.targets import check_link_end, check_node, check_topic_name
from sim.kafka.faults import ACTIONS, OPTIONAL, REQUIRED


class LoaderChecks:
    """What an action's param checks may ask of the scenario being loaded."""

    def __init__(self, names: Names):
        self.names = names
        self.actions = list(ACTIONS)

    int = staticmethod(check_int)
    number = staticmethod(check_number)
    str = staticmethod(check_str)
    list = staticmethod(check_list)
    topic_name = staticmethod(check_topic_name)
    describe = staticmethod(describe)

    def node(self, value: Any, key: str) -> str:
        return check_node(value, key, self.names)

    def link_end(self, value: Any, key: str) -> str:
        return check_link_end(value, key, self.names)

    @staticmethod
    def is_name(value: str) -> bool:
        return NAME_RE.fullmatch(value) is not None

    @staticmethod
    def fail(key: str, problem: str, fix: str) -> NoReturn:
        raise Bad(key, problem, fix)


def check_not_self(action: str, target: str | None, params: dict, prefix: str,
                   target_key: str, blame_target: bool = False) -> None:
    """Refuse a link fault whose two ends are one node (`block` b1 -> b1, `reset_connections`
    of b1 with b1): a node has no link to itself, so the fault would do nothing, silently, as
    [[network.links]] refuses self-links. Roles (leader:t-0) resolve only when the step
    fires. The error names the param, or with `blame_target` the target (a mix's targets
    entry). A rule's target is its dst when it names none; its own check refuses src = dst."""
    other = ACTIONS[action].other_end
    if other is None or other not in params or params[other] != target:
        return
    if action == "rule" and "dst" in params:  # the target is not the rule's destination
        return
    raise Bad(target_key if blame_target else f"{prefix}.{other}",
              f"'{action}' between {target!r} and itself: a node has no link to itself",
              f"name another node as {other if not blame_target else 'target'}")


def check_params(action: str, raw: dict, prefix: str, names: Names,
                 also_valid: tuple = ()) -> dict:
    """The params of `action` checked, defaults filled; unknown names are errors."""
    spec = ACTIONS[action].params
    for name in raw:
        if name not in spec and not (spec or also_valid):
            raise Bad(f"{prefix}.{name}", f"'{action}' takes no params", f"remove {name}")
        if name not in spec:
            raise unknown_key(f"{prefix}.{name}", name, list(spec) + list(also_valid))
    checks = LoaderChecks(names)
    out = {}
    for name, (checker, default) in spec.items():
        if name in raw:
            out[name] = checker(raw[name], f"{prefix}.{name}", checks)
        elif default is REQUIRED:
            raise Bad(f"{prefix}.{name}", f"missing: '{action}' requires {name}",
                      f"add {name} = ...")
        elif default is not OPTIONAL:
            out[name] = default(names) if callable(default) else default
    if ACTIONS[action].cross:
        ACTIONS[action].cross(out, prefix, checks)
    return out
