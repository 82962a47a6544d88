"""How a broker answers ListOffsets: a partition's earliest or latest offset, or the first
offset at or after a timestamp.

Contract: pure functions of the protocol switches and plain values. `fetch_offset_for_timestamp`
is `Partition.fetchOffsetForTimestamp` over `UnifiedLog.fetchOffsetByTimestamp` (`Log` before
3.0; read at 2.1.0, 2.2.0, 2.6.0, 3.0.0, 3.7.0 and 3.8.0) behind
`KafkaApis.handleListOffsetRequestV1AndAbove`:

- the `getLocalLog` check of `sim.kafka.rules.epochs` first: the CurrentLeaderEpoch (ListOffsets
  v4+, KIP-320, 2.1+; the switch `fetch_epoch_check`, which also covers Fetch and
  OffsetsForLeaderEpoch) and then leadership, which every request needs but one from the
  debugging replica id (-2: `fetchOnlyFromLeader = replicaId != DEBUGGING_REPLICA_ID`);
- the last offset the requester may read is the HW for a consumer (replica id -1: an isolation
  level is defined; READ_COMMITTED would be the last stable offset, which without transactions
  is the HW), the log end offset for a broker;
- LATEST is that last offset, with the partition's leader epoch. For a consumer while the
  leader's HW is still below the start offset of its current epoch (just after an election,
  before the followers caught up) it is OFFSET_NOT_AVAILABLE (KIP-207, ListOffsets v5+, 2.2+;
  the switch `list_offsets_hw_lag_error`), so an offset never goes back across a leader change;
  before it the lagging HW is answered;
- EARLIEST is the log start offset, with the epoch of the first leader-epoch cache entry when
  that entry starts at or below it; EARLIEST_LOCAL (-4, KIP-405, v8, 3.5+: the switch
  `list_offsets_earliest_local`) is the same without tiered storage, which the model has not
  (`!remoteLogEnabled()`). Neither is bounded by the last offset;
- a time in ms is the first offset at or above the log start whose record's timestamp is at
  least it (`FileRecords.searchForTimestamp`), with its batch's leader epoch; MAX_TIMESTAMP (-3,
  KIP-734, v7, 3.0+) the record of the largest timestamp, the first batch that has it (the
  switch `list_offsets_max_timestamp` says which of its offsets and epochs). Both are answered
  only below the last offset; else, with the lagging HW above (2.2+), OFFSET_NOT_AVAILABLE,
  or no offset at all: NONE with offset -1 and epoch -1 (`buildErrorResponse(Errors.NONE)`);
- a record's timestamp is its batch's (`Batch.max_timestamp`): the model's batches are the unit
  of a log, their records created together;
- the answer names the leader epoch only from v4 (with `fetch_epoch_check`) and from 2.2
  (`list_offsets_answers_epoch`, KAFKA-7568: 2.1.0 answers none); -1 otherwise.

The partition must be hosted online first (`sim.kafka.rules.storage.get_partition_or_error`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sim.kafka import errors as E
from sim.kafka.rules.epochs import get_local_log

LATEST_TIMESTAMP = -1  # ListOffsetsRequest.LATEST_TIMESTAMP
EARLIEST_TIMESTAMP = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
MAX_TIMESTAMP = -3  # ListOffsetsRequest.MAX_TIMESTAMP (KIP-734)
EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP (KIP-405)
CONSUMER_REPLICA_ID = -1  # ListOffsetsRequest.CONSUMER_REPLICA_ID
DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID
RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


class OffsetAnswer(NamedTuple):
    """One partition's ListOffsets answer: an error, or the offset, its leader epoch and the
    timestamp of the record found (-1 for the earliest and latest offsets)."""

    error: int
    offset: int = -1  # ListOffsetsResponse.UNKNOWN_OFFSET
    leader_epoch: int = -1  # ListOffsetsResponse.UNKNOWN_EPOCH
    timestamp: int = -1  # ListOffsetsResponse.UNKNOWN_TIMESTAMP


class LogView(NamedTuple):
    """What the broker's replica knows of the partition when it answers."""

    leader_epoch: int  # the replica's leader epoch
    is_leader: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    epoch_start_offset: int  # leaderEpochStartOffsetOpt: -1 when not the leader
    first_cached_epoch: tuple | None  # (epoch, start offset) of the leader-epoch cache's first entry
    latest_cached_epoch: int = -1  # the leader-epoch cache's latest epoch, -1 when empty
    entries: Sequence = ()  # the log's batches, (base offset, count, leader epoch, Batch)


