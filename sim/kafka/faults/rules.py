"""Network rules: delay, reorder, hold, drop or duplicate messages of a kind; clear the rules.

Contract: `ACTIONS` holds `rule` and `clear_rules` as `FaultAction`s (see
`sim.kafka.faults.action`); `MESSAGE_KINDS` are the message kinds a rule may match.
Explore draws a rule as five fault kinds, `rule:<what it does>`.
"""

from __future__ import annotations

from sim.core.faults import LAPSE, FaultStep
from sim.core.network import RULE_ACTIONS
from sim.kafka.faults.action import OPTIONAL, REQUIRED, FaultAction, choice, integer, node, number

MESSAGE_KINDS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica", "Produce", "ProduceResponse",
                 "Fetch", "FetchResponse", "Metadata", "MetadataResponse", "AlterPartition",
                 "AlterPartitionResponse", "LeaderAndIsrResponse", "StopReplicaResponse",
                 "UpdateMetadataResponse", "OffsetsForLeaderEpoch",
                 "OffsetsForLeaderEpochResponse", "ListOffsets", "ListOffsetsResponse",
                 "WireRequest", "WireResponse",  # a real client's frames (docs/real-clients.md)
                 # an idempotent producer's id (`producer_init`) and a KRaft broker's block of
                 # ids from the active controller (`producer_ids`); explore draws neither
                 "InitProducerId", "InitProducerIdResponse", "AllocateProducerIds",
                 "AllocateProducerIdsResponse",
                 # KRaft: a broker's registration and heartbeats, the metadata log's Fetch
                 # (the quorum's own and the brokers'), and the quorum's elections
                 "BrokerRegistration", "BrokerRegistrationResponse", "BrokerHeartbeat",
                 "BrokerHeartbeatResponse", "QuorumFetch", "QuorumFetchResponse", "Vote",
                 "VoteResponse", "BeginQuorumEpoch", "BeginQuorumEpochResponse", "EndQuorumEpoch",
                 "EndQuorumEpochResponse")
DELAYS_MS = (1, 10, 100, 500, 1000, 2000, 3000, 5000)  # the delays explore draws
# Rules pick kinds with these weights: the control requests and the requests that carry an
# epoch matter most to these protocols.
WEIGHTED_KINDS = (("LeaderAndIsr",) * 3 + ("StopReplica",) * 3 + ("UpdateMetadata",) * 3
                  + ("Fetch",) * 3 + ("Produce",) * 2 + ("ProduceResponse",) * 2
                  + ("LeaderAndIsrResponse",) * 2
                  + ("Metadata", "FetchResponse", "ProduceResponse", "MetadataResponse",
                     "LeaderAndIsrResponse", "UpdateMetadataResponse", "StopReplicaResponse",
                     "AlterPartition", "AlterPartitionResponse"))
# Who sends each message kind: (senders, receivers), as roles of explore's FaultSpace.group().
ROUTES = {
    "LeaderAndIsr": ("controllers", "brokers"), "StopReplica": ("controllers", "brokers"),
    "UpdateMetadata": ("controllers", "brokers"), "AlterPartitionResponse": ("controllers", "brokers"),
    "LeaderAndIsrResponse": ("brokers", "controllers"), "StopReplicaResponse": ("brokers", "controllers"),
    "UpdateMetadataResponse": ("brokers", "controllers"), "AlterPartition": ("brokers", "controllers"),
    "Fetch": ("fetchers", "brokers"), "FetchResponse": ("brokers", "fetchers"),
    "Produce": ("producers", "brokers"), "ProduceResponse": ("brokers", "producers"),
    "Metadata": ("clients", "brokers"), "MetadataResponse": ("brokers", "clients"),
    "BrokerHeartbeat": ("brokers", "controllers"),
    "BrokerHeartbeatResponse": ("controllers", "brokers"),
    "QuorumFetch": ("metadata_fetchers", "controllers"),
    "QuorumFetchResponse": ("controllers", "metadata_fetchers"),
    "Vote": ("controllers", "controllers"), "BeginQuorumEpoch": ("controllers", "controllers"),
    "BeginQuorumEpochResponse": ("controllers", "controllers"),
    "EndQuorumEpoch": ("controllers", "controllers"),
    "EndQuorumEpochResponse": ("controllers", "controllers"),
}
# A KRaft run has no LeaderAndIsr, StopReplica or UpdateMetadata: its rules draw these kinds,
# the control plane's (heartbeats that keep a broker unfenced, the metadata log's Fetch) most.
KRAFT_WEIGHTED_KINDS = (("BrokerHeartbeat",) * 3 + ("QuorumFetch",) * 3
                        + ("QuorumFetchResponse",) * 3 + ("Fetch",) * 3 + ("Produce",) * 2
                        + ("ProduceResponse",) * 2 + ("AlterPartition",) * 2
                        + ("BrokerHeartbeatResponse", "AlterPartitionResponse", "FetchResponse",
                           "Metadata", "MetadataResponse", "Vote", "BeginQuorumEpoch"))
CONTROL_KINDS = ("LeaderAndIsr", "StopReplica", "UpdateMetadata")
# The kinds a `reorder` or `hold` may take out of order: the controller's requests, whose races
# KIP-570 and the findings study. A client's or a follower's connection keeps its order both
# ways in Kafka (a broker serves one request of a connection at a time and answers in order,
# and the client matches answers to requests in that order), so reordering those messages is a
# fault no real network makes: the search found false alarms with reordered ProduceResponses
# (docs/selftest.md).
REORDERED_KINDS = tuple(kind for kind in CONTROL_KINDS for _ in range(3))


def _kind(value, key, checks):
    return checks.str(value, key, MESSAGE_KINDS)


