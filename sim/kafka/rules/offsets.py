"""How a broker answers ListOffsets for the earliest or latest offset of a partition.

Contract: pure functions of the protocol switches and plain values. `fetch_offset_for_timestamp`
is `Partition.fetchOffsetForTimestamp` (read at 2.1.0, 2.2.0, 2.6.0 and 3.7.0) behind
`KafkaApis.handleListOffsetRequestV1AndAbove` for the two sentinel timestamps the model asks
for (LATEST, EARLIEST; no timestamp search: the model's batches carry no record timestamps):

- the `getLocalLog` check of `sim.kafka.rules.epochs` first: the CurrentLeaderEpoch (ListOffsets
  v4+, KIP-320, 2.1+; the switch `fetch_epoch_check`, which also covers Fetch and
  OffsetsForLeaderEpoch) and then leadership, which every request needs but one from the
  debugging replica id (-2: `fetchOnlyFromLeader = replicaId != DEBUGGING_REPLICA_ID`);
- LATEST is the last offset the requester may read: the HW for a consumer (replica id -1: an
  isolation level is defined; READ_COMMITTED would be the last stable offset, which without
  transactions is the HW), the log end offset for a broker;
- LATEST for a consumer while the leader's HW is still below the start offset of its current
  epoch (just after an election, before the followers caught up) is OFFSET_NOT_AVAILABLE
  (KIP-207, ListOffsets v5+, 2.2+; the switch `list_offsets_hw_lag_error`), so an offset never
  goes back across a leader change; before it the lagging HW is answered;
- EARLIEST is the log start offset, with the epoch of the first leader-epoch cache entry when
  that entry starts at or below it (`UnifiedLog.fetchOffsetByTimestamp`);
- the answer names the leader epoch only from v4 (with `fetch_epoch_check`) and from 2.2
  (`list_offsets_answers_epoch`, KAFKA-7568: 2.1.0 answers none); -1 otherwise.

The partition must be hosted online first (`sim.kafka.rules.storage.get_partition_or_error`).
"""

from __future__ import annotations

from typing import NamedTuple

from sim.kafka import errors as E
from sim.kafka.rules.epochs import get_local_log

LATEST_TIMESTAMP = -1  # ListOffsetsRequest.LATEST_TIMESTAMP
EARLIEST_TIMESTAMP = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
CONSUMER_REPLICA_ID = -1  # ListOffsetsRequest.CONSUMER_REPLICA_ID
DEBUGGING_REPLICA_ID = -2  # ListOffsetsRequest.DEBUGGING_REPLICA_ID
RESET_TIMESTAMPS = {"earliest": EARLIEST_TIMESTAMP, "latest": LATEST_TIMESTAMP}


class OffsetAnswer(NamedTuple):
    """One partition's ListOffsets answer: an error, or the offset and its leader epoch."""

    error: int
    offset: int = -1  # ListOffsetsResponse.UNKNOWN_OFFSET
    leader_epoch: int = -1  # ListOffsetsResponse.UNKNOWN_EPOCH


class LogView(NamedTuple):
    """What the broker's replica knows of the partition when it answers."""

    leader_epoch: int  # the replica's leader epoch
    is_leader: bool
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    epoch_start_offset: int  # leaderEpochStartOffsetOpt: -1 when not the leader
    first_cached_epoch: tuple | None  # (epoch, start offset) of the leader-epoch cache's first entry


def fetch_offset_for_timestamp(proto, replica_id: int, timestamp: int,
                               current_leader_epoch: int, view: LogView) -> OffsetAnswer:
    """`Partition.fetchOffsetForTimestamp` for LATEST or EARLIEST (see the module contract)."""
    err = get_local_log(view.leader_epoch, view.is_leader, current_leader_epoch,
                        replica_id != DEBUGGING_REPLICA_ID, proto.fetch_epoch_check)
    if err:
        return OffsetAnswer(err)
    # ListOffsets v4+ has room for a leader epoch; 2.2 fills it (KAFKA-7568)
    with_epoch = proto.fetch_epoch_check and proto.list_offsets_answers_epoch
    if timestamp == EARLIEST_TIMESTAMP:
        first = view.first_cached_epoch
        epoch = first[0] if first is not None and first[1] <= view.log_start_offset else -1
        return OffsetAnswer(E.NONE, view.log_start_offset, epoch if with_epoch else -1)
    is_client = replica_id == CONSUMER_REPLICA_ID
    if (is_client and proto.list_offsets_hw_lag_error
            and view.epoch_start_offset > view.high_watermark):
        return OffsetAnswer(E.OFFSET_NOT_AVAILABLE)
    last_fetchable = view.high_watermark if is_client else view.log_end_offset
    return OffsetAnswer(E.NONE, last_fetchable, view.leader_epoch if with_epoch else -1)


def reset_timestamp(auto_offset_reset: str) -> int | None:
    """The ListOffsets timestamp a consumer resets a position with (`auto.offset.reset`:
    `OffsetResetStrategy` EARLIEST or LATEST); None for NONE, which resets nothing."""
    return RESET_TIMESTAMPS.get(auto_offset_reset)

