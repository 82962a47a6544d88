"""Fault targets of a scenario file: nodes, roles, partitions and topics, checked by kind.

Contract: values are read with `scenarios.tables` and errors raised as its `Bad`; nothing here
knows the file. `TARGETS` maps each target kind a fault action names
(`sim.kafka.faults.action.FaultAction.target`) to its checker and whether it is required;
`check_target(action, value, key, names)` checks the target of one step or mix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios.tables import NAME_RE, Bad, Names, check_str, suggest
from sim.kafka.faults import ACTIONS

MAX_TOPIC_NAME = 249  # Topic.MAX_NAME_LENGTH
ROLE_HINT = "or a role: leader:<topic>-<p>, follower:<topic>-<p>"


def check_node(value: Any, key: str, names: Names, also: tuple = ()) -> str:
    """`value` as the name of an existing node (broker, controller or client), or one of
    `also`."""
    check_str(value, key)
    if value not in names.nodes() and value not in also:
        more = "".join(f", or {a}" for a in also)
        raise Bad(key, f"no node '{value}' ({names.summary()}{more})", "name an existing node")
    return value


def check_link_end(value: Any, key: str, names: Names) -> str:
    """`value` as an end of a network link: a node, or "zk", the metadata store's place on
    the network (a node cut from it cannot renew its session, as with ZooKeeper)."""
    return check_node(value, key, names, also=("zk",))


def check_partition(value: Any, key: str, names: Names) -> str:
    """`value` as an existing partition "<topic>-<p>"."""
    check_str(value, key)
    topic, _, index = value.rpartition("-")
    if not topic or not (index.isascii() and index.isdigit()) or index != str(int(index)):
        raise Bad(key, f"'{value}' is not a partition", 'write "<topic>-<p>" with no leading '
                  'zeros, e.g. "t-0"')
    if topic not in names.topics:
        raise Bad(key, f"unknown topic '{topic}'", suggest(topic, sorted(names.topics)))
    if int(index) >= names.topics[topic]:
        raise Bad(key, f"topic '{topic}' has {names.topics[topic]} partition(s), no {index}",
                  f"use a partition 0..{names.topics[topic] - 1}")
    return value


def check_topic(value: Any, key: str, names: Names) -> str:
    """`value` as an existing topic name."""
    check_str(value, key)
    if value not in names.topics:
        raise Bad(key, f"unknown topic '{value}'", suggest(value, sorted(names.topics)))
    return value


def check_topic_name(value, key: str) -> str:
    """A topic name Kafka would accept (`org.apache.kafka.common.internals.Topic.validate`):
    1-249 of letters, digits, '.', '_' and '-', and neither "." nor ".."; raises Bad."""
    if (not NAME_RE.fullmatch(check_str(value, key)) or value in (".", "..")
            or len(value) > MAX_TOPIC_NAME):
        raise Bad(key, f"invalid topic name {value!r}", "use 1-249 letters, digits, '.', '_' "
                  "or '-' (not \".\" or \"..\"), as Kafka does")
    return value


def _check_role_or_node(value: Any, key: str, names: Names, brokers_only: bool) -> str:
    """A node name or role; with `brokers_only`, the node must be (or resolve to) a broker."""
    check_str(value, key)
    role, sep, rest = value.partition(":")
    if sep and role in ("leader", "follower"):
        check_partition(rest, key, names)
        return value
    if value == "controller" and not brokers_only:
        return value
    valid = names.broker_names() if brokers_only else names.nodes()
    if value not in valid:
        known = value in names.nodes() or value == "controller"
        what = "is not a broker" if known else "does not exist"
        raise Bad(key, f"'{value}' {what} ({names.summary()})",
                  f"name an existing broker {ROLE_HINT}" if brokers_only
                  else f"name an existing node {ROLE_HINT.replace(': ', ': controller, ')}")
    return value


def _check_any_target(value: Any, key: str, names: Names) -> str:
    """Anything a target may name; used where the action ignores its target."""
    for check in (check_partition, check_topic):
        try:
            return check(value, key, names)
        except Bad:
            pass
    return _check_role_or_node(value, key, names, brokers_only=False)


TARGETS: dict[str, tuple[Callable | None, bool]] = {
    # kind -> (checker, target required)
    "node": (lambda v, k, n: _check_role_or_node(v, k, n, False), True),
    "broker": (lambda v, k, n: _check_role_or_node(v, k, n, True), True),
    "partition": (check_partition, True),
    "partition?": (check_partition, False),
    "topic": (check_topic, True),
    "partition|topic": (lambda v, k, n: check_topic(v, k, n) if check_str(v, k) in n.topics
                        else check_partition(v, k, n), True),
    "node?": (lambda v, k, n: _check_role_or_node(v, k, n, False), False),
    "ignored": (_check_any_target, False),  # heal/clear_rules: mix undo steps carry a target
    "none": (None, False),
}


def check_target(action: str, value: Any, key: str, names: Names) -> str | None:
    """`value` as the target of `action` (None when absent and allowed)."""
    checker, required = TARGETS[ACTIONS[action].target]
    if value is None:
        if required:
            raise Bad(key, f"'{action}' needs a target ({ACTIONS[action].target})",
                      f"add {key.rpartition('.')[2]} = ... ({names.summary()})")
        return None
    if checker is None:
        raise Bad(key, f"'{action}' takes no target", "remove target")
    return checker(value, key, names)