def fetch_offset_for_timestamp(proto, replica_id: int, timestamp: int,
                               current_leader_epoch: int, view: LogView) -> OffsetAnswer:
    """`Partition.fetchOffsetForTimestamp` (see the module contract)."""
    err = get_local_log(view.leader_epoch, view.is_leader, current_leader_epoch,
                        replica_id != DEBUGGING_REPLICA_ID, proto.fetch_epoch_check)
    if err:
        return OffsetAnswer(err)
    answer = _find(proto, replica_id == CONSUMER_REPLICA_ID, timestamp, view)
    if proto.fetch_epoch_check and proto.list_offsets_answers_epoch:
        return answer  # ListOffsets v4+ answers with a leader epoch, from 2.2
    return answer._replace(leader_epoch=-1)


def _find(proto, is_client: bool, timestamp: int, view: LogView) -> OffsetAnswer:
    """The answer before the version drops its leader epoch."""
    if timestamp == EARLIEST_TIMESTAMP or (timestamp == EARLIEST_LOCAL_TIMESTAMP
                                           and proto.list_offsets_earliest_local):
        first = view.first_cached_epoch
        epoch = first[0] if first is not None and first[1] <= view.log_start_offset else -1
        return OffsetAnswer(E.NONE, view.log_start_offset, epoch)
    # only a client's request (an isolation level is defined) is refused while the HW lags
    lagging = (is_client and proto.list_offsets_hw_lag_error
               and view.epoch_start_offset > view.high_watermark)
    last_fetchable = view.high_watermark if is_client else view.log_end_offset
    if timestamp == LATEST_TIMESTAMP:
        if lagging:
            return OffsetAnswer(E.OFFSET_NOT_AVAILABLE)
        return OffsetAnswer(E.NONE, last_fetchable, view.leader_epoch)
    if timestamp == MAX_TIMESTAMP and proto.list_offsets_max_timestamp != "none":
        found = max_timestamp_offset(view.entries, proto.list_offsets_max_timestamp,
                                     view.latest_cached_epoch)
    else:  # before KIP-734 (KIP-405) a -3 (-4) is searched for as any timestamp is
        found = search_by_timestamp(view.entries, view.log_start_offset, timestamp)
    if found is not None and found.offset < last_fetchable:
        return found
    return OffsetAnswer(E.OFFSET_NOT_AVAILABLE if lagging else E.NONE)


def search_by_timestamp(entries: Sequence, log_start_offset: int,
                        target: int) -> OffsetAnswer | None:
    """The first record at or above the log start whose timestamp is at least `target`, with
    its batch's leader epoch (`FileRecords.searchForTimestamp`); None when there is none. A
    record's timestamp is its batch's, so it is the batch's first record past the log start."""
    for base, count, epoch, batch in entries:
        if base + count > log_start_offset and batch.max_timestamp >= target:
            return OffsetAnswer(E.NONE, max(base, log_start_offset), max(epoch, -1),
                                batch.max_timestamp)
    return None


def max_timestamp_offset(entries: Sequence, mode: str, latest_epoch: int) -> OffsetAnswer | None:
    """MAX_TIMESTAMP: the first batch holding the largest timestamp (a segment keeps the first
    one it saw, `maxTimestampAndOffsetSoFar`); None for an empty log. Its offset and epoch by
    `mode` (`list_offsets_max_timestamp`): `first_record` the batch's first record (the leader
    takes the first record of the batch's largest timestamp, `LogValidator`) and the cache's
    latest epoch; `last_offset` the batch's last offset (3.7.0's `LogValidator` gives a v2
    batch's) and the latest epoch; `batch_epoch` the first record and the batch's epoch
    (KAFKA-16310: the batch is read back, `offsetOfMaxTimestamp`, `partitionLeaderEpoch`)."""
    best = None
    for entry in entries:
        if best is None or entry[3].max_timestamp > best[3].max_timestamp:
            best = entry
    if best is None:
        return None
    base, count, epoch, batch = best
    offset = base + count - 1 if mode == "last_offset" else base
    leader_epoch = max(epoch, -1) if mode == "batch_epoch" else latest_epoch
    return OffsetAnswer(E.NONE, offset, leader_epoch, batch.max_timestamp)


def reset_timestamp(auto_offset_reset: str) -> int | None:
    """The ListOffsets timestamp a consumer resets a position with (`auto.offset.reset`:
    `OffsetResetStrategy` EARLIEST or LATEST); None for NONE, which resets nothing."""
    return RESET_TIMESTAMPS.get(auto_offset_reset)
