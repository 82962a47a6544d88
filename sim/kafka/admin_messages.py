"""Admin requests to a broker and their answers: DeleteRecords (KIP-107), ElectLeaders (KIP-460).

Contract: immutable records with `brief()`, as `sim.kafka.messages`' bodies.
"""

from __future__ import annotations

from typing import NamedTuple

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK: delete up to the high watermark
INVALID_LOW_WATERMARK = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK


class DeleteRecordsPartition(NamedTuple):
    tp: str
    offset: int  # the new log start, or HIGH_WATERMARK


class DeleteRecords(NamedTuple):
    corr: int
    timeout_us: int  # TimeoutMs: how long to wait for every replica's log start
    partitions: tuple  # of DeleteRecordsPartition

    def brief(self) -> dict:
        return {"corr": self.corr, "offsets": [[p.tp, p.offset] for p in self.partitions]}


class DeleteRecordsPartitionResult(NamedTuple):
    tp: str
    error: int
    low_watermark: int = INVALID_LOW_WATERMARK


class DeleteRecordsResponse(NamedTuple):
    corr: int
    results: tuple  # of DeleteRecordsPartitionResult

    def brief(self) -> dict:
        return {"corr": self.corr, "results": [[r.tp, r.error, r.low_watermark]
                                               for r in self.results]}


class ElectLeadersRequest(NamedTuple):
    """ElectLeaders (KIP-460; KIP-183's ElectPreferredLeaders at 2.2-2.3): from an admin client
    to a broker, and from that broker to its controller (the model's controllers stand apart:
    Kafka's broker calls its own `KafkaController.electLeaders`)."""

    corr: int
    election_type: str  # PREFERRED or UNCLEAN
    partitions: tuple | None  # None: every partition (a null TopicPartitions)
    timeout_ms: int = 60_000  # TimeoutMs: how long the broker's purgatory may wait

    def brief(self) -> dict:
        return {"corr": self.corr, "election_type": self.election_type,
                "partitions": None if self.partitions is None else list(self.partitions)}


class ElectLeadersResult(NamedTuple):
    """The controller's answer to a broker's hand-over (Kafka's `ElectLeadersCallback`: per
    partition an error, or the leader it elected)."""

    corr: int
    results: tuple  # of (tp, error, leader): the leader elected when error is NONE, else -1

    def brief(self) -> dict:
        return {"corr": self.corr, "results": [list(r) for r in self.results]}


class ElectLeadersResponse(NamedTuple):
    corr: int
    error: int
    partition_errors: tuple  # of (tp, error)

    def brief(self) -> dict:
        return {"corr": self.corr, "error": self.error,
                "partition_errors": [list(p) for p in self.partition_errors]}
