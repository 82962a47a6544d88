"""Kafka request and response bodies carried by the simulated network.

Contract: immutable records; each has `brief()`, a small JSON dict recorded in the trace's
`send` event (enough to draw sequence diagrams and read a story, never the bulk data). They are
named tuples, not frozen dataclasses: a Produce or Fetch builds one per partition, and a frozen
dataclass costs about three times as much to build. Field names follow the Kafka protocol JSON
schemas (`LeaderEpoch`, `CurrentLeaderEpoch`, ...) in snake case. Partitions are named
`tp = "<topic>-<index>"`. A field marked "truth" is not on the wire: it records what the sender
knew, so invariants can judge a run even when the protocol version in use cannot carry it.
"""

from __future__ import annotations

from typing import NamedTuple


class Batch(NamedTuple):
    """A producer record batch (the unit of append, replication, dedup)."""

    bid: str  # unique per created batch; retries reuse it
    producer: str
    count: int
    created_us: int
    pid: int = -1  # NO_PRODUCER_ID
    producer_epoch: int = -1
    base_seq: int = -1  # NO_SEQUENCE

    @property
    def max_timestamp(self) -> int:
        """The batch's max timestamp in ms, CreateTime: when the producer created it in its
        accumulator (`ProducerBatch` stamps each record with the clock as it is appended,
        `MemoryRecordsBuilder` keeps the largest). The model's producer adds a batch's records
        at once, so every record of a batch has this timestamp."""
        return self.created_us // 1000

    def with_sequence(self, pid: int, producer_epoch: int, base_seq: int) -> Batch:
        """This batch stamped with an idempotent producer's id, epoch and base sequence."""
        return Batch(self.bid, self.producer, self.count, self.created_us, pid, producer_epoch,
                     base_seq)


class PartitionState(NamedTuple):
    """One partition's state as the controller sends it (LeaderAndIsr / UpdateMetadata)."""

    tp: str
    topic_id: int
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    replicas: tuple
    # UpdateMetadata v4+ only (KIP-112, IBP 1.0): the replicas not online (dead, shutting down,
    # failed log dir; `addUpdateMetadataRequestForBrokers` at 3.7.0); LeaderAndIsr has none
    offline_replicas: tuple = ()
    # KRaft with KIP-966 only: PartitionRecord's EligibleLeaderReplicas and LastKnownElr
    elr: tuple = ()
    last_known_elr: tuple = ()


class LeaderAndIsr(NamedTuple):
    controller_id: str
    controller_epoch: int
    broker_epoch: int
    corr: int
    partitions: tuple  # of PartitionState
    full: bool = False  # KIP-516 Type FULL: every partition assigned to the broker

    def brief(self) -> dict:
        out = {"controller_epoch": self.controller_epoch,
               "parts": [[p.tp, p.leader, p.leader_epoch] for p in self.partitions]}
        if self.full:
            out["full"] = True
        return out


class UpdateMetadata(NamedTuple):
    controller_id: str
    controller_epoch: int
    corr: int
    partitions: tuple  # of PartitionState
    alive: tuple  # broker ids
    deleted: tuple = ()  # tps of deleted topics
    formats: tuple = ()  # (topic, message_format) pairs
    broker_epoch: int = -1  # the receiver's broker epoch the controller knew (KIP-380, 2.2)

    def brief(self) -> dict:
        return {"controller_epoch": self.controller_epoch, "n_parts": len(self.partitions)}


class StopReplicaPartition(NamedTuple):
    tp: str
    topic_id: int
    leader_epoch: int  # wire: -1 absent (v<3), -2 EPOCH_DURING_DELETE
    delete: bool
    issued_epoch: int  # truth: the controller's leader epoch when it issued the request


class StopReplica(NamedTuple):
    controller_id: str
    controller_epoch: int
    broker_epoch: int
    corr: int
    partitions: tuple  # of StopReplicaPartition

    def brief(self) -> dict:
        return {"controller_epoch": self.controller_epoch,
                "parts": [[p.tp, p.leader_epoch, p.delete] for p in self.partitions]}


class ControlResponse(NamedTuple):
    """Response to LeaderAndIsr, UpdateMetadata or StopReplica."""

    corr: int
    error: int
    partition_errors: tuple = ()  # (tp, error)

    def brief(self) -> dict:
        return {"corr": self.corr, "error": self.error}


