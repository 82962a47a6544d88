"""Network cuts: isolate a node, partition the network, block a link, heal, reset connections.

Contract: `ACTIONS` holds `isolate`, `partition`, `block`, `heal` and `reset_connections` as
`FaultAction`s (see `sim.kafka.faults.action`); `CUT_ACTIONS` are the ones a named `heal`
ends. A cut and its heal may share a `cut` name so the heal ends that cut only.
"""

from __future__ import annotations

from sim.kafka.faults.action import (
    CUT,
    OPTIONAL,
    REQUIRED,
    FaultAction,
    node,
    pair,
    step,
    target_words,
)

CUT_ACTIONS = ("isolate", "partition", "block", "cut_from_quorum", "split_quorum")  # the last two: KRaft (faults/kraft.py)


def _groups(value, key, checks):
    groups = checks.list(value, key)
    if len(groups) < 2:
        checks.fail(key, "a partition needs at least two groups", 'write [["b1"], ["b2", "b3"]]')
    seen: set[str] = set()
    for i, group in enumerate(groups):
        for j, name in enumerate(checks.list(group, f"{key}[{i}]")):
            checks.link_end(name, f"{key}[{i}][{j}]")
            if name in seen:
                checks.fail(f"{key}[{i}][{j}]", f"'{name}' is in two groups", "list each node once")
            seen.add(name)
    return groups


def _link_end(value, key, checks):
    return checks.link_end(value, key)


def _heal_pairs(undo, opener) -> bool:
    """A named heal undoes the cut of its name only (sim.core.network.Network.heal)."""
    return "cut" not in undo.params or undo.params["cut"] == opener.params.get("cut")


def _draw_isolate(pick, space, start):
    targets = space.brokers + ("controller",) + space.roles() + space.controllers
    target = pick.one(targets + space.producers + space.consumers)
    return pair(start, "isolate", target, space.undo_at(start, pick.duration_ms()), "heal")


def _draw_block(pick, space, start):
    """Cut one directed link; controller-to-broker links (where control requests travel) are
    drawn twice as often as the others. Explicit nodes only: a role could resolve to the
    other end of the link when the step fires."""
    src, dst = pick.one(space.links())
    return pair(start, "block", src, space.undo_at(start, pick.duration_ms()), "heal",
                {"dst": dst})


def _draw_reset_connections(pick, space, start):
    """The network resets one connection, or every connection of a node: what is in flight
    on it is lost and both ends hear of it (a written batch whose answer was lost is sent
    again). Explicit nodes only, as for `block`."""
    name = pick.one(space.nodes())
    peer = pick.one((None,) + tuple(n for n in space.nodes() if n != name))
    return [step(start, "reset_connections", name, {} if peer is None else {"peer": peer})]


def _block(cluster, target, params):
    src = params.get("src", target)
    if src == params["dst"]:
        return "same node"
    return cluster.world.network.block(src, params["dst"], params.get("cut"))


def _heal_words(target, params) -> str:
    return (f"heal cut {params['cut']} (its links that no other cut holds)" if "cut" in params
            else "heal every cut link")


def _reset_words(target, params) -> str:
    if params.get("peer"):
        return (f"the network resets the connection between {target_words(target)} and "
                f"{params['peer']}")
    return f"the network resets every connection of {target_words(target)}"


ACTIONS = {a.name: a for a in (
    FaultAction(
        "isolate", "node", params=CUT,
        apply=lambda cluster, t, p: cluster.world.network.isolate(t, p.get("cut")),
        sentence=lambda t, p: f"isolate {target_words(t)} from every other node",
        default_undo="heal", window="cut", draws={"isolate": _draw_isolate}),
    FaultAction(
        "partition", "none", params={"groups": (_groups, REQUIRED), **CUT},
        apply=lambda cluster, t, p: cluster.world.network.partition(p["groups"], p.get("cut")),
        sentence=lambda t, p: "partition the network into " + " | ".join(
            ", ".join(g) for g in p["groups"]),
        default_undo="heal", window="cut"),
    FaultAction(
        "block", "node", params={"dst": (_link_end, REQUIRED), **CUT}, other_end="dst",
        apply=_block, sentence=lambda t, p: f"cut the link {target_words(t)} -> {p['dst']}",
        default_undo="heal", window="cut", draws={"block": _draw_block}),
    # heal ignores its target: a mix's undo steps carry one
    FaultAction(
        "heal", "ignored", params=CUT,
        apply=lambda cluster, t, p: cluster.world.network.heal(p.get("cut")),
        sentence=_heal_words, undoes=CUT_ACTIONS, pairs=_heal_pairs, ends="cut"),
    # the network resets connections (a middlebox's RST, a flapping interface): what is in
    # flight on them is lost and both ends are told
    FaultAction(
        "reset_connections", "node", params={"peer": (node, OPTIONAL)}, other_end="peer",
        apply=lambda cluster, t, p: cluster.world.network.reset_connections(t, p.get("peer")),
        sentence=_reset_words, draws={"reset_connections": _draw_reset_connections}),
)}
