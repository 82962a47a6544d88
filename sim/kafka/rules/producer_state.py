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
