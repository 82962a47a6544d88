"""Which node reads each protocol switch, and which switches the inter-broker protocol gates.

Contract: `ROLES` maps every switch of `sim.kafka.profiles.Protocol` to the roles whose own
profile decides it (`controller`, `broker`, `producer`, `consumer`); `INTER_BROKER` names the
switches whose effect on the wire between brokers, or from the controller to a broker, is
also bounded by the cluster's inter-broker protocol version (Kafka's
`inter.broker.protocol.version`, the IBP; `sim.kafka.rules.inter_broker` holds those
decisions). `markdown_roles_table()` renders both for docs/profiles.md (a test keeps them in
step). Plain data: the loader, the docs test and the model read it; it imports no actor.

How a switch splits between two ends follows Kafka's code: a request carries a field only when
the sender's version has it, and the receiver checks only what the request carries (an absent
CurrentLeaderEpoch or StopReplica leader epoch skips the check). Clients agree versions with
each broker (ApiVersions), so a field reaches a broker only when both ends know it; a ZK-mode
controller and a follower pick their request versions from the IBP
(`ControllerChannelManager`, `ReplicaFetcherThread` at 2.6.0).
"""

from __future__ import annotations

CONTROLLER, BROKER, PRODUCER, CONSUMER = "controller", "broker", "producer", "consumer"
CLIENTS = (PRODUCER, CONSUMER)

