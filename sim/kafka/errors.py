"""Kafka error codes used by the model (exact values, ref §0)."""

UNKNOWN_SERVER_ERROR = -1  # a request the broker failed on (the model's: KAFKA-9839)
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5  # the model's brokers never send it; a probe's answer may
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NETWORK_EXCEPTION = 13  # a client's request whose connection closed under it (`NetworkClient`)
# an InitProducerId answer's retriable errors (a KRaft broker with no block of producer ids
# answers the first, `producer_ids`; a probe's answer may give any):
# CoordinatorLoadInProgressException, CoordinatorNotAvailableException and
# NotCoordinatorException are RetriableExceptions
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
BROKER_NOT_AVAILABLE = 8  # a ZooKeeper-mode controller's answer to a ControlledShutdown
STALE_CONTROLLER_EPOCH = 11
TOPIC_AUTHORIZATION_FAILED = 29  # likewise: a probe's ListOffsets answer to a consumer
CLUSTER_AUTHORIZATION_FAILED = 31  # the model's brokers never send it; a probe's answer may
UNSUPPORTED_VERSION = 35  # likewise
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
INVALID_REQUIRED_ACKS = 21  # a Produce whose acks is not -1, 0 or 1
NOT_CONTROLLER = 41
INVALID_REQUEST = 42  # KRaft: an AlterPartition from a broker that is not the leader
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53  # likewise
KAFKA_STORAGE_ERROR = 56
UNKNOWN_PRODUCER_ID = 59
FETCH_SESSION_ID_NOT_FOUND = 70  # KIP-227 (1.1)
INVALID_FETCH_SESSION_EPOCH = 71  # KIP-227 (1.1)
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
STALE_BROKER_EPOCH = 77
OFFSET_NOT_AVAILABLE = 78  # KIP-207 (2.2): ListOffsets v5+
INCONSISTENT_VOTER_SET = 94  # KRaft up to 3.7: a quorum request from or to a non-voter
INVALID_UPDATE_VERSION = 95
UNKNOWN_TOPIC_ID = 100  # KIP-516: a request naming its topic by an id the receiver does not know
INELIGIBLE_REPLICA = 107  # KIP-841 (3.3)
NEW_LEADER_ELECTED = 108  # KRaft: an AlterPartition that completed a reassignment moving its leader
DUPLICATE_VOTER = 126  # KIP-853 (3.9): AddRaftVoter of a node already in the voter set
VOTER_NOT_FOUND = 127  # KIP-853 (3.9): RemoveRaftVoter of a node outside the voter set
# Client-side outcomes that are not broker error codes (negative: never on the wire).
DELIVERY_TIMEOUT = -1
IDEMPOTENCE_UNSUPPORTED_FORMAT = -2
PRODUCER_CLOSED = -3  # a forced close failed the batch ("Producer is closed forcefully.")

# Sentinels (ref §0)
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2
NO_LEADER = -1

# Errors after which a client refreshes metadata: InvalidMetadataException subclasses (ref §0,
# §3.2); LeaderNotAvailableException is one too, and so retriable, and so is
# KafkaStorageException (`KafkaStorageException extends InvalidMetadataException` at 1.0.0,
# 2.6.0 and 3.7.0)
INVALID_METADATA = frozenset({UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
                              FENCED_LEADER_EPOCH, KAFKA_STORAGE_ERROR})
# Errors that put an idempotent producer in its fatal state (`TransactionManager
# .maybeTransitionToErrorState` at 1.0.0, 2.4.0, 2.5.0 and 3.7.0: ClusterAuthorizationException,
# TransactionalIdAuthorizationException, UnsupportedVersionException; ProducerFencedException,
# which INVALID_PRODUCER_EPOCH meant for a Produce before KIP-588 (2.7), is the switch
# `invalid_producer_epoch_fatal`: `rules.client_producer.producer_fatal`)
PRODUCER_FATAL = frozenset({CLUSTER_AUTHORIZATION_FAILED, UNSUPPORTED_VERSION,
                            TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
# the authorization errors an InitProducerId answer may carry (`rules.client_producer
# .init_producer_id_abortable`)
AUTHORIZATION_FAILED = frozenset({CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
RETRIABLE = frozenset({UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
                       REQUEST_TIMED_OUT, NETWORK_EXCEPTION,
                       NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                       FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
                       KAFKA_STORAGE_ERROR, COORDINATOR_LOAD_IN_PROGRESS,
                       COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})
INCONSISTENT_TOPIC_ID = 103
# KRaft: a registration with a new incarnation while the old one's session is valid (KIP-631)
DUPLICATE_BROKER_REGISTRATION = 101
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
# a KRaft controller's answers to admin requests (CreateTopics, CreatePartitions, ElectLeaders,
# AlterPartitionReassignments)
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_TOPIC_EXCEPTION = 17  # ZooKeeper mode: an election of a topic queued for deletion
PREFERRED_LEADER_NOT_AVAILABLE = 80
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
BROKER_ID_NOT_REGISTERED = 102  # UnregisterBroker of a broker with no registration
