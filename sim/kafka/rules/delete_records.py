"""How a leader takes a DeleteRecords (KIP-107, 0.11+), read at 3.7.0.

Contract: pure functions of plain values.
- `delete_records_on_leader` is `Partition.deleteRecordsOnLeader` with the log's
  `maybeIncrementLogStartOffset` check: a replica that does not lead answers
  NOT_LEADER_OR_FOLLOWER; offset -1 (HIGH_WATERMARK) means the HW; an offset below 0 or above
  the HW is OFFSET_OUT_OF_RANGE; else the log start may move up to it (never down).
- `low_watermark` is `Partition.lowWatermarkIfLeader`: the least log start of the leader and
  of every follower the metadata cache lists alive (-1 for one not heard from since this
  replica became leader, `UnifiedLog.UnknownOffset`).
- `delete_records_pending` is the test of `ReplicaManager.delayedDeleteRecordsRequired` and
  `DelayedDeleteRecords.tryComplete` for an accepted partition: its low watermark is still
  below the offset asked for.
"""

from __future__ import annotations

from sim.kafka import errors as E

HIGH_WATERMARK = -1


def delete_records_on_leader(is_leader: bool, offset: int, high_watermark: int) -> tuple[int, int]:
    """(error, the offset the log start moves to)."""
    if not is_leader:
        return E.NOT_LEADER_OR_FOLLOWER, -1
    converted = high_watermark if offset == HIGH_WATERMARK else offset
    if converted < 0 or converted > high_watermark:
        return E.OFFSET_OUT_OF_RANGE, -1
    return E.NONE, converted


def low_watermark(log_start: int, followers) -> int:
    """`followers`: (alive in the metadata cache, last log start it sent) per follower."""
    lw = log_start
    for alive, start in followers:
        if alive and start < lw:
            lw = start
    return lw


def delete_records_pending(low_watermark_now: int, requested: int) -> bool:
    return low_watermark_now < requested