ROLES: dict[str, tuple[str, ...]] = {
    # the producer sends CurrentLeaderEpoch, the broker checks it (and hints on its errors)
    "produce_epoch_check": (PRODUCER, BROKER),
    # a consumer (ApiVersions) or follower (IBP) sends CurrentLeaderEpoch; the leader checks it
    "fetch_epoch_check": (CONSUMER, BROKER),
    # StopReplica v3 (IBP 2.6+): the controller sends the epoch; brokers check what arrives
    "stop_replica_epoch": (CONTROLLER,),
    "stop_replica_equal_epoch": (BROKER,),
    "client_rejects_stale_metadata": CLIENTS,
    "client_accepts_recreated_topic": CLIENTS,
    # the broker sends KIP-951's CurrentLeader hints; a client applies them
    "leader_discovery": (BROKER, *CLIENTS),
    "client_backoff": CLIENTS,
    "least_loaded_node": CLIENTS,
    "unknown_producer": (BROKER,),
    "evict_state_on_retention": (BROKER,),
    "old_duplicate": (BROKER,),
    "client_log_start_check": (PRODUCER,),
    "client_retries_out_of_order": (PRODUCER,),
    "invalid_producer_epoch_fatal": (PRODUCER,),
    "init_producer_id_auth_abortable": (PRODUCER,),
    "client_resolves_sequences": (PRODUCER,),
    "idempotence_modes": (PRODUCER,),
    # the broker's dedup cache, and the producer's cap on requests in flight (1 in 0.11)
    "idempotent_batches": (BROKER, PRODUCER),
    "producer_id_expiration_ms": (BROKER,),
    "idempotence_default": (PRODUCER,),
    # the controller bumps the epoch; a broker applies a same-epoch LeaderAndIsr when it does not
    "isr_shrink_bumps_epoch": (CONTROLLER, BROKER),
    # the admin's ElectLeaders, PREFERRED (KIP-183, 2.2) and UNCLEAN (KIP-460, 2.4)
    "admin_elect_leaders": (CONTROLLER,),
    # the controller refuses the AlterPartition; the leader proposes only live followers
    "ineligible_replica_check": (CONTROLLER, BROKER),
    # KAFKA-14154 (3.3): read by the ZooKeeper-mode controller answering an AlterPartition
    "alter_partition_ahead_not_controller": (CONTROLLER,),
    # the leader names the topic by id (v2) when the controller knows that version too
    "alter_partition_topic_ids": (CONTROLLER, BROKER),
    "hw_waits_for_min_isr": (BROKER,),
    "hw_caught_up_eligible_only": (BROKER,),
    "epoch_cached_on_election": (BROKER,),
    "idle_follower_in_sync": (BROKER,),
    # KAFKA-10149 (3.4): read by the ZooKeeper-mode controller's automatic rebalance
    "auto_rebalance_during_reassignment": (CONTROLLER,),
    "startup_metadata_to_new_brokers_only": (CONTROLLER,),
    "failed_broker_always_announced": (CONTROLLER,),
    "offline_replicas_at_failover": (CONTROLLER,),
    "isr_epoch_start_check": (BROKER,),
    "isr_change_stays_pending": (BROKER,),
    # KIP-380 (IBP 2.2+): the controller sends the broker epoch, the broker checks it
    "broker_epoch_check": (CONTROLLER, BROKER),
    # KAFKA-9839 (2.5.1, 2.6): only the receiving broker compares the epochs
    "newer_broker_epoch_accepted": (BROKER,),
    # KIP-107 (0.11): the leader's log start rides on every Fetch answer
    "follower_log_start_from_leader": (BROKER,),
    "fetch_hw_after_follower_update": (BROKER,),
    "non_replica_fetch_error": (BROKER,),
    "leader_and_isr_delete_fence": (BROKER,),
    "full_leader_and_isr": (CONTROLLER, BROKER),
    "client_drains_on_leader_change": (PRODUCER,),
    "client_keeps_unlisted_topic_id": CLIENTS,
    "update_metadata_fence": (BROKER,),
    "follower_truncation": (BROKER,),
    # KAFKA-7786 (2.2): the follower drops an epoch answer from before its epoch changed
    "epoch_answer_checks_leader_epoch": (BROKER,),
    # KAFKA-6859 (2.1): a follower whose log has no epoch truncates to its HW unasked
    "epochless_truncates_to_hw": (BROKER,),
    "hw_before_diverging_truncation": (BROKER,),
    # the consumer validates; a leader before 2.3 (no OffsetsForLeaderEpoch v3 in its
    # ApiVersions answer) is not asked (`rules.client_consumer.leader_validates`)
    "consumer_validation": (CONSUMER,),
    # KAFKA-9840 (2.6): a consumer whose metadata names no leader keeps its last one
    "consumer_ignores_unknown_leader": (CONSUMER,),
    "consumer_resets_undefined_end_offset": (CONSUMER,),
    # KAFKA-7548 (2.4): records fetched for a paused partition are kept until it is resumed
    "consumer_keeps_paused_fetches": (CONSUMER,),
    # KIP-207 (2.2): the leader answers a consumer's ListOffsets
    "list_offsets_hw_lag_error": (BROKER,),
    # KAFKA-7568 (2.2), KIP-734 (3.0), KIP-405 (3.5): how the leader answers ListOffsets
    "list_offsets_answers_epoch": (BROKER,),
    "list_offsets_max_timestamp": (BROKER,),
    "list_offsets_earliest_local": (BROKER,),
    "out_of_range_halts": (BROKER,),
    # KIP-112 (1.0): a broker outlives one failed log directory; the controller's
    # UpdateMetadata (v4, IBP 1.0) names offline replicas
    "survives_log_dir_failure": (CONTROLLER, BROKER),
    # the broker keeps producer state; a producer that knows no idempotence cannot ask for it
    "idempotent_producer": (BROKER, PRODUCER),
    # KIP-392 (2.4): a follower serves a consumer's Fetch that carries ClientMetadata
    "follower_fetch": (BROKER,),
    # KAFKA-14334 (3.4.0): the follower completes consumer Fetches parked on it
    "follower_hw_completes_fetches": (BROKER,),
    # KIP-227 (1.1): a consumer or follower (IBP) opens a fetch session; the leader keeps it
    "fetch_sessions": (CONSUMER, BROKER),
    # the leader orders its sessions' partitions
    "fetch_session_rotation": (BROKER,),
    # the leader's session cache
    "fetch_session_cache_sharded": (BROKER,),
    # KRaft only: the quorum controller writes the partition change
    "kraft_isr_shrink_bumps_epoch": (CONTROLLER,),
    # KRaft only: the quorum leader resigns without a majority (KAFKA-15489)
    "kraft_check_quorum": (CONTROLLER,),
    # KRaft only (KIP-903): the leader checks the broker epoch a follower's Fetch carries and
    # sends the ISR's epochs in AlterPartition v3; the controller checks what arrives
    "kraft_isr_broker_epoch_check": (CONTROLLER, BROKER),
    # KRaft only: a leader refuses a Fetch of an earlier incarnation (KAFKA-15221)
    "kraft_stale_fetch_fenced": (BROKER,),
    # KRaft only: a starting broker deletes its stray logs before making replicas (KAFKA-14616)
    "kraft_strays_deleted_first": (BROKER,),
    # KRaft only: a starting broker opens its ports once unfenced (KAFKA-14658)
    "kraft_port_opens_when_unfenced": (BROKER,),
    # KRaft only: a shutting-down broker still applies the records that make it a follower
    # (KAFKA-14296)
    "kraft_shutdown_applies_deltas": (BROKER,),
    # KRaft only (KIP-1166): a metadata Fetch (v18) carries its sender's high watermark; the
    # quorum leader answers on it, and answers parked Fetches when its high watermark moves
    "kraft_fetch_completes_on_hw": (CONTROLLER, BROKER),
    # KRaft only: the active controller amends a registration of the registered incarnation
    "kraft_reregistration": (CONTROLLER,),
    # KRaft only: the active controller renews a session on an expired heartbeat (KAFKA-15019)
    "kraft_expired_heartbeat_touches": (CONTROLLER,),
    # KRaft only: a broker without a producer id block answers InitProducerId at once
    # (KAFKA-14694); before, the request waited for the block
    "kraft_producer_id_no_wait": (BROKER,),
    # KRaft only (KIP-996): a voter asks for pre-votes before it stands, and answers them
    "raft_pre_vote": (CONTROLLER,),
    # KRaft only (KAFKA-18345): a candidate that lost waits out its election timeout
    "raft_candidate_waits_election_timeout": (CONTROLLER,),
    # KRaft only (KAFKA-12670): the controller reads unclean.leader.election.enable
    "kraft_unclean_election_config": (CONTROLLER,),
    # KRaft only (KAFKA-16536): the quorum leader resends BeginQuorumEpoch as a heartbeat
    "raft_begin_quorum_heartbeat": (CONTROLLER,),
    # KRaft only (KAFKA-16526): a Raft node takes Vote, BeginQuorumEpoch and EndQuorumEpoch
    # from and as a node outside the voter set
    "raft_observer_votes": (CONTROLLER,),
    # KRaft only (KIP-853): the quorum leader takes AddRaftVoter and RemoveRaftVoter, and a
    # Raft node's voter set is its log's last VotersRecord
    "raft_dynamic_voters": (CONTROLLER,),
    # KRaft only (KIP-966): the quorum controller keeps ELR; a broker's registration names
    # the epoch its clean shutdown wrote (PreviousBrokerEpoch)
    "eligible_leader_replicas": (CONTROLLER, BROKER),
    # KRaft only, a proposal: the ELR keeps only the partition's assigned replicas
    "elr_assigned_replicas_only": (CONTROLLER,),
    "kraft_replicates_once_registered": (BROKER,),
}