class AlterPartition(NamedTuple):
    corr: int
    broker: int
    tp: str
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    broker_epoch: int = -1  # the sender's broker epoch when sent (the request's BrokerEpoch)
    # KIP-903 (AlterPartition v3, 3.5): the broker epoch of each ISR member, in `isr`'s order
    # (-1: not checked); empty when the version carries none (`NewIsrWithEpochs`)
    isr_epochs: tuple = ()
    topic_id: int = 0  # KIP-841 (v2, 3.3): the TopicId naming the topic; 0: named by `tp` (v0-v1)

    def brief(self) -> dict:
        out = {"tp": self.tp, "leader_epoch": self.leader_epoch, "isr": list(self.isr)}
        if self.isr_epochs:
            out["isr_epochs"] = list(self.isr_epochs)
        return out


class AlterPartitionResponse(NamedTuple):
    corr: int
    tp: str
    error: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple

    def brief(self) -> dict:
        return {"tp": self.tp, "error": self.error}


class ControlledShutdown(NamedTuple):
    """A ZooKeeper-mode broker asks the controller to move its leaderships away; the model's
    brokers call the controller directly (`faults.nodes.controlled_shutdown`), a probe sends
    it as Kafka's broker does."""
    corr: int
    broker: int
    broker_epoch: int = -1  # ControlledShutdown v2 (KIP-380, IBP 2.2); -1: not carried

    def brief(self) -> dict:
        return {"broker": self.broker, "broker_epoch": self.broker_epoch}


class ControlledShutdownResponse(NamedTuple):
    corr: int
    error: int
    remaining: tuple  # the partitions the broker still leads (`partitionLeadersOnBroker`)

    def brief(self) -> dict:
        return {"error": self.error, "remaining": list(self.remaining)}


class ProducePartition(NamedTuple):
    tp: str
    batch: Batch
    current_leader_epoch: int  # wire: -1 when KIP-359 is off
    sender_epoch: int  # truth: the leader epoch the producer knew when it sent
    sender_topic_id: int = -1  # truth: the topic id that epoch belongs to (-1: none known)


class Produce(NamedTuple):
    corr: int
    acks: int  # -1 all, 1, 0
    timeout_us: int
    partitions: tuple  # of ProducePartition

    def brief(self) -> dict:
        return {"corr": self.corr, "parts": [[p.tp, p.batch.bid, p.current_leader_epoch]
                                             for p in self.partitions]}


class ProducePartitionResult(NamedTuple):
    tp: str
    error: int
    base_offset: int = -1
    log_start_offset: int = -1
    current_leader: tuple | None = None  # (leader_id, leader_epoch), KIP-951


class ProduceResponse(NamedTuple):
    corr: int
    results: tuple  # of ProducePartitionResult
    node_endpoints: tuple = ()  # broker ids whose endpoints ride along (KIP-951)

    def brief(self) -> dict:
        return {"corr": self.corr, "errs": [[r.tp, r.error] for r in self.results if r.error]}


class InitProducerId(NamedTuple):
    """An idempotent producer's request for a producer id (`InitProducerIdRequest` with no
    transactional id: the broker allocates a new id at epoch 0)."""

    corr: int

    def brief(self) -> dict:
        return {"corr": self.corr}


class InitProducerIdResponse(NamedTuple):
    corr: int
    producer_id: int
    producer_epoch: int
    error: int = 0

    def brief(self) -> dict:
        return {"corr": self.corr, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "error": self.error}


class FetchPartition(NamedTuple):
    tp: str
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    log_start_offset: int = -1  # a follower's own (Fetch v5+, KIP-107); -1 from a consumer


class Fetch(NamedTuple):
    replica_id: int  # broker id of a follower, -1 for a consumer
    corr: int
    max_wait_us: int
    partitions: tuple  # of FetchPartition: all of them, or in a session those that changed
    # KIP-227 FetchMetadata (Fetch v7+): SessionId and SessionEpoch. Epoch -1 (FINAL_EPOCH) is
    # a full fetch that opens no session, what a client without sessions sends; 0 a full fetch
    # that opens one (closing `session_id`'s, if any); above 0 an incremental fetch
    session_id: int = 0
    session_epoch: int = -1
    forgotten: tuple = ()  # ForgottenTopicsData: tps the session stops fetching
    # a consumer's Fetch v11+ carries ClientMetadata (KIP-392), which lets a follower serve it
    client_metadata: bool = False
    # Fetch v15 ReplicaState.ReplicaEpoch (KIP-903): the follower's broker epoch, -1 if none
    replica_epoch: int = -1

    def brief(self) -> dict:
        out = {"corr": self.corr, "n_parts": len(self.partitions)}
        if self.session_epoch >= 0:
            out["session_id"], out["session_epoch"] = self.session_id, self.session_epoch
        if self.forgotten:
            out["n_forgotten"] = len(self.forgotten)
        return out


