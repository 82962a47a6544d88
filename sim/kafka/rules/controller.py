"""The controller's rules: the leader epoch of a partition state change, which replicas are
offline after a broker's LeaderAndIsr answer, and the ZooKeeper-mode controller's answers to a
partition of an AlterPartition and to a ControlledShutdown it refuses.

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


def zk_alter_partition_error(proto, broker: int, leader_epoch: int, partition_epoch: int,
                             isr: tuple, current, ineligible: bool) -> tuple[int, bool]:
    """A ZooKeeper-mode controller's answer to one partition of an AlterPartition from leader
    `broker` (the request's leader and partition epochs and ISR), against the partition's
    `current` state (leader, leader_epoch, partition_epoch, isr); `ineligible` when the ISR
    names a broker that is not live or is shutting down. Returns (error, already): already
    when the partition has the asked state, answered with it and not written again.

    With `alter_partition_ahead_not_controller` (KAFKA-14154, 3.3.0;
    `KafkaController.processAlterPartition` at 3.3.0 and 3.7.0): NOT_CONTROLLER when the
    request's partition or leader epoch is ahead of the controller's (it is likely a zombie),
    FENCED_LEADER_EPOCH when its leader epoch is behind, the current state when it matches
    (`equalsAllowStalePartitionEpoch`), INVALID_UPDATE_VERSION for an older partition epoch,
    then KIP-841's INELIGIBLE_REPLICA (`ineligible_replica_check`). Before (2.7.0-3.2.0,
    `processAlterIsr`/`processAlterPartition`): FENCED_LEADER_EPOCH only for a lower leader
    epoch, the current state when leader, leader epoch and ISR match (`equalsIgnoreZk`),
    and otherwise a ZooKeeper write conditional on the request's partition epoch (its zkVersion),
    which a different one fails with INVALID_UPDATE_VERSION, higher or lower. (A request whose
    leader epoch is ahead at the current partition epoch, which no leader can send, is
    written there with the controller's leader epoch.)"""
    if proto.alter_partition_ahead_not_controller:
        if partition_epoch > current.partition_epoch or leader_epoch > current.leader_epoch:
            return E.NOT_CONTROLLER, False
    if leader_epoch < current.leader_epoch:
        return E.FENCED_LEADER_EPOCH, False
    if current.leader == broker and leader_epoch == current.leader_epoch and isr == current.isr:
        return E.NONE, True
    if partition_epoch != current.partition_epoch:
        return E.INVALID_UPDATE_VERSION, False
    if proto.ineligible_replica_check and ineligible:
        return E.INELIGIBLE_REPLICA, False
    return E.NONE, False


def startup_update_metadata(proto, live: tuple, started: tuple) -> tuple[tuple, tuple]:
    """`onBrokerStartup`'s UpdateMetadata, as (brokers sent no partition state, brokers sent
    every partition's), each in id order: with `startup_metadata_to_new_brokers_only`
    (KAFKA-7537, 2.2; read at 2.2.0 and 3.7.0) the brokers already live get only the new
    list of live brokers and the started ones everything; before (read at 0.10.2.0-2.1.0,
    `sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds)`, whose empty partition set
    meant all), every live broker got every partition's state."""
    if not proto.startup_metadata_to_new_brokers_only:
        return (), tuple(sorted(live))
    return tuple(sorted(b for b in live if b not in started)), tuple(sorted(started))


def offline_update_metadata(proto, leaderless: bool, offline_replicas: bool,
                            elected: bool) -> bool:
    """Whether `onReplicasBecomeOffline` ends with an UpdateMetadata of no partition to every
    live broker, telling them which brokers are gone. With `failed_broker_always_announced`
    (KAFKA-13225, 3.1; read at 3.1.0 and 3.7.0): when no replica went offline (`offline_replicas`
    false: the brokers hosted nothing, or only topics being deleted) and no election succeeded
    (`elected`), the one case in which no other UpdateMetadata follows. Before (read at 1.1.0,
    2.0.0 and 2.4.0): only when no partition was without an online leader as it began
    (`leaderless` false)."""
    if proto.failed_broker_always_announced:
        return not offline_replicas and not elected
    return not leaderless


def zk_controlled_shutdown_error(active: bool, broker_epoch: int, known_epoch: int | None) -> int:
    """The error `KafkaController.doControlledShutdown` (2.2.0, 3.7.0) throws before it acts,
    as the ControlledShutdown answer carries it (`Errors.forException`), or NONE: NOT_CONTROLLER
    when this controller is not active; for a request carrying a broker epoch (v2, KIP-380; -1
    means "not carried"), UNKNOWN_SERVER_ERROR when the broker is not live (the epoch lookup,
    `liveBrokerIdAndEpochs(id)`, throws NoSuchElementException) and STALE_BROKER_EPOCH when the
    epoch is older than the registration the controller holds (`known_epoch`, None when not
    live); then BROKER_NOT_AVAILABLE when the broker is not live or shutting down."""
    if not active:
        return E.NOT_CONTROLLER
    if broker_epoch != E.NO_EPOCH:
        if known_epoch is None:
            return E.UNKNOWN_SERVER_ERROR
        if broker_epoch < known_epoch:
            return E.STALE_BROKER_EPOCH
    return E.BROKER_NOT_AVAILABLE if known_epoch is None else E.NONE


def isr_removal(leader: int, isr: tuple, broker: int) -> tuple[int, tuple] | None:
    """`ReplicaStateMachine.doRemoveReplicasFromIsr` for one partition (read at 2.0.0, 2.4.0
    and 3.7.0): the (leader, ISR) it writes as `broker`'s replica goes `OfflineReplica`, or
    None when the ISR lacks the replica (nothing written). Leaderless if it led
    (`LeaderAndIsr.NoLeader`); without it unless it is the ISR's last member (the ISR is
    never written empty)."""
    if broker not in isr:
        return None
    return (E.NO_LEADER if leader == broker else leader,
            isr if len(isr) == 1 else tuple(r for r in isr if r != broker))
