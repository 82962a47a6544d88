"""KRaft's decisions: the Raft quorum's votes, divergence and high watermark, the quorum
controller's partition changes and broker fencing, and how a broker applies a partition record.

Contract: pure functions of plain values, named after the Kafka methods they model (read at
3.3.0-4.1.0: `raft/.../KafkaRaftClient.java`, `LeaderState.java`, `metadata/.../controller/
PartitionChangeBuilder.java`, `ReplicationControlManager.java`, `core/.../cluster/
Partition.scala`); they change nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from sim.kafka import errors as E


def candidate_log_up_to_date(last_epoch: int, last_offset: int, own_last_epoch: int,
                             own_end_offset: int) -> bool:
    """Whether a candidate's log is at least as up to date as the voter's own: a later last
    epoch, or the same one and an end offset at least its own (`OffsetAndEpoch.compareTo`)."""
    return (last_epoch, last_offset) >= (own_last_epoch, own_end_offset)


def grants_vote(state: str, voted_for: str | None, candidate: str, log_up_to_date: bool) -> bool:
    """`QuorumState.canGrantVote` (3.3.0-3.8.0), by the voter's state once a Vote of a higher
    epoch has made it unattached: an unattached voter grants a candidate whose log is up to
    date (`UnattachedState`); one that voted in this epoch grants only the candidate it voted
    for, again (`VotedState`); a follower that knows this epoch's leader, a candidate (its vote
    for itself is not granted), a leader and a resigned leader never do (`FollowerState`,
    `CandidateState`, `LeaderState`, `ResignedState`)."""
    if state == "unattached":
        return log_up_to_date
    if state == "voted":
        return voted_for == candidate
    return False


RETRY_BACKOFF_BASE_MS = 100  # `KafkaRaftClient.RETRY_BACKOFF_BASE_MS`


def election_backoff_ms(retries: int, draw, backoff_max_ms: int) -> int:
    """`binaryExponentialElectionBackoffMs` (3.3.0-3.7.0): how long a candidate whose
    election failed (its vote rejected by enough voters, or its election timeout passed) waits
    before standing again, its `retries`-th candidacy (1 for the first): 100 ms times a random
    draw below 2^retries (`draw(n)`: a uniform integer in [0, n)), at most
    quorum.election.backoff.max.ms."""
    return min(RETRY_BACKOFF_BASE_MS * draw(2 << min(20, retries - 1)), backoff_max_ms)


def vote_rejected(granted: int, unrecorded: int, majority: int) -> bool:
    """`CandidateState.isVoteRejected`: the votes granted and those not yet answered can no
    longer make a majority."""
    return granted + unrecorded < majority


def vote_request_error(candidate_epoch: int, last_epoch: int, last_offset: int,
                       epoch: int) -> int:
    """`handleVoteRequest`'s checks, in order (3.3.0-3.7.0): INVALID_REQUEST for a negative
    end offset or last epoch, or a last epoch not below the candidate's epoch, before any epoch
    is taken from it; FENCED_LEADER_EPOCH for an epoch older than the voter's
    (`validateVoterOnlyRequest`); else NONE."""
    if last_offset < 0 or last_epoch < 0 or last_epoch >= candidate_epoch:
        return E.INVALID_REQUEST
    return E.FENCED_LEADER_EPOCH if candidate_epoch < epoch else E.NONE


def leader_only_error(request_epoch: int, epoch: int, is_leader: bool) -> int:
    """`KafkaRaftClient.validateLeaderOnlyRequest` (3.3.0-3.8.0), what a voter answers a Fetch
    of the metadata log by its epoch: FENCED_LEADER_EPOCH for an older epoch than its own,
    UNKNOWN_LEADER_EPOCH for a newer one (the receiver does not take the epoch from a Fetch),
    NOT_LEADER_OR_FOLLOWER in its own epoch when it does not lead; NONE for its leader."""
    if request_epoch < epoch:
        return E.FENCED_LEADER_EPOCH
    if request_epoch > epoch:
        return E.UNKNOWN_LEADER_EPOCH
    return E.NONE if is_leader else E.NOT_LEADER_OR_FOLLOWER


def high_watermark(voter_end_offsets: list[int], current_hw: int, epoch_start_offset: int) -> int:
    """`LeaderState.maybeUpdateHighWatermark`: the offset a majority of voters (the leader
    among them) has reached, once that passes the start of the leader's own epoch (a leader
    never commits an earlier epoch's records by counting alone); never lower than before."""
    ends = sorted(voter_end_offsets, reverse=True)
    majority = ends[len(ends) // 2]
    if majority <= epoch_start_offset or majority <= current_hw:
        return current_hw
    return majority


def diverging_end_offset(entries_epochs: list[int], last_fetched_epoch: int,
                         fetch_offset: int) -> tuple[int, int] | None:
    """`KafkaRaftClient.validateFetchOffsetAndEpoch`: where a fetcher's log diverges from the
    leader's whose records have the epochs `entries_epochs` (by offset). None when the
    fetcher's (fetch_offset, last_fetched_epoch) is on the leader's log; else (epoch, end
    offset): the leader's largest epoch at or below `last_fetched_epoch` and that epoch's end
    offset, which the fetcher truncates to."""
    if fetch_offset == 0:
        return None
    below = [i for i, e in enumerate(entries_epochs) if e <= last_fetched_epoch]
    epoch = entries_epochs[below[-1]] if below else 0
    end = below[-1] + 1 if below else 0
    if epoch == last_fetched_epoch and end >= fetch_offset:
        return None
    return epoch, min(end, fetch_offset)


class PartitionChange(NamedTuple):
    """A partition's state after a change (`PartitionChangeRecord` applied)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple


def partition_change(proto, leader: int, leader_epoch: int, partition_epoch: int, isr: tuple,
                     replicas: tuple, usable: tuple, target_isr: tuple | None = None,
                     unclean: bool = False) -> PartitionChange | None:
    """`PartitionChangeBuilder.build` (3.3.0-3.7.0, without ELR): the partition with ISR
    `target_isr` (default: the ISR as it is; the builder does not filter it, so a caller that
    takes fenced or shutting-down brokers out passes the ISR without them, as
    `generateLeaderAndIsrUpdates` does) and a new leader if the current one is not a valid one
    (`electAnyLeader`: in the target ISR and `usable`, i.e. unfenced and not shutting down,
    `isAcceptableLeader`): the first valid replica in assignment order; with `unclean`, any
    usable replica, which leads an ISR of itself; else none, -1, an empty ISR keeping its
    last member. The leader epoch moves with a new leader, and on an ISR shrink while
    `kraft_isr_shrink_bumps_epoch` (`triggerLeaderEpochBumpIfNeeded`; KAFKA-15021 ended it
    from MetadataVersion 3.6); the partition epoch moves with every change. None: no change
    (`changeRecordIsNoOp`)."""
    new_isr = tuple(isr if target_isr is None else target_isr)
    new_leader = leader
    if leader not in usable or leader not in new_isr:
        clean = [r for r in replicas if r in new_isr and r in usable]
        dirty = [r for r in replicas if r in usable] if unclean else []
        new_leader = (clean or dirty or [E.NO_LEADER])[0]
        if new_leader != E.NO_LEADER and new_leader not in new_isr:
            new_isr = (new_leader,)
    if not new_isr:
        new_isr = tuple(r for r in isr if r == leader)[:1] or isr[-1:]  # the last ISR stays
    if new_leader == leader and new_isr == isr:
        return None
    shrunk = any(r not in new_isr for r in isr)
    bump = new_leader != leader or (shrunk and proto.kraft_isr_shrink_bumps_epoch)
    return PartitionChange(new_leader, leader_epoch + 1 if bump else leader_epoch,
                           partition_epoch + 1, new_isr)


class AssignmentChange(NamedTuple):
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    replicas: tuple
    adding: tuple
    removing: tuple


def reassignment_target(current: tuple, target: tuple) -> tuple[tuple, tuple, tuple]:
    """`PartitionReassignmentReplicas(current, target)`: the replicas while it runs (the
    target's, then the ones it removes), the replicas it adds and those it removes (each in
    id order)."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, adding, removing


def completed_reassignment(replicas: tuple, adding: tuple, removing: tuple,
                           isr: tuple) -> tuple[tuple, tuple] | None:
    """`PartitionReassignmentReplicas.maybeCompleteReassignment`: once every replica being
    added is in the ISR, the replicas and ISR without the ones being removed; None while it
    cannot complete (nothing in progress, a replica still to catch up, or an ISR or replica
    set that would be empty)."""
    if not adding and not removing:
        return None
    new_isr = tuple(r for r in isr if r not in removing)
    new_replicas = tuple(r for r in replicas if r not in removing)
    if not new_isr or not new_replicas or any(r not in new_isr for r in adding):
        return None
    return new_replicas, new_isr


def reverted_reassignment(replicas: tuple, adding: tuple,
                          isr: tuple) -> tuple[tuple, tuple, bool]:
    """`PartitionReassignmentRevert`: the original replicas (without the ones being added), the
    ISR without them, and whether that needs an unclean election (no ISR member left: the
    first original replica is put in)."""
    original = tuple(r for r in replicas if r not in adding)
    kept = tuple(r for r in isr if r not in adding)
    return (original, kept, False) if kept else (original, original[:1], True)


def assignment_change(proto, leader: int, leader_epoch: int, partition_epoch: int, isr: tuple,
                      replicas: tuple, usable: tuple, target_isr: tuple,
                      target_replicas: tuple, adding: tuple, removing: tuple,
                      unclean: bool = False,
                      moving: tuple = ((), ())) -> AssignmentChange | None:
    """`PartitionChangeBuilder.build` with a target assignment: the reassignment completes if
    it can (`completed_reassignment`), a leader is elected from the target replicas as
    `partition_change` does, and the leader epoch also moves when a replica leaves the
    assignment (`triggerLeaderEpochBumpIfNeeded`: "Reassignment"). `moving` is the
    (adding, removing) the partition has now. None: no change (`changeRecordIsNoOp`)."""
    done = completed_reassignment(target_replicas, adding, removing, target_isr)
    if done is not None:
        target_replicas, target_isr = done
        adding = removing = ()
    change = partition_change(proto, leader, leader_epoch, partition_epoch, isr,
                              target_replicas, usable, target_isr, unclean)
    moved = target_replicas != replicas or (adding, removing) != moving
    if change is None and not moved:
        return None
    if change is None:
        change = PartitionChange(leader, leader_epoch, partition_epoch + 1, isr)
    bump = change.leader_epoch == leader_epoch and any(r not in target_replicas for r in replicas)
    return AssignmentChange(change.leader, change.leader_epoch + (1 if bump else 0),
                            change.partition_epoch, change.isr, tuple(target_replicas),
                            tuple(adding), tuple(removing))


def alter_partition_error(proto, active: bool, lookup: int, leader: int, leader_epoch: int,
                          partition_epoch: int, req_broker: int, req_leader_epoch: int,
                          req_partition_epoch: int, req_isr: tuple, eligible: tuple,
                          replicas: tuple = (), registered: dict | None = None,
                          req_broker_epoch: int = -1, isr_epochs: tuple = ()) -> int:
    """`ReplicationControlManager.alterPartition` / `validateAlterPartitionData`, in its order
    (read at 3.3.0-3.7.0): NOT_CONTROLLER off the active controller; STALE_BROKER_EPOCH, for the
    whole request, when the sender is not registered or its registration has another epoch
    than the request's BrokerEpoch (`ClusterControlManager.checkBrokerEpoch`; checked only
    given the `registered` epochs, broker -> epoch); the partition lookup's error (`lookup`,
    `alter_partition_topic_error`: UNKNOWN_TOPIC_ID or UNKNOWN_TOPIC_OR_PARTITION);
    NOT_CONTROLLER for a leader or partition epoch above the controller's (the sender likely
    knows a newer controller); FENCED_LEADER_EPOCH for an older leader epoch; INVALID_REQUEST
    from a broker that is not the leader; INVALID_UPDATE_VERSION for an older partition epoch;
    INVALID_REQUEST for an ISR that names a broker twice or one that is no replica
    (`Replicas.validateIsr`) or leaves the leader out; and with KIP-841 INELIGIBLE_REPLICA for
    an ISR naming a broker that is fenced or shutting down (not in `eligible`), or, with
    KIP-903 (`kraft_isr_broker_epoch_check`, 3.5), one whose epoch in `isr_epochs` (the
    request's `NewIsrWithEpochs`) is neither -1 nor the epoch it is registered with
    (`ineligibleReplicasForIsr`: a Fetch from a previous incarnation)."""
    if not active:
        return E.NOT_CONTROLLER
    if registered is not None and registered.get(req_broker) != req_broker_epoch:
        return E.STALE_BROKER_EPOCH
    if lookup != E.NONE:
        return lookup
    if req_leader_epoch > leader_epoch or req_partition_epoch > partition_epoch:
        return E.NOT_CONTROLLER
    if req_leader_epoch < leader_epoch:
        return E.FENCED_LEADER_EPOCH
    if req_broker != leader:
        return E.INVALID_REQUEST
    if req_partition_epoch < partition_epoch:
        return E.INVALID_UPDATE_VERSION
    if len(set(req_isr)) != len(req_isr) or any(r not in replicas for r in req_isr) \
            or leader not in req_isr:
        return E.INVALID_REQUEST
    if proto.ineligible_replica_check and any(r not in eligible for r in req_isr):
        return E.INELIGIBLE_REPLICA
    if stale_isr_epochs(proto, req_isr, isr_epochs, registered):
        return E.INELIGIBLE_REPLICA
    return E.NONE


def stale_isr_epochs(proto, isr: tuple, isr_epochs: tuple, registered: dict | None) -> tuple:
    """The ISR members an AlterPartition names with a broker epoch other than their
    registration's (KIP-903, 3.5: `ineligibleReplicasForIsr`, "broker epoch mismatch"); -1
    is not checked, and neither is anything without `kraft_isr_broker_epoch_check` or the
    request's epochs."""
    if not (proto.kraft_isr_broker_epoch_check and isr_epochs and registered is not None):
        return ()
    return tuple(r for r, epoch in zip(isr, isr_epochs)
                 if epoch != -1 and registered.get(r, epoch) != epoch)


def duplicate_registration(registered: bool, same_incarnation: bool, session_valid: bool) -> bool:
    """`ClusterControlManager.registerBroker` (3.3.0-3.9.0-rc3): a registration from another
    incarnation (a restarted process) of a broker whose registered incarnation still has a
    valid session (unfenced, heard from within broker.session.timeout.ms:
    `BrokerHeartbeatManager.hasValidSession`) is refused DUPLICATE_BROKER_REGISTRATION; the
    broker tries again until that session expires."""
    return registered and not same_incarnation and session_valid


def broker_takes_partition(local_leader_epoch: int, local_partition_epoch: int,
                           leader_epoch: int, partition_epoch: int) -> bool:
    """`Partition.makeLeader` / `makeFollower` as `ReplicaManager.applyDelta` calls them on a
    KRaft broker: a partition record is taken unless the replica already has a newer partition
    epoch; an equal one is taken (KAFKA-13790, 3.3), as a record may repeat the state the
    broker has (a restart replays the log). A newer leader epoch always carries a newer
    partition epoch, so no leader-epoch check is needed beyond it."""
    if local_partition_epoch < 0:
        return True
    return partition_epoch >= local_partition_epoch and leader_epoch >= local_leader_epoch


def skips_follower_delta(proto, shutting_down: bool, leads: bool, led: bool) -> bool:
    """Whether a KRaft broker leaves a partition's new state unapplied: before KAFKA-14296's fix
    (3.3.0-3.3.1, `kraft_shutdown_applies_deltas` off) `applyLocalFollowersDelta` skips every
    partition that makes it a follower once its shutdown has begun (`isShuttingDown`, set as
    `BrokerServer.shutdown` starts, before the controlled shutdown), so a leader the
    controller moved away stays leader at its old epoch until it stops. A state that makes it
    leader (`applyLocalLeadersDelta`) is applied either way. (`led`: whether it leads the
    partition now, which Kafka's rule does not read.)"""
    return shutting_down and not leads and not proto.kraft_shutdown_applies_deltas


def stray_logs(broker_id: int, logs: dict, parts: dict) -> list[str]:
    """`LogManager.findStrayReplicas`: the partitions of the logs held here (`logs`: tp ->
    topic id) that the image (`parts`: tp -> PartitionState) does not place here, because
    their topic id is gone or the partition's replicas leave this broker out."""
    stray = []
    for tp in sorted(logs):
        st = parts.get(tp)
        if st is None or st.topic_id != logs[tp] or broker_id not in st.replicas:
            stray.append(tp)
    return stray


def replica_made_before_strays_go(proto, first_publish: bool) -> bool:
    """Whether a broker's first metadata publish makes its replicas while its stray logs are
    still there: up to 3.6 (`BrokerMetadataPublisher.onMetadataUpdate` calls
    `replicaManager.applyDelta` and only then `finishInitializingReplicaManager`, which
    deletes them through `ReplicaManager.deleteStrayReplicas`); from 3.7 (KAFKA-14616) they go
    first. A replica made over another topic id's log dir fails
    (`LogManager.getOrCreateLog`: InconsistentTopicIdException), and the deletion after it
    stops the partition (`stopPartitions`) as well as deleting the old log."""
    return first_publish and not proto.kraft_strays_deleted_first


def raft_resigns(proto, voters_heard: int, majority: int) -> bool:
    """Check-quorum (KAFKA-15489, 3.7: `KafkaRaftClient.pollLeader` resigns once
    `LeaderState.timeUntilCheckQuorumExpires` is 0): a leader that has heard a Fetch from
    fewer than a majority of the voters (itself included) within the check-quorum window gives
    up its epoch. Before 3.7 (`kraft_check_quorum` off) it never does."""
    return proto.kraft_check_quorum and voters_heard < majority


def quorum_fetch_answered_now(proto, fetcher_hw: int | None, leader_hw: int) -> bool:
    """Whether the quorum leader answers a Fetch that finds no new records at once rather than
    parking it: from 4.1 (KIP-1166, `kraft_fetch_completes_on_hw`) when the high watermark
    the Fetch carries is below the leader's (`KafkaRaftClient.handleFetchRequest`, KAFKA-14145;
    a Fetch without the field, `fetcher_hw` None, never is); before, never
    (3.3.0-3.9.0 answer only a Fetch with records, an error or a divergence)."""
    return proto.kraft_fetch_completes_on_hw and fetcher_hw is not None \
        and fetcher_hw < leader_hw


def hw_move_answers_parked(proto) -> bool:
    """Whether a move of the quorum leader's high watermark answers its parked Fetches: from
    4.1 (KIP-1166: `onUpdateLeaderHighWatermark` completes the fetch purgatory); before, only
    the log's end growing does (`updateLeaderEndOffsetAndTimestamp`, 3.3.0-3.9.0), or the
    Fetch's wait ending."""
    return proto.kraft_fetch_completes_on_hw


def answer_offset(written_end: int, log_end: int) -> int:
    """The metadata offset whose commit lets the active controller answer a request that wrote
    records (or read its state): the last offset it has written, lingering ones included
    (`QuorumController.ControllerWriteEvent` completes once `lastCommittedOffset` reaches its
    result's offset, the end of what was scheduled up to it). `log_end` is the end of what
    the quorum leader's log holds, which does not read here; a records' linger is no reason
    to answer sooner."""
    return written_end - 1


FENCED, UNFENCED, CONTROLLED_SHUTDOWN, SHUTDOWN_NOW = (
    "fenced", "unfenced", "controlled_shutdown", "shutdown_now")


def next_broker_state(current: str, want_shutdown: bool, caught_up: bool, has_leaderships: bool,
                      shutdown_offset: int, lowest_active: int) -> str:
    """`BrokerHeartbeatManager.calculateNextBrokerState` (3.3.0-3.8.0, unchanged): the state a
    heartbeat moves its broker to from `current` (FENCED, UNFENCED or CONTROLLED_SHUTDOWN,
    `currentBrokerState`). A fenced broker asking to shut down may at once (SHUTDOWN_NOW), and
    one caught up with its own registration (`caught_up`: `currentMetadataOffset >=
    registerBrokerRecordOffset`) is unfenced; an unfenced one asking to shut down enters
    CONTROLLED_SHUTDOWN if it leads a partition, else may stop at once, whatever any other
    broker has applied; one in CONTROLLED_SHUTDOWN may stop once it leads nothing and every
    active broker has applied the log to its `controlledShutdownOffset` (`shutdown_offset <=
    lowest_active`). The model's brokers never ask to be fenced (`wantFence`: a broker not yet
    caught up, which `caught_up` stands for)."""
    if current == FENCED:
        return SHUTDOWN_NOW if want_shutdown else UNFENCED if caught_up else FENCED
    if current == UNFENCED:
        if not want_shutdown:
            return UNFENCED
        return CONTROLLED_SHUTDOWN if has_leaderships else SHUTDOWN_NOW
    if current == CONTROLLED_SHUTDOWN and (has_leaderships or shutdown_offset > lowest_active):
        return CONTROLLED_SHUTDOWN
    return SHUTDOWN_NOW


def publishable_metadata(log_tail: tuple, high_watermark: int) -> int:
    """How many records at the head of a broker's unapplied metadata log (`(offset, epoch,
    record)`, in log order) it may publish: those below the high watermark. The leader sends
    observers uncommitted records too (`KafkaRaftClient.handleFetchRequest` reads to the log
    end) and the broker's raft client appends them to its own log (`appendAsFollower`), but
    hands its listeners only what is committed (`updateListenersProgress` reads up to the
    high watermark, 3.7.0); a divergence the next leader reports truncates the rest
    (`truncateToEndOffset`)."""
    return sum(1 for entry in log_tail if entry[0] < high_watermark)
