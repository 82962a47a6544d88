"""Leader-side replication decisions: min ISR, the high watermark, ISR expansion and shrink,
and the follower's choice of what its Fetch names.

Contract: pure functions of the protocol switches and plain values (a follower's state is read
through `leo` and `epoch` attributes, never changed). Each cites the Kafka method it follows.
"""

from __future__ import annotations

from sim.kafka import errors as E

# `AlterPartitionManager`: a whole-request error is retried after 50 ms
ALTER_PARTITION_RETRY_MS = 50
# errors after which a leader keeps its ISR change pending until new metadata arrives
# (`Partition.handleAlterPartitionError` at 3.7.0: "we simply give up")
ALTER_PARTITION_GIVE_UP = frozenset({E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_ID,
                                     E.FENCED_LEADER_EPOCH, E.INVALID_UPDATE_VERSION,
                                     E.INVALID_REQUEST, E.NEW_LEADER_ELECTED})


def alter_partition_topic_error(proto, request_topic_id: int, topic_id: int | None,
                                partition_known: bool) -> int:
    """The answer of a controller's lookup of an AlterPartition's partition, NONE when found.
    A request naming its topic by id (`request_topic_id`, KIP-841's v2, read only by a
    controller of `alter_partition_topic_ids`, which knows that version) that the controller
    holds under no topic (`topic_id`: the id it holds for the topic of that name, None for
    none: deleted, or recreated under a new id) is UNKNOWN_TOPIC_ID; one naming its topic,
    or a known topic without that partition, UNKNOWN_TOPIC_OR_PARTITION
    (`ReplicationControlManager.alterPartition`, `requestVersion > 1 ? UNKNOWN_TOPIC_ID`, and
    `KafkaController.processAlterPartition`'s `topicName(topicId)`, 3.3.0-3.7.0)."""
    if proto.alter_partition_topic_ids and request_topic_id:
        if request_topic_id != topic_id:
            return E.UNKNOWN_TOPIC_ID
    elif topic_id is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION
    return E.NONE if partition_known else E.UNKNOWN_TOPIC_OR_PARTITION


def alter_partition_answer(proto, error: int, answer_leader_epoch: int, leader_epoch: int,
                           answer_partition_epoch: int, partition_epoch: int) -> str:
    """What a leader does with the answer to its AlterPartition: `"commit"` the answer's ISR
    and partition epoch, `"reset"` to its last committed ISR (nothing pending, so the next
    Fetch or lag check may propose again), `"pending"` (keep the change pending, proposing
    nothing, until a LeaderAndIsr or metadata record brings the partition's state), or
    `"retry"` (send it again). An answer refusing the whole request never reaches the
    partition (`alter_partition_request_retried`).

    With `isr_change_stays_pending` (KIP-497, 2.7; `Partition.submitAlterPartition`,
    `handleAlterPartitionUpdate` and `handleAlterPartitionError` at 3.7.0): an answer for
    another leader epoch or an older partition epoch is ignored and the change stays pending;
    INELIGIBLE_REPLICA (KIP-841) resets; UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
    INVALID_UPDATE_VERSION, INVALID_REQUEST and NEW_LEADER_ELECTED give up, pending; any other
    error retries. Before 2.7 the leader wrote the ISR to ZooKeeper itself: a write refused
    for a stale version left the ISR as it was and nothing pending (`Partition.updateIsr`,
    "skip updating ISR" at 2.6.0), which the model carries as a reset; a write that succeeded
    is the ISR, whatever version the model's answer carries."""
    stays = proto.isr_change_stays_pending
    if error == E.NONE:
        if answer_leader_epoch != leader_epoch:
            return "pending" if stays else "reset"
        return "pending" if stays and answer_partition_epoch < partition_epoch else "commit"
    if not stays or error == E.INELIGIBLE_REPLICA:
        return "reset"
    return "pending" if error in ALTER_PARTITION_GIVE_UP else "retry"


def alter_partition_requeued(proto, error: int) -> bool:
    """Whether an AlterPartition answer never reaches `AlterPartitionManager` because the
    channel to the controller takes it back: NOT_CONTROLLER, at the top level or for a
    partition (the thread checks the answer's `errorCounts`), closes the connection, forgets
    the controller's address and puts the request back at the head of its queue, for the
    controller the broker learns of next (`BrokerToControllerRequestThread.handleResponse` at
    2.7.0, `NodeToControllerRequestThread.handleResponse` at 3.7.0). Only with that channel
    (`isr_change_stays_pending`, KIP-497, 2.7): before, the leader wrote the ISR itself."""
    return proto.isr_change_stays_pending and error == E.NOT_CONTROLLER


