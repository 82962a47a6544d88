"""How a broker judges the controller's requests: LeaderAndIsr, StopReplica, UpdateMetadata.

Contract: pure functions of the protocol switches and plain values (ref §1.4, §1.5).
- `control_request_error`: KafkaApis' broker-epoch check (KIP-380) before ReplicaManager's
  controller-epoch check, for a whole request.
- `leader_and_isr_partition`: `ReplicaManager.becomeLeaderOrFollower`'s per-partition decision.
- `stop_replica_epoch_allowed`: `ReplicaManager.stopReplicas`' epoch rule (KIP-570).
- `delete_fence_epoch`, `is_stray`, `update_metadata_part_taken`: the harness's own guards (the
  `leader_and_isr_delete_fence`, `full_leader_and_isr` and `update_metadata_fence` switches).
- `metadata_answer_leader`: the leader a Metadata answer names from the broker's cache.
"""

from __future__ import annotations

from typing import NamedTuple

from sim.kafka import errors as E

MAX_EPOCH = 2**31 - 1


def control_request_error(proto, req_broker_epoch: int, broker_epoch: int,
                          req_controller_epoch: int, controller_epoch: int) -> int:
    """STALE_BROKER_EPOCH for a request addressed to an earlier incarnation of this broker
    (`KafkaApis.isBrokerEpochStale`: -1 means "not sent", 2.2+); UNKNOWN_SERVER_ERROR for one
    carrying a newer epoch than the broker knows, before KAFKA-9839 (its IllegalStateException);
    else STALE_CONTROLLER_EPOCH for a request from an older controller, else NONE."""
    if proto.broker_epoch_check and req_broker_epoch not in (-1, broker_epoch):
        if req_broker_epoch < broker_epoch:
            return E.STALE_BROKER_EPOCH
        if not proto.newer_broker_epoch_accepted:
            return E.UNKNOWN_SERVER_ERROR
    if req_controller_epoch < controller_epoch:
        return E.STALE_CONTROLLER_EPOCH
    return E.NONE


class LeaderAndIsrDecision(NamedTuple):
    """What a broker does with one partition of a LeaderAndIsr: `become` leader or follower
    (after resetting its epochs when `reset_epochs`), or answer `error`."""
    error: int
    become: bool = False
    reset_epochs: bool = False


BECOME = LeaderAndIsrDecision(E.NONE, True)
STALE = LeaderAndIsrDecision(E.STALE_CONTROLLER_EPOCH)
NOT_ASSIGNED = LeaderAndIsrDecision(E.UNKNOWN_TOPIC_OR_PARTITION)
OTHER_TOPIC_ID = LeaderAndIsrDecision(E.INCONSISTENT_TOPIC_ID)


def leader_and_isr_partition(proto, hosted: bool, same_topic_id: bool, local_epoch: int,
                             local_partition_epoch: int, leader_epoch: int,
                             partition_epoch: int, assigned_here: bool) -> LeaderAndIsrDecision:
    """`ReplicaManager.becomeLeaderOrFollower` for one partition state (ref §1.4 steps 2-3):
    a hosted replica of another topic id is INCONSISTENT_TOPIC_ID; a newer leader epoch is
    applied, unless the broker is not among the replicas (UNKNOWN_TOPIC_OR_PARTITION, judged
    only for a newer epoch); with `isr_shrink_bumps_epoch` off (KRaft, KAFKA-15021) a newer
    partition epoch at the same leader epoch is applied too (`makeLeader`/`makeFollower` skip
    only an older one); anything else is STALE_CONTROLLER_EPOCH. `local_epoch` of an unhosted
    replica is -1, or the epoch it was deleted at under `leader_and_isr_delete_fence`."""
    if hosted and not same_topic_id:
        return OTHER_TOPIC_ID
    if leader_epoch > local_epoch:
        return BECOME if assigned_here else NOT_ASSIGNED
    isr_change_only = (not proto.isr_shrink_bumps_epoch and hosted
                       and leader_epoch == local_epoch and partition_epoch > local_partition_epoch)
    if isr_change_only and assigned_here:
        return BECOME
    return STALE


def stop_replica_epoch_allowed(proto, req_epoch: int, local_epoch: int) -> bool:
    """KIP-570 (2.6+): the sentinels NO_EPOCH (-1, a request without the field) and
    EPOCH_DURING_DELETE (-2) bypass the check; a newer epoch is applied, an older one fenced;
    an equal one rejected before KAFKA-13972 (2.6-3.4.0) and accepted after (3.4.1+)."""
    if req_epoch in (E.NO_EPOCH, E.EPOCH_DURING_DELETE) or req_epoch > local_epoch:
        return True
    return req_epoch == local_epoch and proto.stop_replica_equal_epoch == "accept"


def delete_fence_epoch(req_epoch: int, local_epoch: int | None) -> int | None:
    """The epoch a StopReplica(delete) fences under `leader_and_isr_delete_fence`: none for
    -1, every epoch for -2 (the topic is gone), else the request's, or the replica's own
    (`local_epoch`, None when not hosted) when newer."""
    if req_epoch == E.NO_EPOCH:
        return None
    epoch = req_epoch if req_epoch >= 0 else MAX_EPOCH
    return max(epoch, local_epoch) if local_epoch is not None else epoch


def kept_delete_fence(prev: tuple[int, int] | None, topic_id: int,
                      fence_epoch: int) -> tuple[int, int]:
    """The (topic id, epoch) a broker keeps after deleting a replica of `topic_id` at
    `fence_epoch` under `leader_and_isr_delete_fence`, given what it kept before (`prev`).
    The fence only rises for one topic id: a StopReplica(delete) issued earlier but delivered
    later (this network may reorder them) must not lower it, or a LeaderAndIsr the later
    deletion fenced could re-create the replica. A new topic id starts its own fence."""
    if prev is not None and prev[0] == topic_id and prev[1] > fence_epoch:
        return prev
    return (topic_id, fence_epoch)


def is_stray(listed: bool, replica_stamp: tuple | None, request_stamp: tuple) -> bool:
    """A local replica a FULL LeaderAndIsr (KAFKA-15605) does not list is a stray, unless a
    later LeaderAndIsr (stamp: controller epoch, correlation id) brought it online: Kafka's
    controller channel keeps requests in order, this network may not."""
    return not listed and not (replica_stamp is not None and replica_stamp > request_stamp)


def update_metadata_part_taken(proto, last_stamp: tuple | None, stamp: tuple) -> bool:
    """Whether an UpdateMetadata part (a partition's state, or the live-broker list) is taken:
    always (`ZkMetadataCache.updateMetadata` checks nothing), or with `update_metadata_fence`
    only if no UpdateMetadata the controller sent later already set it."""
    return not (proto.update_metadata_fence and last_stamp is not None and last_stamp > stamp)


def metadata_answer_leader(leader: int, alive: tuple) -> int:
    """The leader a broker's Metadata answer names for a partition of its metadata cache: the
    cached one if the cache lists that broker alive, else NO_LEADER (-1), which Kafka answers
    with LEADER_NOT_AVAILABLE and the cached leader epoch (`MetadataCache.getPartitionMetadata`,
    read at 2.6.0; `ZkMetadataCache.getPartitionMetadata` at 3.4.0). Clients take -1 as no
    leader known, as they do a leader missing from the answer's brokers."""
    return leader if leader in alive else E.NO_LEADER
