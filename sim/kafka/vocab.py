"""The Kafka trace vocabulary: event kinds and their fields, shared by model and invariants.

Contract: this module imports nothing from the model, so invariants and reports can use it
without loading actors. Every event has `seq`, `t` (µs), `node`, `kind`; the fields below are
the kind-specific ones. A partition is named `"<topic>-<index>"` (`tp`) and, where a topic can
be recreated, qualified by `topic_id`. Full documentation: docs/trace.md.
"""

# -- core (sim.core) --------------------------------------------------------------------
SEND = "send"          # mid, dst, msg (message kind), + the message's brief fields
DELIVER = "deliver"    # mid, src
DROP = "drop"          # mid, dst, msg (message kind), reason: partition | loss | rule:<id> | dst_down |
#                        refused | connection_closed | connection_reset
STALL = "stall"        # mid: waits on a cut link until it heals (network.partition = "stall")
HOLD = "hold"          # mid, rule
FAULT = "fault"        # step, action, target?, resolved?, params?, outcome?
FAULT_OUTCOME = "fault_outcome"  # step, outcome
DISCONNECT = "disconnect"  # peer: the connection to it closed (it died, or the network reset it)
CRASH = "crash"
# a ZooKeeper-mode broker registered again after ZooKeeper expired its session: broker_epoch
# (the new znode's), previous_epoch, reason ("session_expired"), known_in_us (when its request
# handlers learn the new epoch, `cluster.broker_registration_ms`)
BROKER_REGISTERED = "broker_registered"
# a restarted ZooKeeper-mode broker could not register: its previous process's session still
# held the znode; error ("NODEEXISTS"), registered_epoch (the held znode's), expires_in_us (when
# that session expires). A crash follows at once (the broker shut down)
BROKER_START_FAILED = "broker_start_failed"
RESTART = "restart"
END = "end"            # end_us, events, stopped_by, settled (bool)
UNHEALED = "unhealed"  # just before `end`, only if the network is not whole: cut_links (count),
#                        rules (ids of drop/hold rules still armed or holding messages)
METADATA_REACH = "metadata_reach"  # KRaft, just before `end`: leader (the live quorum leader
#                        of the highest epoch, or null), epoch, brokers: [[broker, reaches (both
#                        ways), slowed (slow_metadata)]] for the live ones, slowed (a delay or
#                        reorder rule in force)
UNSETTLED = "unsettled"  # just before `end`, only if a controller's request to a live broker is
#                        still on its way (due later, stalled on a cut, kept by a hold rule):
#                        links ([controller, broker] pairs)
PROBE_STEP = "probe_step"  # a probe delivers one message: step, deliver (kind), from, to, body
PROBE_CHECK = "probe_check"  # a probe's expectation judged: step, check, kafka, model, agree

# -- controller ---------------------------------------------------------------------------
CONTROLLER_ELECTED = "controller_elected"    # controller_epoch
CONTROLLER_RESIGNED = "controller_resigned"  # controller_epoch, reason
# The controller's truth for a partition after every change:
PARTITION_STATE = "partition_state"  # tp, topic_id, leader, leader_epoch, partition_epoch,
#                                      isr, replicas, reason, controller_epoch
TOPIC_DELETED = "topic_deleted"      # topic, topic_id
TOPIC_DELETION_COMPLETED = "topic_deletion_completed"  # topic, topic_id
ALTER_PARTITION = "alter_partition"  # tp, from (broker), leader_epoch, partition_epoch, isr, error
REPLICAS_OFFLINE = "replicas_offline"  # broker, tps: its replicas newly found in a failed log dir

# -- KRaft: the controller quorum and its metadata log (cluster.mode = "kraft") -------------
QUORUM_ELECTION = "quorum_election"  # a voter stands as candidate: epoch, end_offset
QUORUM_PROSPECTIVE = "quorum_prospective"  # a voter asks for pre-votes (KIP-996): epoch, end_offset
QUORUM_LEADER = "quorum_leader"      # a voter won its epoch: epoch, end_offset, high_watermark
QUORUM_RESIGNED = "quorum_resigned"  # the leader gave up its epoch: epoch, reason
VOTERS_CHANGED = "voters_changed"  # a Raft node's voter set changed (KIP-853): voters, offset
VOTER_CHANGE = "voter_change"  # the leader answered a voter change: op, voter, error
METADATA_APPEND = "metadata_append"  # the leader appended: offset, epoch, record ({kind, ...})
METADATA_COMMIT = "metadata_commit"  # the leader's high watermark moved: epoch,
#                                      high_watermark, records: [[offset, epoch, record]]
METADATA_TRUNCATE = "metadata_truncate"  # a voter or broker cut its log: to_offset, end_offset
METADATA_APPLY = "metadata_apply"    # a broker applied committed records: from_offset,
#                                      to_offset (its metadata offset after), expected_offset
#                                      (its offset before), records (kinds)