def alter_partition_request_retried(error: int) -> bool:
    """Whether an AlterPartition answer refuses the whole request, so that
    `AlterPartitionManager` keeps its changes queued, whatever became of their partitions,
    and sends them again `ALTER_PARTITION_RETRY_MS` later with the broker epoch it then has:
    STALE_BROKER_EPOCH, the controller not knowing the sender's broker epoch (yet, or any
    more) (read at 2.7.0 and 3.7.0)."""
    return error == E.STALE_BROKER_EPOCH


def alter_partition_broker_epoch(proto, broker_epoch: int) -> int:
    """The BrokerEpoch a leader's AlterPartition carries: the broker epoch it has as it sends
    (`AlterPartitionManager`'s `brokerEpochSupplier`, 2.7.0-3.7.0), which the controller
    checks, STALE_BROKER_EPOCH for the whole request if it is not the registration it knows.
    Before KIP-497 (`isr_change_stays_pending`, 2.7) the leader wrote the ISR to ZooKeeper
    itself, with no broker epoch: the model's stand-in for that write carries -1, which the
    controller does not check."""
    return broker_epoch if proto.isr_change_stays_pending else -1


def zk_alter_partition_epoch_stale(req_broker_epoch: int, live_epoch: int | None) -> bool:
    """A ZooKeeper-mode controller refuses an AlterPartition as a whole, STALE_BROKER_EPOCH,
    when its sender is not a live broker it knows or the request's BrokerEpoch is not the
    live registration's (`KafkaController.processAlterPartition` at 2.7.0, 3.7.0), before it
    looks at any partition. A request carrying -1 (the model's stand-in for a pre-2.7 leader's
    own ZooKeeper write, `alter_partition_broker_epoch`) is not checked."""
    return req_broker_epoch != -1 and live_epoch != req_broker_epoch


def alter_partition_isr_epochs(proto, kraft: bool, isr: tuple, local_id: int,
                               local_epoch: int, fetched: dict) -> tuple:
    """The broker epoch of each member of a proposed ISR, as the leader's AlterPartition v3
    carries them (KIP-903, 3.5: `Partition.addBrokerEpochToIsr` at 3.5.0-3.7.0): its own
    epoch for itself, for a follower the one its last Fetch carried (`fetched`, replica ->
    epoch or None), -1 when none did. Empty (the request carries none) in ZooKeeper mode
    and without `kraft_isr_broker_epoch_check`."""
    if not (kraft and proto.kraft_isr_broker_epoch_check):
        return ()
    return tuple(local_epoch if r == local_id else _or_unknown(fetched.get(r)) for r in isr)


def _or_unknown(epoch: int | None) -> int:
    return -1 if epoch is None else epoch


def effective_min_isr(proto, configured: int, replicas: int) -> int:
    """min.insync.replicas for a partition; with `hw_waits_for_min_isr` (KAFKA-15583, 3.7)
    never more than its replicas (`Partition.effectiveMinIsr`)."""
    if proto.hw_waits_for_min_isr:
        return min(configured, replicas)
    return configured


def maximal_isr(isr: tuple, pending_isr: tuple | None) -> tuple:
    """`Partition.maximalIsr` (KIP-497, read at 3.7.0): the ISR the leader counts for its HW
    while an AlterPartition is in flight. An expansion counts the new member at once
    (`PendingExpandIsr`: isr + the new replica); a shrink counts only once the controller has
    committed it (`PendingShrinkIsr`: the last committed ISR), so a leader never acknowledges
    a write on an ISR the controller did not agree to."""
    if pending_isr is None:
        return isr
    return tuple(sorted(set(isr) | set(pending_isr)))


def maybe_increment_leader_hw(proto, leo: int, hw: int, isr_size: int, min_isr: int,
                              replicas: int, maximal_isr: tuple, followers,
                              now_us: int, lag_max_ms: int, eligible) -> int | None:
    """`Partition.maybeIncrementLeaderHW`: the new HW, or None when it stays. The candidate is
    the least log end over the leader and every follower that holds it back: a member of the
    maximal ISR (KIP-497), or a follower caught up within replica.lag.time.max.ms though
    outside the ISR (`isCaughtUp`, as since 0.10), which with `hw_caught_up_eligible_only`
    (KAFKA-15021, 3.6) counts only while `eligible(replica_id, replica)` (ISR-eligible: alive,
    not fenced or shutting down). A follower whose log end the leader does not know yet (-1,
    not fetched since this broker became leader) holds the HW where it is. With
    `hw_waits_for_min_isr` (KAFKA-15583, 3.7) nothing moves while the ISR is below
    min.insync.replicas. The HW never goes back. `min_isr` is the configured
    min.insync.replicas, `replicas` the assignment's size; `followers` maps each assigned
    replica but the leader to its `Replica` (`leo`, `caught_up_as_of()`): as Kafka iterates
    `remoteReplicasMap`, an ISR member that is not assigned does not count."""
    if proto.hw_waits_for_min_isr and isr_size < effective_min_isr(proto, min_isr, replicas):
        return None
    candidate = leo
    lag_us = lag_max_ms * 1000
    for r, f in followers.items():
        if f.leo >= candidate:
            continue
        if r in maximal_isr or (now_us - f.caught_up_as_of() <= lag_us and (
                not proto.hw_caught_up_eligible_only or eligible(r, f))):
            candidate = f.leo
    return candidate if candidate > hw else None


