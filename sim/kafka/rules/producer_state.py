"""The broker's idempotent append check (`ProducerStateManager` / `ProducerAppendInfo`).

Contract: `check_producer_append(proto, entry, batch)` is a pure function of the protocol
switches, the producer's state on this log (`entry`: its `epoch` and the metadata of its last
`batches`, `(first_seq, last_seq, first_offset, last_offset)`, or None when the producer is
unknown) and the batch's `pid`, `producer_epoch`, `base_seq` and `count`. It returns
`(error, duplicate_base_offset)`: `(NONE, None)` appends the batch, `(NONE, offset)` answers a
duplicate of a cached batch with its original offset (ref §2.2, with the version answers of
§2.4 selected by `unknown_producer` and `old_duplicate`).
"""

from __future__ import annotations

from sim.kafka import errors as E

APPEND = (E.NONE, None)
MAX_SEQUENCE = 2**31 - 1  # Integer.MAX_VALUE: sequences wrap to 0 after it


def increment_sequence(sequence: int, increment: int) -> int:
    """`DefaultRecordBatch.incrementSequence`: `sequence + increment`, wrapping past
    Integer.MAX_VALUE to 0, on the client and the broker alike."""
    if sequence > MAX_SEQUENCE - increment:
        return increment - (MAX_SEQUENCE - sequence) - 1
    return sequence + increment


def last_sequence(batch) -> int:
    """The sequence of a batch's last record (`RecordBatch.lastSequence`)."""
    return increment_sequence(batch.base_seq, batch.count - 1)


def check_producer_append(proto, entry, batch) -> tuple[int, int | None]:
    """`ProducerStateManager.findDuplicateBatch` then `ProducerAppendInfo.checkProducerEpoch`
    and `checkSequence`."""
    if batch.pid < 0:
        return APPEND
    last_seq = last_sequence(batch)
    if entry is not None and batch.producer_epoch == entry.epoch:
        for first_seq, b_last, first_off, _last_off in entry.batches:
            if first_seq == batch.base_seq and b_last == last_seq:
                return E.NONE, first_off
    if entry is not None and batch.producer_epoch < entry.epoch:
        return E.INVALID_PRODUCER_EPOCH, None
    if entry is None:
        if batch.base_seq == 0:
            return APPEND
        return unknown_producer_answer(proto), None
    if batch.producer_epoch != entry.epoch:
        return (E.OUT_OF_ORDER_SEQUENCE_NUMBER if batch.base_seq != 0 else E.NONE), None
    return check_sequence(proto, entry, batch.base_seq, last_seq), None


def check_sequence(proto, entry, base_seq: int, last_seq: int) -> int:
    """`ProducerAppendInfo.checkSequence` for a known producer at its current epoch: the next
    sequence is taken; with no batch cached (retention removed them) any sequence is taken
    from 2.5 (KIP-360, `unknown_producer = accept`); a batch older than the cached ones is
    DUPLICATE_SEQUENCE_NUMBER on 1.0.0/1.0.1, OUT_OF_ORDER_SEQUENCE_NUMBER otherwise."""
    expected = increment_sequence(entry.batches[-1][1], 1) if entry.batches else 0  # inSequence
    if base_seq == expected or not entry.batches and proto.unknown_producer == "accept":
        return E.NONE
    if (proto.old_duplicate == "duplicate_sequence" and entry.batches
            and last_seq < entry.batches[0][0]):
        return E.DUPLICATE_SEQUENCE_NUMBER
    return E.OUT_OF_ORDER_SEQUENCE_NUMBER


def unknown_producer_answer(proto) -> int:
    """An unknown producer's batch with a sequence other than 0, by version (ref §2.4):
    OUT_OF_ORDER_SEQUENCE_NUMBER (0.11), UNKNOWN_PRODUCER_ID (1.0-2.4), taken (2.5+)."""
    if proto.unknown_producer == "out_of_order":
        return E.OUT_OF_ORDER_SEQUENCE_NUMBER
    if proto.unknown_producer == "unknown_producer_id":
        return E.UNKNOWN_PRODUCER_ID
    return E.NONE


def snapshots_kept(offsets: list[int], log_start: int, log_end: int,
                   recovery_point: int) -> list[int]:
    """The producer-state snapshots a restarting broker's log keeps, of those at `offsets`: a
    recovery from `recovery_point` deleted the snapshots above it with the segments it
    recovered (`recoverSegment`'s `rebuildProducerState` from each segment's base offset), and
    `truncateAndReload` deletes those above the log end and at or below the log start
    (`ProducerStateManager.truncateAndReload`, 0.11.0.0, 2.4.0, 3.7.0). The latest kept is the
    one loaded; with none the producer state is rebuilt from the log start."""
    top = min(log_end, recovery_point)
    return [o for o in offsets if log_start < o <= top]


def loaded_from_snapshot(entry, now_us: int, expiration_ms: int, log_start: int,
                         drops_non_retained: bool) -> bool:
    """Whether a snapshot's entry is loaded (`loadFromSnapshot`): not if the producer expired
    (`isProducerExpired`: `currentTimeMs - lastTimestamp >= producer.id.expiration.ms`, every
    release), nor, 0.11-2.3, if its last offset is below the log start (`isProducerRetained`,
    dropped in 2.4 with the eviction on retention: `drops_non_retained`)."""
    if now_us - entry.last_us >= expiration_ms * 1000:
        return False
    return not (drops_non_retained and entry.last_offset < log_start)
