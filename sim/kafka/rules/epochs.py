"""The leader-epoch checks every partition-level request goes through (ref §1.1).

Contract: pure functions of plain values returning a Kafka error code. `check_current_leader_epoch`
is `Partition.checkCurrentLeaderEpoch`: an absent epoch (< 0) skips the check, a local epoch
newer than the request's is FENCED_LEADER_EPOCH, an older one UNKNOWN_LEADER_EPOCH.
`get_local_log` is `Partition.getLocalLog`: the epoch check first, then leadership when the
request needs the leader. The Produce and Fetch variants select the check by protocol switch
(KIP-359's produce epoch, KIP-320's fetch epoch). `valid_required_acks` is
`ReplicaManager.isValidRequiredAcks`, asked of a Produce before any of its partitions.
"""

from __future__ import annotations

from sim.kafka import errors as E


def check_current_leader_epoch(local_epoch: int, remote_epoch: int) -> int:
    """`Partition.checkCurrentLeaderEpoch` (2.1+, KIP-320)."""
    if remote_epoch < 0:
        return E.NONE
    if local_epoch > remote_epoch:
        return E.FENCED_LEADER_EPOCH
    if local_epoch < remote_epoch:
        return E.UNKNOWN_LEADER_EPOCH
    return E.NONE


def get_local_log(local_epoch: int, is_leader: bool, current_leader_epoch: int,
                  require_leader: bool, check_epoch: bool = True) -> int:
    """`Partition.getLocalLog`: the epoch check (when the request carries the field), then
    NOT_LEADER_OR_FOLLOWER for a request that needs the leader on a follower."""
    if check_epoch:
        err = check_current_leader_epoch(local_epoch, current_leader_epoch)
        if err:
            return err
    if require_leader and not is_leader:
        return E.NOT_LEADER_OR_FOLLOWER
    return E.NONE


def valid_required_acks(acks: int) -> bool:
    """`ReplicaManager.isValidRequiredAcks` (0.11.0-3.7.0): acks -1 (all), 0 or 1; any other
    value answers every partition INVALID_REQUIRED_ACKS and appends nothing."""
    return acks in (-1, 0, 1)


def produce_local_log(proto, local_epoch: int, is_leader: bool, current_leader_epoch: int) -> int:
    """A Produce's partition check: leadership, and with `produce_epoch_check` (KIP-359, never
    shipped) the request's CurrentLeaderEpoch first (ref §1.2)."""
    return get_local_log(local_epoch, is_leader, current_leader_epoch, True,
                         proto.produce_epoch_check)


def fetch_local_log(proto, local_epoch: int, is_leader: bool, current_leader_epoch: int,
                    require_leader: bool = True) -> int:
    """A Fetch's (or OffsetsForLeaderEpoch's) partition check: with `fetch_epoch_check`
    (KIP-320, 2.1+) the CurrentLeaderEpoch, then leadership unless the request may read from a
    follower (`fetch_only_from_leader`)."""
    return get_local_log(local_epoch, is_leader, current_leader_epoch, require_leader,
                         proto.fetch_epoch_check)


def fetch_only_from_leader(proto, replica_id: int, client_metadata: bool) -> bool:
    """`ReplicaManager.fetchMessages`' fetchOnlyFromLeader: a follower's Fetch, and a
    consumer's without ClientMetadata (a Fetch older than v11, KAFKA-9004), read only from the
    leader; with `follower_fetch` (KIP-392, 2.4) a consumer's Fetch carrying it may read from a
    follower."""
    return replica_id >= 0 or not (client_metadata and proto.follower_fetch)