def follower_joins_isr(proto, in_isr: bool, isr_change_pending: bool, fetch_offset: int,
                       hw: int, epoch_start_offset: int, alive: bool) -> bool:
    """Whether a follower's Fetch makes the leader propose it for the ISR
    (`Partition.maybeExpandIsr`): not already in it, no change in flight, caught up to the HW
    (`isFollowerInSync`), with `isr_epoch_start_check` (KAFKA-7128, 2.1) also to the start of
    the leader's epoch, and with `ineligible_replica_check` (KIP-841) listed alive by the
    metadata cache (`isReplicaIsrEligible`)."""
    return (not in_isr and not isr_change_pending and fetch_offset >= hw
            and (fetch_offset >= epoch_start_offset or not proto.isr_epoch_start_check)
            and (alive or not proto.ineligible_replica_check))


def isr_broker_epoch_eligible(proto, kraft: bool, stored_epoch: int | None,
                              cached_epoch: int | None) -> bool:
    """KIP-903 (3.5, KRaft only: `Partition.isBrokerEpochIsrEligible` at 3.5.0): with
    `kraft_isr_broker_epoch_check`, a follower may join the ISR only if the broker epoch its
    last Fetch carried is the one the metadata cache holds for it (-1: a Fetch too old to
    carry one, accepted), so a Fetch an earlier incarnation sent, delivered late, cannot put
    a restarted broker with an empty disk into the ISR (KAFKA-14139). ZooKeeper mode: no
    check."""
    if not (kraft and proto.kraft_isr_broker_epoch_check):
        return True
    return stored_epoch is not None and cached_epoch is not None and \
        stored_epoch in (-1, cached_epoch)


def stale_follower_fetch(proto, kraft: bool, replica_epoch: int, cached_epoch: int | None) -> bool:
    """KAFKA-15221 (3.7.0, KRaft only, `kraft_stale_fetch_fenced`): a follower's Fetch that
    carries an older broker epoch than the one the leader's metadata cache holds for that
    broker comes from an earlier incarnation (`Replica.updateFetchStateOrThrow` throws
    NotLeaderOrFollowerException); -1 (a Fetch too old to carry one) is never stale."""
    return (kraft and proto.kraft_stale_fetch_fenced and replica_epoch != -1
            and cached_epoch is not None and cached_epoch > replica_epoch)


def is_follower_out_of_sync(proto, known: bool, follower_leo: int, leader_leo: int,
                            caught_up_us: int, now_us: int, lag_max_ms: int) -> bool:
    """`Partition.isFollowerOutOfSync`: not caught up for replica.lag.time.max.ms; with
    `idle_follower_in_sync` (KAFKA-7152, 2.1) never while its log end is the leader's."""
    if not known:
        return True
    if proto.idle_follower_in_sync and follower_leo == leader_leo:
        return False
    return now_us - caught_up_us > lag_max_ms * 1000


# the `follower_truncation` modes of the releases before KAFKA-7164 (2.1) that ask where to
# truncate only when a partition's leader changed, not on a new epoch of the same leader
LEADER_CHANGE_ONLY = ("kip101", "kip279_leader_change")


def makes_follower(proto, leader_changed: bool, new_leader_epoch: bool) -> bool:
    """Whether a LeaderAndIsr applied to a follower restarts its fetcher
    (`Partition.makeFollower`'s answer, which puts the partition in `ReplicaManager.makeFollowers`'
    `partitionsToMakeFollower`): from 2.1 on a new leader or a new leader epoch, so a change at
    the same epoch that keeps the leader (an ISR change, a partition-epoch bump) leaves the
    fetcher as it is; before KAFKA-7164 (0.10-2.0, `follower_truncation` high_watermark,
    kip101 or kip279_leader_change) only on a new leader."""
    if proto.follower_truncation in ("high_watermark", *LEADER_CHANGE_ONLY):
        return leader_changed
    return leader_changed or new_leader_epoch


