"""The controller's rules: the leader epoch of a partition state change, and which replicas
are offline after a broker's LeaderAndIsr answer.

Contract: pure functions of plain values (ref §1.4 table, ZK column).
"""

from __future__ import annotations

from sim.kafka import errors as E


def bumps_leader_epoch(bump_epoch: bool, state_written: bool, reason: str) -> bool:
    """A partition state the controller writes takes a new leader epoch when the change asks
    for one (an election, a new ISR in ZK mode, a reassignment step); an assignment-only
    change writes no partition state and bumps nothing."""
    return bump_epoch and state_written


def offline_replicas_after_leader_and_isr(previous: frozenset, errors: dict) -> tuple:
    """`KafkaController.processLeaderAndIsrResponseReceived` (2.6.0, 3.7.0, ZooKeeper mode):
    the partitions whose replica on the answering broker is in an offline log directory, from
    a LeaderAndIsr response's per-partition `errors` (tp -> error code, one per partition of
    the request). KAFKA_STORAGE_ERROR marks a replica offline, NONE online again, any other
    error leaves it as it was. Returns (the broker's offline partitions, those newly offline),
    both frozensets; only the new ones start `onReplicasBecomeOffline`."""
    online = {tp for tp, err in errors.items() if err == E.NONE}
    offline = {tp for tp, err in errors.items() if err == E.KAFKA_STORAGE_ERROR}
    current = frozenset((set(previous) - online) | offline)
    return current, frozenset(current - previous)