class FetchPartitionData(NamedTuple):
    tp: str
    error: int
    high_watermark: int = -1
    log_start_offset: int = -1
    entries: tuple = ()  # (base_offset, count, leader_epoch, Batch)
    diverging: tuple | None = None  # (epoch, end_offset)
    current_leader: tuple | None = None


class FetchResponse(NamedTuple):
    corr: int
    partitions: tuple  # of FetchPartitionData: in an incremental answer, only those with news
    node_endpoints: tuple = ()
    error: int = 0  # top-level: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
    session_id: int = 0  # the session this answer opened or continued (0: none)

    def brief(self) -> dict:
        errs = [[p.tp, p.error] for p in self.partitions if p.error]
        out = {"corr": self.corr, "n_batches": sum(len(p.entries) for p in self.partitions),
               "errs": errs}
        if self.session_id or self.error:
            out["n_parts"] = len(self.partitions)
            out["session_id"] = self.session_id
        if self.error:
            out["error"] = self.error
        return out


class MetadataRequest(NamedTuple):
    corr: int

    def brief(self) -> dict:
        return {"corr": self.corr}


class MetadataResponse(NamedTuple):
    corr: int
    brokers: tuple  # alive broker ids
    partitions: tuple  # (tp, topic_id, leader, leader_epoch)
    formats: tuple = ()  # (topic, message_format)

    def brief(self) -> dict:
        return {"corr": self.corr, "parts": [[p[0], p[2], p[3]] for p in self.partitions]}


class OffsetForLeaderPartition(NamedTuple):
    tp: str
    current_leader_epoch: int  # fences a stale leader (v2+, KIP-320)
    leader_epoch: int  # the epoch whose end offset is asked for


class OffsetsForLeaderEpoch(NamedTuple):
    """Sent by a consumer to validate its positions after a leader change (KIP-320 client
    side, KAFKA-7747); followers find divergence inside Fetch instead (`fetcher.py`)."""

    replica_id: int  # -1: a consumer
    corr: int
    partitions: tuple  # of OffsetForLeaderPartition

    def brief(self) -> dict:
        return {"corr": self.corr,
                "parts": [[p.tp, p.current_leader_epoch, p.leader_epoch] for p in self.partitions]}


class EpochEndOffset(NamedTuple):
    tp: str
    error: int
    leader_epoch: int = -1  # UNDEFINED_EPOCH
    end_offset: int = -1  # UNDEFINED_EPOCH_OFFSET


class OffsetsForLeaderEpochResponse(NamedTuple):
    corr: int
    partitions: tuple  # of EpochEndOffset

    def brief(self) -> dict:
        return {"corr": self.corr,
                "parts": [[p.tp, p.error, p.leader_epoch, p.end_offset] for p in self.partitions]}


class ListOffsetsPartition(NamedTuple):
    tp: str
    current_leader_epoch: int  # fences a stale leader (v4+, KIP-320); -1: absent
    # a time in ms (the first offset whose timestamp is at least it), or -1 LATEST_TIMESTAMP,
    # -2 EARLIEST_TIMESTAMP, -3 MAX_TIMESTAMP (v7+), -4 EARLIEST_LOCAL_TIMESTAMP (v8+)
    timestamp: int


class ListOffsets(NamedTuple):
    """Where a partition's log starts or ends (`ListOffsetsRequest`): a consumer resetting its
    position (`auto.offset.reset`) asks its leader. `replica_id` -1 is a consumer, whose
    LATEST is bounded by the HW; -2 the debugging id, which a follower may answer."""

    replica_id: int
    corr: int
    partitions: tuple  # of ListOffsetsPartition
    isolation_level: int = 0  # READ_UNCOMMITTED (the model writes no transactions)

    def brief(self) -> dict:
        return {"corr": self.corr,
                "parts": [[p.tp, p.current_leader_epoch, p.timestamp] for p in self.partitions]}


class ListOffsetsPartitionResponse(NamedTuple):
    tp: str
    error: int
    offset: int = -1  # UNKNOWN_OFFSET
    leader_epoch: int = -1  # UNKNOWN_EPOCH (v4+)
    timestamp: int = -1  # UNKNOWN_TIMESTAMP: the found record's timestamp (v1+); not traced


class ListOffsetsResponse(NamedTuple):
    corr: int
    partitions: tuple  # of ListOffsetsPartitionResponse

    def brief(self) -> dict:
        return {"corr": self.corr,
                "parts": [[p.tp, p.error, p.offset, p.leader_epoch] for p in self.partitions]}