def follower_fetch_change(proto, kraft: bool, shutting_down: bool, leader: int, in_isr: bool,
                          leader_changed: bool, new_leader_epoch: bool) -> str:
    """What a follower's new state does to its fetcher: "restart" (removed, then added toward
    `leader`), "stop" (removed; parked requests answered) or "keep".
    ZooKeeper mode (`ReplicaManager.makeFollowers`): a state with no leader stops it; one that
    `makes_follower` restarts it, but a broker shutting down adds no fetcher (stop).
    KRaft (`applyLocalFollowersDelta`, 3.3.2 and 3.4.0 on, KAFKA-14296): in controlled shutdown
    a partition with no leader, or whose ISR leaves this broker out, stops
    (`partitionsToStopFetching`); otherwise a new leader epoch restarts it, shutting down or not
    (a leader that is gone leaves it stopped)."""
    if leader < 0 or (kraft and shutting_down and not in_isr):
        return "stop"
    if not makes_follower(proto, leader_changed, new_leader_epoch):
        return "keep"
    return "stop" if shutting_down and not kraft else "restart"


def fetch_last_fetched_epoch(proto, truncating: bool, last_epoch: int) -> int:
    """The epoch a follower's Fetch names for a partition (-1: none), by `follower_truncation`:
    every Fetch (`diverging_epoch`, Fetch v12's LastFetchedEpoch), only the first after an
    epoch or leader change (`kip279`, `kip279_leader_change`, `kip101`: the
    OffsetsForLeaderEpoch round trip it stands for), or never (`high_watermark`, before
    KIP-101)."""
    mode = proto.follower_truncation
    if mode == "high_watermark" or (mode != "diverging_epoch" and not truncating):
        return -1
    return last_epoch


def controller_channel_resends(proto) -> bool:
    """Whether an unanswered AlterPartition is sent again after a timeout or to a new
    controller: always, as `BrokerToControllerChannelManager` keeps a request queued until it
    is answered."""
    return True


def epoch_answer_stale(proto, follower_truncation: str, asked_epoch: int,
                       leader_epoch: int) -> bool:
    """Whether a follower drops the answer to its OffsetsForLeaderEpoch because the
    partition's leader epoch changed while it was out (`asked_epoch`, now `leader_epoch`):
    with `epoch_answer_checks_leader_epoch` (`AbstractFetcherThread.truncateToEpochEndOffsets`,
    KAFKA-7786, 2.1.1 and 2.2.0). Only where the follower asks for an epoch's end, which the
    model's truncating Fetch stands for (`follower_truncation` other than diverging_epoch)."""
    return proto.epoch_answer_checks_leader_epoch and asked_epoch != leader_epoch \
        and follower_truncation != "diverging_epoch"


def truncates_to_hw_unasked(proto, follower_truncation: str, last_epoch: int) -> bool:
    """Whether a follower truncates a partition it must truncate (added at a new leader or
    epoch) to its own HW at once, without asking its leader: when the partition's log has no
    leader epoch (`last_epoch` -1, an empty epoch cache) and `epochless_truncates_to_hw`
    (KAFKA-6859, 2.1.0: `ReplicaFetcherThread.fetchEpochsFromLeader` sends no request for an
    undefined epoch and answers it undefined itself; from 2.1.1 and 2.2.0 to 3.7.0
    `AbstractFetcherThread.fetchTruncatingPartitions` puts it among partitionsWithoutEpochs and
    `maybeTruncate` calls `truncateToHighWatermark`). From 2.8 at
    IBP 2.7+ (`diverging_epoch`) too: `initialFetchOffset` is the HW for a log with no epoch,
    and the partition starts truncating instead of fetching (`addPartitions`). Below IBP 0.11
    (`high_watermark`) every follower truncates to its HW anyway."""
    return last_epoch < 0 and proto.epochless_truncates_to_hw \
        and follower_truncation != "high_watermark"


def one_alter_partition_per_partition(proto) -> bool:
    """Whether a leader holds at most one unanswered AlterPartition per partition: with
    `isr_change_stays_pending` (KIP-497's `AlterPartitionManager`, 2.7; read at 2.7.0 and
    3.7.0), `submit` puts a change in `unsentIsrUpdates` only if none is there
    (`putIfAbsent`), and only the answer to that request takes it out. A change proposed
    while an earlier one is unanswered, even after a LeaderAndIsr or metadata record reset
    the partition's own state, fails at once with OPERATION_NOT_ATTEMPTED and leaves the
    partition as committed (`Partition.handleAlterPartitionError`); the earlier request is
    still sent again until answered, and its answer is ignored by the partition whose state
    moved on. Before 2.7 the leader wrote the ISR to ZooKeeper itself, one write at a time."""
    return proto.isr_change_stays_pending