def _cross(params, key, checks):
    """Cross-param checks of a network rule: each rule kind's own required params."""
    kind = params["rule"]
    if kind in ("delay", "reorder") and "delay_ms" not in params:
        checks.fail(f"{key}.delay_ms", f"missing: rule '{kind}' needs delay_ms",
                    "add delay_ms = 100")
    if kind not in ("delay", "reorder") and "delay_ms" in params:
        checks.fail(f"{key}.delay_ms", f"rule '{kind}' does not delay", "remove delay_ms")
    if (kind == "hold") != ("release_kind" in params):
        checks.fail(f"{key}.release_kind", "release_kind is required for hold and only for hold",
                    f"{'add' if kind == 'hold' else 'remove'} release_kind")
    if "src" in params and params.get("dst") == params["src"]:
        checks.fail(f"{key}.dst", f"a rule from {params['src']!r} to itself: a node sends itself "
                    "no message, so it would match nothing", "name another node as dst")


def _draw_rule(action: str):
    """Explore's draw of one `action` rule (delay, hold, reorder, drop, duplicate)."""
    kinds = REORDERED_KINDS if action in ("reorder", "hold") else WEIGHTED_KINDS

    def draw(pick, space, start):
        kind = pick.one(KRAFT_WEIGHTED_KINDS if space.kraft else kinds)
        senders, receivers = (space.group(g) for g in ROUTES[kind])
        params = {"rule": action, "kind": kind}
        src = pick.one((None,) + senders)
        dst = pick.one((None,) + receivers)
        if src is not None:
            params["src"] = src
        if dst is not None:
            params["dst"] = dst
        if action in ("delay", "reorder"):
            params["delay_ms"] = pick.one(DELAYS_MS)
        count = pick.one((None, 1, 2, 3))
        if count is not None:
            params["count"] = count
        params["duration_ms"] = space.undo_at(start, pick.duration_ms()) - start
        if action == "hold":
            params["release_kind"] = pick.one(WEIGHTED_KINDS)
        if src is not None and src == dst:
            # a node sends itself nothing, so the rule would match nothing: no step (drawn in
            # full first, so the draws that follow, and the search, stay the same)
            return []
        return [FaultStep(start * 1000, "rule", None, params)]
    return draw


def _apply_rule(cluster, target, params):
    kw = {k: params[k] for k in ("kind", "src", "dst", "count", "release_kind") if k in params}
    if target is not None and "dst" not in kw:
        kw["dst"] = target
    if "delay_ms" in params:
        kw["delay_us"] = int(params["delay_ms"] * 1000)
    if "duration_ms" in params:
        kw["end_us"] = cluster.world.kernel.now_us + int(params["duration_ms"] * 1000)
    return f"rule {cluster.world.network.add_rule(params['rule'], **kw).rid}"


def _messages(p: dict) -> str:
    """`StopReplica from c1 to b3`, `every message to b1`..."""
    text = p.get("kind", "every message")
    if "src" in p:
        text += f" from {p['src']}"
    if "dst" in p:
        text += f" to {p['dst']}"
    return text


def describe_rule(p: dict) -> str:
    """A network rule: 'hold StopReplica to b3 until a later LeaderAndIsr (1 message)'."""
    rule, what = p["rule"], _messages(p)
    if rule == "hold":
        text = f"hold {what} until a later {p['release_kind']}"
    elif rule == "delay":
        text = f"delay {what} by {p['delay_ms']:g} ms"
    elif rule == "reorder":
        text = f"reorder {what} (up to {p['delay_ms']:g} ms extra each, no FIFO)"
    elif rule == "drop":
        text = f"drop {what}"
    else:
        text = f"{rule} {what}"
    limits = []
    if "count" in p:
        limits.append(f"{p['count']} message{'s' if p['count'] != 1 else ''}")
    if "duration_ms" in p:
        limits.append(f"for {p['duration_ms'] / 1000:g} s")
    return text + (f" ({', '.join(limits)})" if limits else "")


def _clear_pairs(undo, opener) -> bool:
    kind = undo.params.get("kind")
    return kind is None or kind == opener.params.get("kind")


ACTIONS = {a.name: a for a in (
    # the optional target is the rule's destination when `dst` is not given, so a mix can
    # aim one rule at a randomly drawn node
    FaultAction(
        "rule", "node?", apply=_apply_rule, sentence=lambda t, p: describe_rule(p),
        params={"rule": (choice(RULE_ACTIONS), REQUIRED), "kind": (_kind, OPTIONAL),
                "src": (node, OPTIONAL), "dst": (node, OPTIONAL),
                "delay_ms": (number(lo=0), OPTIONAL), "count": (integer(lo=1), OPTIONAL),
                "duration_ms": (number(above=0), OPTIONAL), "release_kind": (_kind, OPTIONAL)},
        cross=_cross, other_end="src",
        # a rule of a mix with a duration lapses by itself (sim.core.faults.LAPSE), where a
        # clear_rules step would also remove the rules of other mixes and scripted faults
        default_undo=LAPSE, window="rule",
        draws={f"rule:{a}": _draw_rule(a) for a in ("delay", "hold", "reorder", "drop", "duplicate")}),
    # clear_rules ignores its target: a mix's undo steps carry one
    FaultAction(
        "clear_rules", "ignored",
        apply=lambda cluster, t, p: cluster.world.network.clear_rules(p.get("kind")),
        sentence=lambda t, p: (f"clear the network rules for {p['kind']}" if "kind" in p
                               else "clear every network rule (release held messages)"),
        params={"kind": (_kind, OPTIONAL),
                # written by materialise_mix on undo steps: the action whose rules are cleared
                "of": (lambda v, k, c: c.str(v, k, c.actions), OPTIONAL)},
        undoes=("rule",), pairs=_clear_pairs, ends="rule"),
)}