# -- broker control plane -----------------------------------------------------------------
REPLICA_STATE = "replica_state"  # tp, topic_id, role (leader|follower), leader, leader_epoch,
#                                  partition_epoch, isr, controller_epoch
LAI_REJECTED = "lai_rejected"    # controller_epoch, partitions: [[tp, req_epoch, local_epoch, error]]
LAI_LEADER_UNAVAILABLE = "lai_leader_unavailable"  # controller_epoch, partitions: [[tp,
#                                  leader, req_epoch, local_epoch]]: not applied, leader not alive
METADATA = "metadata"            # controller_epoch, changes: [[tp, leader, leader_epoch]], alive
METADATA_FENCED = "metadata_fenced"  # controller_epoch, corr, tps, alive (update_metadata_fence)
STOP_REPLICA = "stop_replica"    # tp, topic_id, delete, req_epoch (wire), issued_epoch (truth at
#                                  issue), local_epoch, result: applied | fenced | not_hosted |
#                                  offline | storage_error, error (0, 56 or 74), controller_epoch
UPGRADE = "upgrade"              # the broker runs another profile from now on (`upgrade` fault):
#                                  profile, protocol (its switches)
STALE_CONTROLLER = "stale_controller"  # request (msg kind), req_controller_epoch, local_controller_epoch
LOG_CREATED = "log_created"      # tp, topic_id
LOG_DELETED = "log_deleted"      # tp, topic_id, reason? (stray | disk_replaced)
LOG_DIR_FAILURE = "log_dir_failure"  # dir, tps (partitions taken offline), halt (bool)

# -- data plane ------------------------------------------------------------------------------
APPEND = "append"        # one per Produce on the leader: producer, corr, acks, batches: [{tp,
#                          topic_id, base_offset, count, leader_epoch, bid, sender_epoch
#                          [, pid, producer_epoch, base_seq]}]
DUP_APPEND = "dup_append"  # duplicate detected, nothing appended: tp, bid, base_offset (original)
REPLICATE = "replicate"  # one per Fetch response on a follower: leader, batches:
#                          [[tp, topic_id, base_offset, count, leader_epoch, bid]]
TRUNCATE = "truncate"    # tp, topic_id, to_offset, reason
HW = "hw"                # one per request that moved HWs: role, hws: [[tp, topic_id, hw, leader_epoch]]
LOG_START = "log_start"  # tp, topic_id, log_start_offset
HALT = "halt"            # the broker exits on a truncation it may not do: tp, topic_id,
#                          log_end_offset, leader_end_offset (a `crash` event follows)
WIRE_CLOSED = "wire_closed"  # a broker closed a real client's connection: peer, conn, reason
#                              (unsupported | malformed: ...), api, v (of the request it could not serve)
PRODUCE_RESULT = "produce_result"  # broker side per partition: tp, bid, error

# -- clients ---------------------------------------------------------------------------------
BATCH = "batch"                # producer: bid, tp, count, created_us
BATCH_GROWN = "batch_grown"    # records join a batch not yet sent: bid, tp, count
ACK = "ack"                    # bid, tp, base_offset, count, acks, latency_us, has_offset
PRODUCE_ERROR = "produce_error"  # a retried batch: bid, tp, error, action ("retry"), attempts
PRODUCE_FAILED = "produce_failed"  # bid, tp, error (surfaced to the application)
CLIENT_CONFIG = "client_config"  # idempotence (mode the profile promises), effective_idempotence,
#                                   acks, leader_discovery
CLIENT_EPOCH = "client_epoch"  # tp, topic_id, leader (-1: none), leader_epoch,
#                                 source: metadata | hint | list_offsets; dropped
CLIENT_ERROR = "client_error"  # a real client's library raised to the application, or failed in a
#                                callback: error (exception type), message, action (restart | none)
METADATA_REJECTED = "metadata_rejected"  # tp, leader_epoch (offered), known_epoch, source

# vm.dirty_writeback_centisecs (Linux default 500): how often the kernel's flusher wakes to
# write back files whose dirty pages have expired (`power_loss` with flush = "writeback")
DIRTY_WRITEBACK_US = 5_000_000

# -- timeouts the model uses that a trace reader needs (invariants/recovery.py) ---------------
# replica.fetch.backoff.ms (default 1 s): a follower's pause after a failed Fetch
FETCH_BACKOFF_US = 1_000_000
# extra wait beyond a Fetch's max wait before the follower deems it lost and sends it again
FETCH_TIMEOUT_US = 2_000_000
META_RETRY_BACKOFF_US = 100_000  # a KRaft broker's retry after a failed metadata request
# controller.socket.timeout.ms (default 30 s): how long a broker waits for the controller's
# answer before it closes the connection and sends the request again
CONTROLLER_SOCKET_TIMEOUT_US = 30_000_000
# the consumer's request.timeout.ms by default (30 s; `consumers.request_timeout_ms`)
CONSUMER_REQUEST_TIMEOUT_MS = 30_000