def evicts_producer_state_on_retention(proto) -> bool:
    """`ProducerStateManager.truncateHead` on 0.11-2.3 (`evict_state_on_retention`): producers
    left wholly below a new log start are forgotten (ref §2.3)."""
    return proto.evict_state_on_retention


def follower_log_start(proto, leader_log_start: int, log_start: int, hw: int) -> int | None:
    """The log start a follower moves to after applying a Fetch answer, or None to keep its
    own: the leader's when it is higher (`ReplicaFetcherThread.processPartitionData` ->
    `maybeIncrementLogStartOffset(leaderLogStartOffset)`, 0.11+, `follower_log_start_from_leader`).
    Kafka refuses a start above the follower's HW (OffsetOutOfRangeException, which fails the
    partition); the follower's HW is the leader's capped at its log end, which is at least the
    fetch offset the leader found in range, so the model keeps its own start there."""
    if not proto.follower_log_start_from_leader or leader_log_start <= log_start \
            or leader_log_start > hw:
        return None
    return leader_log_start


def follower_fetch_high_watermark(proto, hw_read: int, hw_now: int) -> int:
    """The HW a leader's answer to a follower's Fetch carries: the one read with the records,
    before this Fetch moved the follower's state and perhaps the HW (0.10-0.11, and from 2.0:
    KAFKA-7104, apache/kafka PR 5305, "More consistent leader's state in fetch response";
    `Partition.fetchRecords` at 3.7 reads, then `updateFollowerFetchState`), or with
    `fetch_hw_after_follower_update` (1.0-1.1: `LogReadResult.updateLeaderReplicaInfo`, added
    with KAFKA-5758) the leader's HW after it, which the follower then learns a round trip
    sooner."""
    return hw_now if proto.fetch_hw_after_follower_update else hw_read


def non_replica_fetch_error(proto, current_leader_epoch: int) -> int:
    """A leader's answer to a Fetch from a broker that is not one of the partition's replicas:
    from KAFKA-13837 (3.3, `non_replica_fetch_error`) UNKNOWN_LEADER_EPOCH when the Fetch names
    an epoch, else NOT_LEADER_OR_FOLLOWER; before, NONE, with no records
    (`ReplicaManager.updateFollowerFetchState`: "Empty records will be returned")."""
    if not proto.non_replica_fetch_error:
        return E.NONE
    return E.UNKNOWN_LEADER_EPOCH if current_leader_epoch >= 0 else E.NOT_LEADER_OR_FOLLOWER


def offset_truncation_state(diverging: tuple[int, int], local: tuple[int, int], hw: int,
                            leo: int, log_start: int) -> tuple[int, str, bool]:
    """`AbstractFetcherThread.getOffsetTruncationState`: where a follower truncates after the
    leader's answer `diverging` = (epoch, end offset), given its own answer `local` for that
    epoch (`end_offset_for_epoch`, (-1, -1) for none). Returns (target offset, reason,
    whether that settles it). A KIP-101 answer (epoch -1) names an end offset, or none (-1:
    back to the follower's HW). Otherwise the target is the lesser of the two ends, or the
    leader's when the follower has no answer ("safe to truncate to leader's offset"); it is
    settled unless the follower's answer is for another epoch (truncationCompleted = false:
    ask again from the new end). The target stays within [log start, log end]."""
    epoch, end = diverging
    if epoch < 0:
        target, reason, complete = (hw, "high_watermark", True) if end < 0 else \
            (end, "epoch_end_offset", True)
    else:
        local_epoch, local_end = local
        target = min(end, local_end) if local_epoch >= 0 else end
        reason, complete = "diverging_epoch", local_epoch < 0 or local_epoch == epoch
    return max(min(target, leo), log_start), reason, complete


def fenced_fetch_stops_fetching(proto, error: int, request_epoch: int, current_epoch: int) -> bool:
    """Whether a follower stops fetching a partition its leader answered FENCED_LEADER_EPOCH
    (`AbstractFetcherThread.onPartitionFenced`): when the Fetch named the epoch the follower
    still has, its leader has moved on, so it marks the partition failed and waits for the
    LeaderAndIsr of the new epoch, which adds it back (2.1+, with KIP-320's fetch epochs; read
    at 2.4.0 and 3.7.0). A Fetch sent before the follower's own epoch changed is retried after
    the backoff, as any other error is."""
    return error == E.FENCED_LEADER_EPOCH and request_epoch == current_epoch