# Switches the IBP bounds on the wire between brokers (what `sim.kafka.rules.inter_broker`
# decides), with the Kafka code that picks the request version from it.
INTER_BROKER: dict[str, str] = {
    "fetch_epoch_check": "a follower's Fetch carries CurrentLeaderEpoch from IBP 2.1 "
                         "(`ReplicaFetcherThread.fetchRequestVersion` 10)",
    "stop_replica_epoch": "StopReplica v3 carries the leader epoch from IBP 2.6 "
                          "(`ControllerChannelManager.sendStopReplicaRequests`)",
    "broker_epoch_check": "control requests carry the broker epoch from IBP 2.2 "
                          "(LeaderAndIsr v2, UpdateMetadata v5, StopReplica v1)",
    "survives_log_dir_failure": "UpdateMetadata names offline replicas from IBP 1.0 (v4, "
                                "`ControllerChannelManager.sendUpdateMetadataRequests`)",
    "fetch_sessions": "a follower's Fetch carries a session from IBP 1.1 "
                      "(`ReplicaFetcherThread.fetchRequestVersion` 7)",
    "follower_truncation": "OffsetsForLeaderEpoch from IBP 0.11, its v1 answer with an epoch "
                           "from 2.0, Fetch v12's DivergingEpoch from 2.7 "
                           "(`isTruncationOnFetchSupported`)",
}


def markdown_roles_table() -> str:
    """The switch x role table of docs/profiles.md, with what the IBP bounds."""
    from sim.kafka.profiles import switch_names
    lines = ["| switch | read by | bounded by the inter-broker protocol |", "|---|---|---|"]
    for name in switch_names():
        lines.append(f"| `{name}` | {', '.join(ROLES[name])} | {INTER_BROKER.get(name, '')} |")
    return "\n".join(lines) + "\n"
