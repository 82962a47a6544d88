"""Broker-side idempotent producer state (ProducerStateManager) and the append check.

Contract: producer state lives with the log (`log.producers`: pid -> `ProducerEntry`), is
updated by leader appends and follower replication alike (so it survives leader changes, ref
§2.2 last bullet), is committed only after a successful append (KAFKA-6683), and keeps the last
5 batches' metadata (NUM_BATCHES_TO_RETAIN, ref §0, §2.1). The append check itself is a rule
(`sim.kafka.rules.producer_state.check_producer_append`). Snapshots of it are taken at a clean
shutdown and at the end of a restart's load (`take_snapshot`), and a restart loads the latest
one it keeps and replays the log above it (`reload_producer_state`).
"""

from __future__ import annotations

from sim.kafka.rules.producer_state import last_sequence, loaded_from_snapshot, snapshots_kept

NUM_BATCHES_TO_RETAIN = 5
# snapshots a log keeps: Kafka keeps those of its last two segments
# (`Log.deleteSnapshotsAfterRecoveryPointCheckpoint`, 2.4.0); the model's log is one segment
MAX_SNAPSHOTS = 2


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


def record_append(log, batch, base_offset: int, now_us: int,
                  retain: int = NUM_BATCHES_TO_RETAIN) -> None:
    """Update producer state after a successful append (leader or follower). Expiration counts
    from `now_us`, the time of the append; Kafka counts from the batch's own timestamp (its
    maxTimestamp), which is earlier by the batch's time in the accumulator and in flight.
    The entry keeps the metadata of its last `retain` batches (the profile's
    `idempotent_batches`). A batch of another producer epoch starts the entry afresh, a lower
    one too: a leader refuses a lower epoch before it appends, but a follower (or a reload from
    the log) only warns and takes it (`checkProducerEpoch` for REPLICATION, then
    `maybeUpdateProducerEpoch`'s `!=`, 3.7.0; `maybeUpdateEpoch` at 1.0.0)."""
    if batch.pid < 0:
        return
    producers = producers_of(log)
    entry = producers.get(batch.pid)
    if entry is None or batch.producer_epoch != entry.epoch:
        entry = producers[batch.pid] = ProducerEntry(batch.producer_epoch)
    last_off = base_offset + batch.count - 1
    entry.batches.append((batch.base_seq, last_sequence(batch), base_offset, last_off))
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
    """0.11-2.3 `truncateHead`: drop producers whose last offset fell below logStartOffset
    (ref §2.3). Returns the evicted ids. A producer that stays keeps all its batch metadata,
    below the log start too, so a retry of a batch retention deleted is still recognised as a
    duplicate: the same method's `removeBatchesOlderThan(logStartOffset)` is a no-op at 1.0.0
    and 2.3.0 (`batchMetadata.dropWhile(...)` on a `mutable.Queue` returns a new queue, which
    is discarded), and 2.4.0 removed it."""
    producers = producers_of(log)
    start = log.log_start_offset
    gone = sorted(pid for pid, e in producers.items() if e.last_offset < start)
    for pid in gone:
        del producers[pid]
    return gone


def expire_producers(log, now_us: int, expiration_ms: int) -> list[int]:
    producers = producers_of(log)
    gone = sorted(pid for pid, e in producers.items() if now_us - e.last_us >= expiration_ms * 1000)
    for pid in gone:
        del producers[pid]
    return gone


def take_snapshot(log) -> None:
    """`ProducerStateManager.takeSnapshot` at the log end: nothing unless the log end passed
    the latest snapshot (or, with none, the log start): `lastMapOffset > lastSnapOffset`
    (testSkipSnapshotIfOffsetUnchanged). A snapshot keeps each producer's last batch only: the
    snapshot schema has one sequence range and one offset range per producer (0.11.0.0-3.7.0;
    testRecoverFromSnapshotUnfinishedTransaction, 3.7.0: "The snapshot only persists the last
    appended batch metadata")."""
    snaps = log.snapshots
    last = snaps[-1][0] if snaps else log.log_start_offset
    if log.leo <= last:
        return
    snaps.append((log.leo, {pid: _last_batch_only(e) for pid, e in producers_of(log).items()}))
    del snaps[:-MAX_SNAPSHOTS]


def _last_batch_only(entry: ProducerEntry) -> ProducerEntry:
    copy = ProducerEntry(entry.epoch)
    copy.batches = entry.batches[-1:]
    copy.last_offset, copy.last_us = entry.last_offset, entry.last_us
    return copy


def reload_producer_state(log, now_us: int, expiration_ms: int, retain: int,
                          drops_non_retained: bool) -> None:
    """A restarted broker's producer state for `log` (`Log.loadProducerState` at 0.11.0.0 and
    2.4.0, `UnifiedLog.rebuildProducerState` at 3.7.0): the snapshots recovery and
    `truncateAndReload` delete go (`snapshots_kept`), the latest left is loaded without its
    expired producers (`loaded_from_snapshot`), and the log above it (above the log start when
    none is left) is replayed as a follower's appends are, each producer dated by its last
    batch's timestamp (`loadProducersFromLog`: the batch's maxTimestamp) and never expired by
    the replay. A snapshot is then taken at the log end (2.4.0 and 3.7.0; 0.11.0.0 takes none
    there; the model takes it in every release), and the recovery point is the log end
    (`recoverLog`)."""
    kept = snapshots_kept([o for o, _ in log.snapshots], log.log_start_offset, log.leo,
                          log.recovery_point)
    log.snapshots = [s for s in log.snapshots if s[0] in kept]
    log.producers = {}
    start = log.log_start_offset
    if log.snapshots:
        start, entries = log.snapshots[-1]
        for pid, entry in entries.items():
            if loaded_from_snapshot(entry, now_us, expiration_ms, log.log_start_offset,
                                    drops_non_retained):
                log.producers[pid] = _last_batch_only(entry)
    for base, _count, _epoch, batch in log.read(start, len(log.entries)):
        record_append(log, batch, base, batch.max_timestamp * 1000, retain)
    take_snapshot(log)
    log.recovery_point = log.leo
