"""Fetch, ListOffsets and OffsetForLeaderEpoch between kio's entities and the model's.

Contract: pure functions, as `answers` for the write side. `to_model_fetch` makes a consumer's
Fetch a full fetch without a session (the model answers FINAL_EPOCH fetches in full; a client
that asked to open a session is told session 0, which Kafka's clients accept as "none"):
forgotten topics and rack ids are ignored. `fetch_values` builds the records of each answered
partition from the batches the model returns: the client's own bytes when a real client wrote
the batch (`batches` maps its id to them), with the base offset and partition leader epoch the
leader assigned; a batch the model's own producers wrote gets bytes built for it
(`records.synthesize`). ListOffsets and OffsetForLeaderEpoch map field for field; a field a
version lacks (CurrentLeaderEpoch before ListOffsets v4 and OffsetForLeaderEpoch v2) is -1.
ListOffsets' times move between a real client's clock and the model's (`model_time_ms`,
`wire_time_ms`): a record's timestamp is its batch's creation in the model, which for a real
client's batch is the max timestamp the client wrote in it (`answers.create_time_us`).
"""

from __future__ import annotations

from sim.kafka.messages import (
    Fetch,
    FetchPartition,
    ListOffsets,
    ListOffsetsPartition,
    OffsetForLeaderPartition,
    OffsetsForLeaderEpoch,
)
from sim.kafka.wire.records import synthesize, with_offset
from sim.kafka.wire.shims import EPOCH_S


def _tp(topic: str, index) -> str:
    return f"{topic}-{int(index)}"


def to_model_fetch(body, corr: int) -> tuple[Fetch, list]:
    """(the model's Fetch, [tp] in request order)."""
    parts, order = [], []
    for topic in body.topics:
        for p in topic.partitions:
            tp = _tp(topic.topic, p.partition)
            order.append(tp)
            parts.append(FetchPartition(tp, int(p.fetch_offset),
                                        int(getattr(p, "current_leader_epoch", -1)), -1))
    max_wait_us = int(body.max_wait.total_seconds() * 1_000_000)
    return Fetch(int(body.replica_id), corr, max_wait_us, tuple(parts)), order


def fetch_values(resp, batches: dict, empty: bytes | None = None) -> dict:
    """FetchResponse values from the model's answer; a partition without records carries
    `empty`: null in a simulated run (as it always has), b"" in a live one, as Kafka writes
    `MemoryRecords.EMPTY` (kafka-python's consumer cannot read a null)."""
    topics: dict[str, list] = {}
    for p in resp.partitions:
        name, _, index = p.tp.rpartition("-")
        records = b"".join(_batch_bytes(e, batches) for e in p.entries)
        topics.setdefault(name, []).append(
            {"partition_index": int(index), "error_code": p.error,
             "high_watermark": p.high_watermark, "last_stable_offset": p.high_watermark,
             "log_start_offset": p.log_start_offset, "aborted_transactions": [],
             "preferred_read_replica": -1, "records": records or empty})
    return {"error_code": resp.error, "session_id": 0,
            "responses": [{"topic": n, "partitions": ps} for n, ps in topics.items()]}


def _batch_bytes(entry, batches: dict) -> bytes:
    base_offset, count, leader_epoch, batch = entry
    raw = batches.get(batch.bid)
    if raw is None:
        return synthesize(batch, base_offset, leader_epoch)
    return with_offset(raw, base_offset, leader_epoch)


def model_time_ms(timestamp: int) -> int:
    """A client's ListOffsets time as the model's clock reads it: a real client's clock is the
    run's plus `EPOCH_S` (`shims`), a sentinel (-1 LATEST ... -4 EARLIEST_LOCAL) stays as it
    is, and a time before the run started is 0 (every record is at least that old)."""
    return timestamp if timestamp < 0 else max(0, timestamp - EPOCH_S * 1000)


def wire_time_ms(timestamp: int) -> int:
    """A found record's timestamp as a real client's clock reads it (-1: none found)."""
    return timestamp if timestamp < 0 else timestamp + EPOCH_S * 1000


def to_model_list_offsets(body, corr: int) -> ListOffsets:
    parts = []
    for topic in body.topics:
        for p in topic.partitions:
            parts.append(ListOffsetsPartition(_tp(topic.name, p.partition_index),
                                              int(getattr(p, "current_leader_epoch", -1)),
                                              model_time_ms(int(p.timestamp))))
    return ListOffsets(int(body.replica_id), corr, tuple(parts),
                       int(getattr(body, "isolation_level", 0)))


def list_offsets_values(resp) -> dict:
    topics: dict[str, list] = {}
    for p in resp.partitions:
        name, _, index = p.tp.rpartition("-")
        topics.setdefault(name, []).append(
            {"partition_index": int(index), "error_code": p.error,
             "timestamp": wire_time_ms(p.timestamp),
             "offset": p.offset, "leader_epoch": p.leader_epoch})
    return {"topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]}


def to_model_offsets_for_leader_epoch(body, corr: int) -> OffsetsForLeaderEpoch:
    parts = []
    for topic in body.topics:
        for p in topic.partitions:
            parts.append(OffsetForLeaderPartition(_tp(topic.topic, p.partition),
                                                  int(getattr(p, "current_leader_epoch", -1)),
                                                  int(p.leader_epoch)))
    return OffsetsForLeaderEpoch(int(getattr(body, "replica_id", -1)), corr, tuple(parts))


def offsets_for_leader_epoch_values(resp) -> dict:
    topics: dict[str, list] = {}
    for p in resp.partitions:
        name, _, index = p.tp.rpartition("-")
        topics.setdefault(name, []).append(
            {"partition": int(index), "error_code": p.error, "leader_epoch": p.leader_epoch,
             "end_offset": p.end_offset})
    return {"topics": [{"topic": n, "partitions": ps} for n, ps in topics.items()]}
