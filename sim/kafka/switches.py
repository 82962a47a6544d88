"""The protocol switches: each KIP or behaviour change the model knows, with its choices.

Contract: `Protocol` holds one value per switch (its defaults are 3.7's ZooKeeper-mode
behaviour except `leader_discovery`, which the `3.7` profile sets); the values each switch may
take are `sim.kafka.switch_choices`. A pure module: its profiles are `sim.kafka.profiles`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Protocol:
    # KIP-359: Produce carries CurrentLeaderEpoch and the leader checks it (never shipped; ref caveat 1, §1.2)
    produce_epoch_check: bool = False
    # KIP-320: Fetch, OffsetsForLeaderEpoch and ListOffsets carry CurrentLeaderEpoch (2.1+, ref §1.2)
    fetch_epoch_check: bool = True
    # KIP-570: StopReplica v3 carries the leader epoch (2.6+, ref §1.5)
    stop_replica_epoch: bool = True
    # equal epoch on StopReplica: rejected 2.6-3.4.0, accepted 3.4.1+ (KAFKA-13972, ref §1.5)
    stop_replica_equal_epoch: str = "accept"
    # KAFKA-7738 (2.2): a client keeps the last leader epoch it saw of each partition, beyond
    # its metadata cache, ignores metadata with an older one, and learns newer ones out of band
    # (`updateLastSeenEpochIfNewer`), which make its cached entry stale (ref §3.1)
    client_rejects_stale_metadata: bool = True
    # which topic id change lets a client accept a lower leader epoch (a recreated topic,
    # `Metadata.updateLatestMetadata`): off (before 3.0: it rejects and hangs, ref §3.1, §4 row
    # 10) | both_ids (KAFKA-12257, 3.0.0: both ids known and different) | new_id (KAFKA-13488,
    # 3.1.0, 3.0.1: any id other than the cache's, so also a topic the cache lost)
    client_accepts_recreated_topic: str = "new_id"
    # how clients find a new leader: metadata | kip951 | refresh_no_backoff (ref §3.3, KIP-951)
    leader_discovery: str = "metadata"
    # how clients back off (ref §0, §3.1): constant (before 3.7): retry.backoff.ms; exponential
    # (KIP-580, KAFKA-9800, 3.7+): retry.backoff.ms * 2^n, ±20% jitter, up to retry.backoff.max.ms,
    # metadata refreshes too while answers bring no newer epoch (`equivalentResponseCount`)
    client_backoff: str = "exponential"
    # which broker a client's Metadata request goes to (`NetworkClient.leastLoadedNode`, ref
    # §3.1; docs/profiles.md): fewest_in_flight (0.10.2-2.2) | established_first (2.3-2.6,
    # KAFKA-8376) | oldest_attempt (2.7+, KIP-601: the oldest connection attempt first)
    least_loaded_node: str = "oldest_attempt"
    # broker answer to an unknown producer with seq != 0: out_of_order (0.11) |
    # unknown_producer_id (1.0-2.4) | accept (2.5+, KIP-360) (ref §2.4)
    unknown_producer: str = "accept"
    evict_state_on_retention: bool = False  # producer state evicted at the log start (0.11-2.3, ref §2.3)
    # retried batch older than the 5 cached: duplicate_sequence (1.0.0/1.0.1) | out_of_order (ref §2.2)
    old_duplicate: str = "out_of_order"
    # client uses logStartOffset to tell retention from loss on UNKNOWN_PRODUCER_ID (1.0+, ref §2.5)
    client_log_start_check: bool = True
    # KIP-360 client (2.5+): an idempotent producer retries OUT_OF_ORDER_SEQUENCE_NUMBER (and
    # UNKNOWN_PRODUCER_ID) instead of surfacing it; only transactional producers fail (ref §2.5)
    client_retries_out_of_order: bool = True
    # a Produce answered INVALID_PRODUCER_EPOCH puts an idempotent producer in its fatal state:
    # the error meant ProducerFencedException until KIP-588 (2.7) made it
    # InvalidProducerEpochException, which a non-transactional producer treats as any refusal
    invalid_producer_epoch_fatal: bool = False
    # KAFKA-13668 (3.6): an idempotent producer's InitProducerId refused for authorization is
    # abortable (its next send loop fails its batches, then it asks again); before, fatal
    init_producer_id_auth_abortable: bool = True
    # the idempotent client assigns sequences at drain and resolves an expired sent batch's: with
    # nothing in flight and no later ack covering it, it restarts the partition at sequence 0 under
    # a new producer id (1.0-2.4) or epoch (2.5+, KIP-360), both an epoch bump (KAFKA-5494; §2.5)
    client_resolves_sequences: bool = True
    idempotence_modes: bool = False  # off|requested|required (KIP-185/192, never shipped, ref §2.6)
    # batches of one producer a broker remembers for deduplication, which is also the most
    # requests an idempotent producer may keep in flight: 1 in 0.11 (it required
    # max.in.flight.requests.per.connection = 1), 5 from 1.0 (KAFKA-5494, ref §2.1)
    idempotent_batches: int = 5
    # producer.id.expiration.ms (3.4+: 1 day; before: transactional.id.expiration.ms 7 days)
    producer_id_expiration_ms: int = 86_400_000
    # default of enable.idempotence: true from 3.2. KIP-679 made the config's default true in
    # 3.0, but 3.0.0 and 3.1.0 enabled idempotence only when it was set explicitly
    # (`ProducerConfig.idempotenceEnabled`: `userConfiguredIdempotence && ...`) until
    # KAFKA-13598 (3.2.0; 3.0.1, 3.1.1)
    idempotence_default: bool = True
    # controller-initiated ISR removal (controlled shutdown, offline replica) bumps the leader
    # epoch: ZK controller and KRaft before MetadataVersion 3.6; KAFKA-15021 stopped it (ref §1.4)
    isr_shrink_bumps_epoch: bool = True
    # the admin's ElectLeaders a ZooKeeper-mode controller takes (KRaft: typed): none (before
    # 2.2) | preferred (2.2-2.3, KIP-183's ElectPreferredLeaders) | typed (2.4+, KIP-460)
    admin_elect_leaders: str = "typed"
    # KIP-841 (ZK mode: KAFKA-14140, 3.3): only live replicas join the ISR. A leader proposes a
    # follower for the ISR only if its metadata cache lists the broker alive
    # (`Partition.isReplicaIsrEligible`), and the controller answers INELIGIBLE_REPLICA to an
    # AlterPartition whose ISR names a broker that is not live or is shutting down
    # (`KafkaController.processAlterPartition`, `liveBrokerIds`). Before, a broker cut off from
    # ZooKeeper but not from its leader could rejoin the ISR it was just removed from
    ineligible_replica_check: bool = True
    # ZK mode: KAFKA-14154 (3.3.0). The controller answers NOT_CONTROLLER to an AlterPartition
    # whose partition or leader epoch is ahead of its own (it is likely a zombie: the leader
    # looks for the new controller and sends it again), checked before the leader epoch
    # fence. Before (2.7-3.2) it fenced only a lower leader epoch and tried the ZooKeeper
    # write at the request's partition epoch, which a newer one fails (INVALID_UPDATE_VERSION,
    # on which the leader gives up until new metadata)
    alter_partition_ahead_not_controller: bool = True
    # KIP-841 (AlterPartition v2, 3.3): the request names its topic by id, and the controller
    # answers an id it does not know UNKNOWN_TOPIC_ID; before, by name: UNKNOWN_TOPIC_OR_PARTITION
    alter_partition_topic_ids: bool = True
    # the leader's HW does not advance while its ISR is below min.insync.replicas, counted as at
    # most the partition's replicas (`isUnderMinIsr`, `effectiveMinIsr`; KAFKA-15583, PR 14594,
    # 3.7.0). Before, the HW followed the ISR down to one replica, which alone held the records
    hw_waits_for_min_isr: bool = True
    # a follower outside the ISR but caught up within replica.lag.time.max.ms holds the leader's
    # high watermark only while it is ISR-eligible (`shouldWaitForReplicaToJoinIsr`: alive, in
    # KRaft not fenced or shutting down; KAFKA-15021, apache/kafka PR 13765, 3.6.0). Before,
    # any caught-up follower held it, so a leader whose follower had just been shut down or
    # fenced out of the ISR kept its HW for up to the lag time (`Partition.maybeIncrementLeaderHW`)
    hw_caught_up_eligible_only: bool = True
    # a new leader writes its epoch, starting at its log end, into its leader-epoch cache when
    # it takes over (`Partition.makeLeader` -> `maybeAssignEpochStartOffset`, KAFKA-7415,
    # apache/kafka PR 5678, 2.1). Before, the epoch entered the cache only with the first batch
    # appended in it, so until then a follower asking for an epoch with nothing cached above it
    # got UNDEFINED_EPOCH_OFFSET and truncated to its HW (ref §4 row 3); and the cache's conflict
    epoch_cached_on_election: bool = True  # rules (`Log.assign_epoch_start`, `end_offset_for_epoch`)
    # a follower whose log end is the leader's is never out of sync, however long ago it last
    # fetched (`isFollowerOutOfSync`: "If the follower already has the same leo as the leader,
    # it will not be considered as out-of-sync"; KAFKA-7152, apache/kafka PR 5412, 2.1). Before,
    # only the time since it last caught up counted, so an idle partition's followers that
    # stopped fetching left the ISR after replica.lag.time.max.ms
    idle_follower_in_sync: bool = True
    # ZK mode: the controller's automatic preferred-leader rebalance
    # (`checkAndTriggerAutoLeaderRebalance`, auto.leader.rebalance.enable) elects preferred
    # leaders while other partitions are being reassigned (KAFKA-10149, apache/kafka PR 12543,
    # 3.4.0). Before, it elected none while any reassignment was in progress
    auto_rebalance_during_reassignment: bool = True
    # ZK mode: at a broker's startup the controller sends every partition's state only to the
    # brokers that started; the others get an UpdateMetadata with the live brokers and no
    # partition state (`onBrokerStartup`, KAFKA-7537, apache/kafka PR 5869, 2.2). Before, every
    # live broker got every partition's state, which repaired a cache an earlier UpdateMetadata
    # had missed. Likewise a controller's first UpdateMetadata after its failover
    startup_metadata_to_new_brokers_only: bool = True
    # ZK mode: a broker failure that takes no replica offline and elects no leader still ends
    # with an UpdateMetadata of no partition, so the live brokers hear the broker is gone
    # (`onReplicasBecomeOffline`, KAFKA-13225, apache/kafka PR 11255, 3.1). Before, that
    # UpdateMetadata went only when no partition was without an online leader, so a broker that
    # hosted nothing failing while some partition stayed leaderless went unannounced
    failed_broker_always_announced: bool = True
    # ZK mode: a new controller takes the replicas on dead brokers to OfflineReplica as it
    # starts (`ReplicaStateMachine.startup`, KAFKA-3143, 2.3): out of the ISRs (new epochs,
    # leaderless where one led), then elects. Before, it only elected leaders for partitions
    # whose leader was gone, leaving dead followers in ISRs until their leaders shrank them
    offline_replicas_at_failover: bool = True
    # a follower joins the ISR only once it has fetched up to the start offset of its leader's
    # current epoch, as well as up to the leader's HW (`Partition.isFollowerInSync`,
    # KAFKA-7128, apache/kafka PR 5557, 2.1). Before, reaching the HW was enough; a new
    # leader's HW can trail its log end by a round trip, so a lagging follower could join the
    # ISR without batches the old leader had acknowledged, and be elected cleanly
    isr_epoch_start_check: bool = True
    # a leader whose AlterPartition is refused (a stale partition epoch, a fenced leader epoch,
    # an unknown partition) or answered for another epoch keeps the ISR change pending, and
    # proposes no other, until a LeaderAndIsr (or metadata record) brings the partition's state
    # (`Partition.handleAlterPartitionError` and `handleAlterPartitionUpdate`, KIP-497, 2.7;
    # read at 2.7.0 and 3.7.0). Before, the leader wrote the ISR to ZooKeeper itself, and a
    # write refused for a stale version left the ISR as it was with nothing pending, so its next
    # Fetch or lag check proposed again (`Partition.updateIsr` at 2.6.0)
    isr_change_stays_pending: bool = True
    # KIP-380 (2.2): control requests carry the broker epoch the controller knew, and a broker
    # answers STALE_BROKER_EPOCH to one addressed to its previous incarnation (ref §1.4 broker
    # step 1). Before, a LeaderAndIsr or StopReplica sent before a restart and delivered after
    # it was applied like a new one
    broker_epoch_check: bool = True
    # a control request carrying a newer broker epoch than the broker knows is applied
    # (KAFKA-9839, 2.5.1 and 2.6.0: `KafkaApis.isBrokerEpochStale` only asks whether the
    # request's epoch is older). Before (2.2.0-2.5.0) it threw IllegalStateException ("larger
    # than current broker epoch"): the request was answered UNKNOWN_SERVER_ERROR and nothing
    # in it applied. After a ZooKeeper session expiry the controller can read the broker's new
    # registration before the broker learns its own new epoch (`processRegisterBrokerAndReelect`
    # sets it once ZooKeeper answers), and it does not resend what the broker refused
    newer_broker_epoch_accepted: bool = True
    # a follower moves its log start up to the leader's, which every Fetch answer carries
    # (FetchResponse v5, KIP-107, 0.11: `ReplicaFetcherThread.processPartitionData` at 0.11.0,
    # 2.6.0, 3.7.0), so a DeleteRecords on the leader reaches its followers. Before (0.10.2, no
    # DeleteRecords), a follower's log start moves only by its own retention
    follower_log_start_from_leader: bool = True
    # the HW in a leader's answer to a follower's Fetch is the leader's HW after this Fetch moved
    # the follower's state (`LogReadResult.updateLeaderReplicaInfo`, 1.0-1.1), not the one read
    # with the records (0.10-0.11; 2.0+, KAFKA-7104, apache/kafka PR 5305): the follower learns
    # the HW a round trip sooner (ref §1.2; sim.kafka.rules.replication)
    fetch_hw_after_follower_update: bool = False
    # a leader answers a Fetch from a broker that is not one of the partition's replicas with an
    # error (KAFKA-13837, 3.3: UNKNOWN_LEADER_EPOCH when the Fetch names an epoch, else
    # NOT_LEADER_OR_FOLLOWER); before, with no error and no records
    # (`ReplicaManager.updateFollowerFetchState`: "Empty records will be returned")
    non_replica_fetch_error: bool = True
    # a broker remembers the leader epoch of a replica it deleted on StopReplica and fences an
    # older or equal LeaderAndIsr for it, as KIP-570 fences StopReplica. Not in any release (a
    # ZK broker re-creates the replica, ref §1.4 step 2); this harness's own proposal, from the
    # self-test finding in docs/selftest.md
    leader_and_isr_delete_fence: bool = False
    # the controller's LeaderAndIsr on broker startup and failover is FULL (KIP-516 Type 2) and
    # the broker removes local logs of partitions it does not list, so a StopReplica lost while
    # the broker was down or cut off leaves no stray (KAFKA-15605: ZK brokers during the KRaft
    # migration, 3.6+; KRaft brokers find strays on startup, KAFKA-13127/KAFKA-14616)
    full_leader_and_isr: bool = False
    # a producer sends no batch of a partition while an earlier one is still in flight to a
    # broker that no longer leads it, so its sequences never split across two leaders (the
    # hazard of finding-idempotent-duplicate-after-split-leaders). Kafka's Java client does not
    # (`RecordAccumulator.shouldStopDrainBatchesForPartition` waits only on a stale epoch or an
    # unresolved sequence); librdkafka's idempotent producer does (`rd_kafka_idemp_drain_toppar`
    # when a partition joins its new leader's broker thread, read at v2.6.0). Pipelined, unlike
    # max_in_flight = 1
    client_drains_on_leader_change: bool = False
    # a client keeps the topic id of a topic a Metadata answer did not list (a broker that does
    # not know the topic yet answers UNKNOWN_TOPIC_OR_PARTITION) for as long as it keeps the
    # topic's last seen epochs, so only a different id counts as a recreated topic. Kafka's
    # client forgets it with the cache, and KAFKA-13488's rule (3.1+) then takes any id as new
    # and any older epoch with it (`Metadata.updateLatestMetadata` at 3.7.0:
    # `topicId != null && !topicId.equals(oldTopicId)` with `oldTopicId` null): a lagging broker
    # can send the client back to an older leader (docs/selftest.md: the ZooKeeper-mode story
    # first found for it was withdrawn). This harness's own proposal
    client_keeps_unlisted_topic_id: bool = False
    # a broker takes each part of an UpdateMetadata (a partition's state; the live-broker list
    # with the message formats) only if no UpdateMetadata the same controller sent later has
    # already set it. Kafka's ZK controller sends a broker one request at a time
    # (`RequestSendThread`), so they arrive in order, and `ZkMetadataCache.updateMetadata`
    # checks nothing; delivered out of order (the reordering KIP-570 guards StopReplica
    # against), an old live-broker list makes a KIP-841 leader keep a live follower out of the
    # ISR until the next UpdateMetadata. Not in any release (KRaft brokers apply metadata in
    # log order); this harness's own proposal, from the self-test finding in docs/selftest.md
    update_metadata_fence: bool = False
    # how a follower finds where its log diverges from its leader's (ref §4 rows 1, 3 and 5;
    # sim/kafka/fetcher.py): high_watermark (before 0.11): when its leader changes it
    # truncates to its own HW at once (`ReplicaManager.makeFollowers`), which can drop
    # committed records (KAFKA-1211, KIP-101); kip101 (0.11-1.1): only when its leader changes,
    # it asks the leader's end offset for its latest epoch, answered by the start of the
    # leader's next epoch (OffsetsForLeaderEpoch v0), and truncates to it;
    # kip279_leader_change (2.0): the answer names the largest epoch the leader has at or
    # below it, so the follower also drops entries of epochs the leader never had (KIP-279,
    # KAFKA-6361), still asked only on a new leader (`Partition.makeFollower` at 2.0.0);
    # kip279 (2.1-2.7): asked on every epoch change as well (KAFKA-7164, 2.1.0);
    # diverging_epoch (2.8+, KAFKA-10554): every Fetch names
    # the follower's last epoch and the leader answers with the divergence, so a follower that
    # missed an epoch change still truncates
    follower_truncation: str = "diverging_epoch"
    # a follower drops the answer to its OffsetsForLeaderEpoch when the partition's leader
    # epoch changed while the request was out (a LeaderAndIsr re-added it), and asks again
    # (`AbstractFetcherThread.truncateToEpochEndOffsets`, KAFKA-7786, 2.1.1 and 2.2.0).
    # Before, an answer about the previous epoch was applied if the partition was still
    # fetched from that leader. Read where the follower asks (follower_truncation kip101,
    # kip279_leader_change, kip279)
    epoch_answer_checks_leader_epoch: bool = True
    # a truncating partition whose log has no leader epoch (an empty epoch cache) is not asked
    # about: the fetcher truncates it to its HW, its initial fetch offset, at once (KAFKA-6859,
    # 2.1.0: `ReplicaFetcherThread.fetchEpochsFromLeader` answers an undefined epoch itself;
    # from KAFKA-7897, 2.1.1 and 2.2.0, `fetchTruncatingPartitions`' partitionsWithoutEpochs).
    # Before, it asked about epoch -1 and the leader's undefined answer sent it to its HW a
    # round trip later
    epochless_truncates_to_hw: bool = True
    # with follower_truncation = diverging_epoch: the follower applies the HW of a Fetch
    # response that carries a DivergingEpoch before it truncates, so its HW briefly covers
    # records it is about to drop (KAFKA-14704, 2.8-3.4.0; fixed in 3.4.1 and 3.5, ref §4 row 15)
    hw_before_diverging_truncation: bool = False
    # KIP-320 client side (KAFKA-7747, 2.3): after a leader change the consumer stops fetching
    # a partition it has read from until an OffsetsForLeaderEpoch round trip to the new leader
    # validates its position, and moves back to the divergence point if the log was truncated
    # below it (ref §1.2, §3.3.1 `maybeValidatePositionForCurrentLeader`)
    consumer_validation: bool = True
    # with consumer_validation: metadata that names no leader for a partition (its cached entry
    # is gone or stale, or its leader is no known node) leaves the consumer's position with the
    # leader it had, so it fetches on from there (KAFKA-9840, 2.6,
    # `SubscriptionState.maybeValidatePosition`); off (2.3-2.5): the position takes the epoch
    # without a leader and fetches nothing until metadata names one, then validates (ref §3.3.1)
    consumer_ignores_unknown_leader: bool = True
    # with `consumer_validation`: an OffsetsForLeaderEpoch answer with an undefined epoch or
    # end offset makes the position wait for a reset by `auto.offset.reset`
    # (`SubscriptionState.maybeCompleteValidation` -> `requestOffsetReset`, KAFKA-9840, 2.6.0:
    # "Raise an out of range error if the leader returns an undefined offset"). Before (2.3-2.5)
    # only the end offset was compared: below the position (UNDEFINED_EPOCH_OFFSET is -1) the
    # position moved to the answered offset and epoch as for a truncation, so to offset -1, which
    # its next Fetch finds out of range; at or past it, the position was valid
    consumer_resets_undefined_end_offset: bool = True
    # records fetched for a partition the application paused while its Fetch was in flight are
    # kept and returned once it is resumed, if its position has not moved (KAFKA-7548, 2.4.0:
    # `Fetcher.pausedCompletedFetches`, 3.7.0 `FetchCollector.collectFetch`); before, the
    # answer for a paused partition is ignored whole, errors too (`parseCompletedFetch` at
    # 2.3.0: "no longer fetchable"). Only probes pause (sim/kafka/consumer_subscription.py)
    consumer_keeps_paused_fetches: bool = True
    # KIP-207 (KAFKA-2334, ListOffsets v5, 2.2): a leader whose HW is still below the start
    # offset of its current epoch (just after an election) answers a consumer's ListOffsets
    # for the latest offset with OFFSET_NOT_AVAILABLE, and the consumer retries, so the offset
    # it resets to never goes back across a leader change; before, it answered the lagging HW
    # (`Partition.fetchOffsetForTimestamp`; sim.kafka.rules.offsets)
    list_offsets_hw_lag_error: bool = True
    # KAFKA-7568 (2.2): a ListOffsets answer (v4+) names the found offset's leader epoch; 2.1.0
    # answers none (`KafkaApis.handleListOffsetRequestV1AndAbove`: `Optional.empty()`)
    list_offsets_answers_epoch: bool = True
    # ListOffsets MAX_TIMESTAMP (-3, v7, KIP-734, 3.0): none (not sent) | first_record (3.0: the
    # first record of the largest timestamp, the cache's latest epoch) | last_offset (3.7.0: its
    # batch's last offset, `LogValidator` after e905ef1edfb) | batch_epoch (KAFKA-16310, 3.8.0:
    # the first record of the largest timestamp and its batch's epoch); sim.kafka.rules.offsets
    list_offsets_max_timestamp: str = "last_offset"
    # ListOffsets EARLIEST_LOCAL (-4, v8, KIP-405, 3.5): the local log start; before, not sent
    list_offsets_earliest_local: bool = True
    # a follower ahead of its leader's log end, without unclean leader election, halts its
    # broker ("Exiting because log truncation is not allowed", FatalExitError) instead of
    # truncating: `ReplicaFetcherThread.handleOffsetOutOfRange` until KAFKA-7414 (2.1)
    out_of_range_halts: bool = False
    # a broker survives the failure of one of its log directories while another is live: it
    # takes the partitions in it offline, answers KAFKA_STORAGE_ERROR for them and tells the
    # controller (KIP-112, JBOD, 1.0: `ReplicaManager.handleLogDirFailure`). Before, the first
    # I/O error halted the broker ("Halting due to unrecoverable I/O error",
    # `ReplicaManager.appendToLocalLog` at 0.11.0); sim.kafka.rules.storage
    survives_log_dir_failure: bool = True
    # the broker knows producer ids and sequences (KIP-98, 0.11). Without it no producer may be
    # idempotent: a scenario that asks for one is refused when it is loaded
    idempotent_producer: bool = True
    # KIP-392 (2.4): a consumer's Fetch v11+ carries ClientMetadata, and a follower serves such
    # a Fetch (up to its HW) where it refuses an older one with NOT_LEADER_OR_FOLLOWER
    # (`ReplicaManager.fetchMessages`: fetchOnlyFromLeader = isFromFollower || clientMetadata
    # is empty). The model's own consumer reads from the leader only; a probe may send the field
    follower_fetch: bool = True
    # with follower_fetch: an answer that moves a follower's HW completes the consumer Fetches
    # parked on it (`ReplicaFetcherThread.completeDelayedFetchRequests`, KAFKA-14334, 3.4.0
    # and 3.3.2); before, they waited for data past their position or their max wait
    follower_hw_completes_fetches: bool = True
    # KIP-227 incremental fetch sessions (1.1+, Fetch v7): a follower's or consumer's first Fetch
    # to a broker opens a session there; later Fetches name only the partitions whose fetch
    # state changed (and those to forget), and the leader answers only with partitions that
    # have records, an error, a DivergingEpoch, or a HW or log start it has not sent yet
    # (`FetchSession.scala`, `FetchSessionHandler`). Before, every Fetch names them all
    fetch_sessions: bool = True
    # which partitions an incremental answer moves to the end of its session's order
    # (`PartitionIterator`): responded (1.1-2.8: all it carries) | records (KAFKA-12330, 3.0+)
    fetch_session_rotation: str = "records"
    # KAFKA-9401 (3.8+): the session cache is 8 shards (`FetchSessionCacheShard`), each 1/8 of it
    fetch_session_cache_sharded: bool = True
    # KRaft only: a partition change that shrinks the ISR bumps the leader epoch
    # (`PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded` to 3.5; KAFKA-15021, 3.6+: not)
    kraft_isr_shrink_bumps_epoch: bool = True
    # KRaft only: KAFKA-15489 (3.7.0) check-quorum: a quorum leader no majority fetched from for
    # 1.5 x quorum.fetch.timeout.ms resigns (`checkQuorumTimer`); before, it stayed leader
    kraft_check_quorum: bool = False
    # KRaft only: KIP-903 (3.5). A follower's Fetch carries its broker epoch, and a leader
    # proposes it for the ISR only if its metadata cache holds that epoch
    # (`Partition.isBrokerEpochIsrEligible`, KAFKA-14139)
    kraft_isr_broker_epoch_check: bool = False
    # KRaft only: KAFKA-15221 (3.7.0). A follower's Fetch of an older broker epoch than the
    # leader's cache holds is NOT_LEADER_OR_FOLLOWER (`Replica.updateFetchStateOrThrow`);
    # before, it moved the fetch state back to the old incarnation's
    kraft_stale_fetch_fenced: bool = False
    # KRaft only: KAFKA-14616 (3.7.0). A starting broker deletes its stray log dirs before
    # its first publish makes replicas; before (3.6.x) after `applyDelta`, so a re-created
    # topic's partition met its predecessor's dir and was taken away with it
    kraft_strays_deleted_first: bool = False
    # KRaft only: KAFKA-14658 (3.5.0). A starting broker opens its ports once unfenced; before
    # (3.3-3.4) at once, requests waiting in the socket until it caught up (`initialCatchUpFuture`)
    kraft_port_opens_when_unfenced: bool = False
    # KRaft only: KAFKA-14296 (3.3.2, 3.4.0). A shutting-down broker still applies the records
    # that make it a follower; before (3.3.0-3.3.1) it skipped them and led at its old epoch
    kraft_shutdown_applies_deltas: bool = False
    # KRaft only: KIP-1166 (KAFKA-14145, 4.1). A metadata Fetch carries its sender's HW; the
    # leader answers at once when its own is higher, and parked Fetches when its HW moves.
    # Before (3.3-4.0) a Fetch at the log's end parks (`metadata_fetch_wait_ms`, ~500 ms)
    kraft_fetch_completes_on_hw: bool = False
    # KRaft only: a registration of the registered incarnation (`registerBroker`): new_epoch
    # (3.3-3.7: a new broker epoch, fenced) | keeps_state (KAFKA-16757, 3.8: a new epoch, the
    # fenced and controlled-shutdown state kept) | keeps_epoch (KAFKA-16952, 3.9+: both kept)
    kraft_reregistration: str = "new_epoch"
    # KRaft only: KAFKA-15019 (3.6). A heartbeat expired in the controller's queue renews its session
    kraft_expired_heartbeat_touches: bool = False
    # KRaft only: KAFKA-14694 (3.6). A broker with no producer id block answers InitProducerId
    # COORDINATOR_LOAD_IN_PROGRESS at once; before (3.3-3.5) the request waited for the block
    kraft_producer_id_no_wait: bool = True
    raft_pre_vote: bool = False  # KIP-996 (4.0; KRaft only): a voter stands once pre-voted
    # KRaft only: KAFKA-18345 (4.1). A candidate that lost waits out its election timeout;
    # before (3.3-4.0) it backs off at once for a random, exponential time
    raft_candidate_waits_election_timeout: bool = False
    # KRaft only: KAFKA-12670 (3.9). The controller elects uncleanly by unclean.leader.election.enable
    kraft_unclean_election_config: bool = False
    # KRaft only: KAFKA-16536 (3.9). The quorum leader resends BeginQuorumEpoch to every voter
    raft_begin_quorum_heartbeat: bool = False
    # KRaft only: KAFKA-16526 (3.8). A Vote, BeginQuorumEpoch or EndQuorumEpoch is taken from
    # and by a node outside the voter set; before, INCONSISTENT_VOTER_SET (an observer votes)
    raft_observer_votes: bool = False
    # KRaft only: KIP-853 (3.9). The quorum leader takes AddRaftVoter / RemoveRaftVoter on a
    # kraft.version 1 cluster; the voter set is the log's last VotersRecord (rules.raft_voters)
    raft_dynamic_voters: bool = False
    # KRaft only: KIP-966 (4.1, ELRV_1 on new clusters): ISR members below min.insync stay
    # electable (ELR); the ISR may be empty; an unclean restart leaves ISR and ELR
    eligible_leader_replicas: bool = False
    elr_assigned_replicas_only: bool = False  # proposal: a reassignment's removed leave the ELR
    kraft_replicates_once_registered: bool = False  # proposal: fetch once registered
    mutant: str = ""  # planted bug, or "" for none (see MUTANTS)

    def to_json(self, kraft: bool = False) -> dict:
        """The switches as the trace header stores them; the KRaft-only ones (`KRAFT_SWITCHES`)
        only for a KRaft run, so a ZooKeeper-mode header reads as it did before they existed."""
        out = asdict(self)
        return out if kraft else {k: v for k, v in out.items() if k not in KRAFT_SWITCHES}


# the switches only the KRaft model reads (left out of a ZooKeeper-mode trace header)
KRAFT_SWITCHES = ("kraft_isr_shrink_bumps_epoch", "kraft_check_quorum", "kraft_isr_broker_epoch_check",
                  "kraft_stale_fetch_fenced", "kraft_strays_deleted_first", "kraft_port_opens_when_unfenced",
                  "kraft_shutdown_applies_deltas", "kraft_fetch_completes_on_hw", "raft_pre_vote",
                  "raft_candidate_waits_election_timeout", "kraft_unclean_election_config",
                  "raft_begin_quorum_heartbeat", "raft_observer_votes", "eligible_leader_replicas",
                  "elr_assigned_replicas_only", "kraft_replicates_once_registered", "kraft_reregistration",
                  "kraft_expired_heartbeat_touches", "kraft_producer_id_no_wait", "raft_dynamic_voters")

