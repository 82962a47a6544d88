"""The broker's side of KIP-951: the CurrentLeader hint and NodeEndpoints it sends (ref §1.3).

Contract: pure functions of the protocol switches and plain values.
"""

from __future__ import annotations

from sim.kafka import errors as E

_HINTED = (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)
_HINTED_PRODUCE = (E.NOT_LEADER_OR_FOLLOWER,)


def current_leader_hint(proto, err: int, produce: bool, hosted: tuple | None,
                        cached: tuple | None) -> tuple | None:
    """The (leader, leader_epoch) a broker puts in an error answer's CurrentLeader
    (`KafkaApis.getCurrentLeader`), or None for no field: from its hosted replica (`hosted`),
    else its metadata cache (`cached`), else (-1, -1). Fetch carries it with
    NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH; Produce upstream only with
    NOT_LEADER_OR_FOLLOWER, and also with FENCED_LEADER_EPOCH under KIP-359's produce epoch
    check (the only way Produce can return it)."""
    hinted = _HINTED_PRODUCE if produce and not proto.produce_epoch_check else _HINTED
    if proto.leader_discovery != "kip951" or err not in hinted:
        return None
    if hosted is not None:
        return hosted
    return cached if cached is not None else (-1, -1)


def node_endpoints(hints, alive_brokers: tuple) -> tuple:
    """NodeEndpoints: the hinted leaders the broker knows to be alive; a leader it does not
    know is left out (`getAliveBrokerNode` may be absent)."""
    return tuple(sorted({h[0] for h in hints if h and h[0] in alive_brokers}))