ERROR_NAMES = {
    0: "NONE", 1: "OFFSET_OUT_OF_RANGE", 3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 8: "BROKER_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE", 13: "NETWORK_EXCEPTION", 14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR", 29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED", 35: "UNSUPPORTED_VERSION", 53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 11: "STALE_CONTROLLER_EPOCH", 19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 21: "INVALID_REQUIRED_ACKS", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST",
    43: "UNSUPPORTED_FOR_MESSAGE_FORMAT", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER", 47: "INVALID_PRODUCER_EPOCH", 56: "KAFKA_STORAGE_ERROR",
    59: "UNKNOWN_PRODUCER_ID", 70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH", 74: "FENCED_LEADER_EPOCH", 75: "UNKNOWN_LEADER_EPOCH",
    77: "STALE_BROKER_EPOCH", 78: "OFFSET_NOT_AVAILABLE", 94: "INCONSISTENT_VOTER_SET",
    95: "INVALID_UPDATE_VERSION", 100: "UNKNOWN_TOPIC_ID",
    101: "DUPLICATE_BROKER_REGISTRATION", 103: "INCONSISTENT_TOPIC_ID",
    107: "INELIGIBLE_REPLICA", 108: "NEW_LEADER_ELECTED", -1: "UNKNOWN_SERVER_ERROR",
    36: "TOPIC_ALREADY_EXISTS", 37: "INVALID_PARTITIONS", 38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT", 80: "PREFERRED_LEADER_NOT_AVAILABLE",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE", 17: "INVALID_TOPIC_EXCEPTION",
    84: "ELECTION_NOT_NEEDED", 85: "NO_REASSIGNMENT_IN_PROGRESS", 102: "BROKER_ID_NOT_REGISTERED",
    126: "DUPLICATE_VOTER", 127: "VOTER_NOT_FOUND",
}
# What a producer reports for a batch it gave up on (`produce_failed`): Kafka's code when a
# broker's answer failed it, else one of these client-side outcomes, which are never on the
# wire. -1 is also UNKNOWN_SERVER_ERROR's code: only a probe's answer sends that error to a
# producer, and the batch it fails then reads as DELIVERY_TIMEOUT.
OUTCOME_NAMES = {-1: "DELIVERY_TIMEOUT", -2: "IDEMPOTENCE_UNSUPPORTED_FORMAT",
                 -3: "PRODUCER_CLOSED"}


def broker_id(node: str) -> int:
    """A broker's id from its node name (`b3` -> 3); -1 for any other node (a controller,
    client or the nemesis), which hosts no replica."""
    return int(node[1:]) if node[:1] == "b" and node[1:].isdigit() else -1


def error_name(code) -> str:
    """The name of a Kafka error code in a broker's answer (the number itself if unknown)."""
    return ERROR_NAMES.get(code, str(code))


def outcome_name(code) -> str:
    """The name of a producer's outcome code for a failed batch (`produce_failed`)."""
    return OUTCOME_NAMES.get(code) or error_name(code)

# -- consumer (appended) ---------------------------------------------------------------------
CONSUME = "consume"  # tp, offset (first consumed), next_offset, batches, count, leader_epoch (of
#                      the last batch), end_to_end_us: [per batch: consume time - batch created_us],
#                      read: [per batch: [base_offset, bid]]
VALIDATE_POSITION = "validate_position"  # KIP-320: tp, broker, leader_epoch (validated
#   against), offset and offset_epoch (the position asked about), error, end_epoch, end_offset
#   (the answer), action: valid | truncate (moved back to end_offset) | reset (waits for a reset) |
#   retry (an error: rest retry.backoff.ms), position (after)
FETCH_ERROR = "fetch_error"  # tp, error, broker, leader_epoch (the failed Fetch's), position,
#                              action: hint (a CurrentLeader hint was applied) | retry (a newer
#                              epoch is known: fetch again now) | backoff (rest retry.backoff.ms) |
#                              reset (OFFSET_OUT_OF_RANGE: the position waits for a reset)
RESET_POSITION = "reset_position"  # ListOffsets answer to a reset: tp, broker, leader_epoch (sent
#   as CurrentLeaderEpoch), timestamp (-2 earliest, -1 latest), error, offset and offset_epoch
#   (the answer), action: reset (the position moved to offset) | retry (an error: rest
#   retry.backoff.ms, refresh metadata), position (after)
CONSUMER_ERROR = "consumer_error"  # an exception the application's poll raises (no reset
#   policy): tp, exception (NoOffsetForPartitionException | OffsetOutOfRangeException |
#   LogTruncationException), offset (the position, -1: none), divergent ([offset, epoch], [])

# Every event kind above (each constant named in capitals whose value is a string).
ALL_KINDS = frozenset(v for k, v in list(globals().items()) if k.isupper() and isinstance(v, str))

# a `partition_state` reason, not an event kind (defined after ALL_KINDS): an election an
# admin's ElectLeaders (UNCLEAN) made, which the operator chose with the loss of what only the
# old ISR held (KIP-460)
ADMIN_UNCLEAN_ELECTION = "elect:admin_unclean"
