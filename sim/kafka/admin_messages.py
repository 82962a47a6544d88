"""Admin requests to a broker and their answers: DeleteRecords (KIP-107).

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
