"""Broker-side idempotent producer state (ProducerStateManager) and the append check.

Contract: producer state lives with the log (`log.producers`: pid -> `ProducerEntry`), is
updated by leader appends and follower replication alike (so it survives leader changes, ref
§2.2 last bullet), is committed only after a successful append (KAFKA-6683), and keeps the last
5 batches' metadata (NUM_BATCHES_TO_RETAIN, ref §0, §2.1). `check_idempotent_append` follows the
algorithm of ref §2.2 with the version answers of §2.4 selected by the protocol switches.
"""

from __future__ import annotations

from sim.kafka import errors as E

NUM_BATCHES_TO_RETAIN = 5


class ProducerEntry:
    __slots__ = ("epoch", "batches", "last_offset", "last_us")

    def __init__(self, epoch: int):
        self.epoch = epoch
        self.batches: list[tuple] = []  # (first_seq, last_seq, first_offset, last_offset)
        self.last_offset = -1
        self.last_us = 0


def producers_of(log) -> dict:
    producers = getattr(log, "producers", None)
    if producers is None:
        producers = log.producers = {}
    return producers


def check_idempotent_append(broker, p, batch) -> tuple[int, int | None]:
    """(error, duplicate_base_offset) for a client batch; (NONE, None) means append it."""
    if batch.pid < 0:
        return E.NONE, None
    proto = broker.protocol
    entry = producers_of(p.log).get(batch.pid)
    last_seq = batch.base_seq + batch.count - 1
    if entry is not None and batch.producer_epoch == entry.epoch:
        for first_seq, b_last, first_off, _last_off in entry.batches:
            if first_seq == batch.base_seq and b_last == last_seq:
                if proto.mutant == "no_dedup_cache":  # planted bug: the duplicate is appended
                    return E.NONE, None
                return E.NONE, first_off
    if entry is not None and batch.producer_epoch < entry.epoch:
        return E.INVALID_PRODUCER_EPOCH, None
    if entry is None:
        if batch.base_seq == 0:
            return E.NONE, None
        return _unknown_producer_answer(proto), None
    if batch.producer_epoch != entry.epoch:
        return (E.OUT_OF_ORDER_SEQUENCE_NUMBER if batch.base_seq != 0 else E.NONE), None
    if proto.mutant == "no_sequence_check":  # planted bug: any sequence is accepted
        return E.NONE, None
    expected = entry.batches[-1][1] + 1 if entry.batches else 0
    if batch.base_seq == expected or not entry.batches and proto.unknown_producer == "accept":
        return E.NONE, None
    if (proto.old_duplicate == "duplicate_sequence" and entry.batches
            and last_seq < entry.batches[0][0]):
        return E.DUPLICATE_SEQUENCE_NUMBER, None
    return E.OUT_OF_ORDER_SEQUENCE_NUMBER, None


def _unknown_producer_answer(proto) -> int:
    """Unknown producer with seq != 0, by version (ref §2.4)."""
    if proto.unknown_producer == "out_of_order" or proto.mutant == "spurious_out_of_order":
        return E.OUT_OF_ORDER_SEQUENCE_NUMBER
    if proto.unknown_producer == "unknown_producer_id":
        return E.UNKNOWN_PRODUCER_ID
    return E.NONE


def record_append(log, batch, base_offset: int, now_us: int,
                  retain: int = NUM_BATCHES_TO_RETAIN) -> None:
    """Update producer state after a successful append (leader or follower). Expiration counts
    from `now_us`, the time of the append; Kafka counts from the batch's own timestamp (its
    maxTimestamp), which is earlier by the batch's time in the accumulator and in flight.
    The entry keeps the metadata of its last `retain` batches (the profile's
    `idempotent_batches`)."""
    if batch.pid < 0:
        return
    producers = producers_of(log)
    entry = producers.get(batch.pid)
    if entry is None or batch.producer_epoch > entry.epoch:
        entry = producers[batch.pid] = ProducerEntry(batch.producer_epoch)
    last_off = base_offset + batch.count - 1
    entry.batches.append((batch.base_seq, batch.base_seq + batch.count - 1, base_offset, last_off))
    if len(entry.batches) > retain:
        del entry.batches[:-retain]
    entry.last_offset = last_off
    entry.last_us = now_us


def rebuild(log, retain: int = NUM_BATCHES_TO_RETAIN) -> None:
    """Recompute producer state from the log (after truncation).

    A rebuild does not make a producer younger: a producer that was known keeps its time of
    last append, and one that was not is dated by its last batch's timestamp, as Kafka's reload
    from the log does. Producers whose every batch retention already removed are kept as they
    were: their state outlives their data (it comes back from the snapshot, ref §2.3), unless a
    0.11-2.3 broker evicted it already."""
    before = producers_of(log)
    log.producers = {pid: e for pid, e in before.items() if e.last_offset < log.log_start_offset}
    for base, _count, _epoch, batch in log.entries:
        known = before.get(batch.pid)
        record_append(log, batch, base, known.last_us if known else batch.created_us, retain)


def evict_below_log_start(log) -> list[int]:
    """0.11-2.3 `truncateHead`: drop producers whose last offset fell below logStartOffset,
    and the remaining producers' batch metadata below it (ref §2.3), so a retry of a batch
    retention deleted is no longer recognised as a duplicate. Returns the evicted ids."""
    producers = producers_of(log)
    start = log.log_start_offset
    gone = sorted(pid for pid, e in producers.items() if e.last_offset < start)
    for pid in gone:
        del producers[pid]
    for entry in producers.values():
        entry.batches = [b for b in entry.batches if b[3] >= start]
    return gone


def expire_producers(log, now_us: int, expiration_ms: int) -> list[int]:
    producers = producers_of(log)
    gone = sorted(pid for pid, e in producers.items() if now_us - e.last_us >= expiration_ms * 1000)
    for pid in gone:
        del producers[pid]
    return gone
