"""A replica's log: record batches with their leader epochs, the leader-epoch cache, HW.

Contract: durable state (survives a crash). Offsets are record offsets; a batch occupies
[base_offset, base_offset + count). `end_offset_for_epoch(e)` implements KIP-279's
OffsetsForLeaderEpoch answer: the largest epoch <= e in the cache and its end offset (the start
of the next epoch, or the log end offset); for an e older than every cached epoch, e itself and
the start of the first cached epoch; (-1, -1) for an empty cache or e < 0 (ref §1.2).
Truncation happens at batch boundaries, as in Kafka. The log also holds its producer-state
snapshots (`snapshots`: (offset, {pid: entry}), oldest first; `sim.kafka.idempotence` takes and
loads them) and its recovery point, below which a restart does not recover the log.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter

from sim.kafka.model_bug import ModelBug

_epoch_of = itemgetter(0)
_start_of = itemgetter(1)


class Log:
    def __init__(self, resolves_epoch_conflicts: bool = True):
        # KAFKA-7415 (2.1, switch `epoch_cached_on_election`): the leader-epoch cache takes
        # an entry that conflicts with the latest by removing the entries it contradicts, and
        # answers an epoch older than its first with that first entry's start; before, it
        # ignored such an entry and answered UNDEFINED
        self.resolves_epoch_conflicts = resolves_epoch_conflicts
        self.bases: list[int] = []  # base offsets, for bisect
        self.entries: list[tuple] = []  # (base_offset, count, leader_epoch, Batch)
        self.appended_us: list[int] = []  # when each entry reached this replica's log
        self.leo = 0  # log end offset
        self.log_start_offset = 0
        self.hw = 0
        # the HW as last written to replication-offset-checkpoint (what a restart reads back)
        self.checkpointed_hw = 0
        self.epochs: list[tuple[int, int]] = []  # leader-epoch cache: (epoch, start_offset)
        # below this offset the log is on disk whatever the page cache holds: Kafka flushed it
        # (`LogManager.shutdown` flushes every log) or it is what recovery kept after a power loss
        self.flushed = 0
        # `recoveryPoint`: where a restart's recovery begins (what was flushed, or the log end
        # a restart recovered to); snapshots above it go with the segments recovered
        self.recovery_point = 0
        self.snapshots: list[tuple[int, dict]] = []

    def assign_epoch_start(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (`LeaderEpochFileCache.assign`). From
        2.1 an entry of another epoch than the latest, or of the latest at an earlier start,
        first removes every entry of an epoch or start at least its own
        (`truncateAndAppend`, later `maybeTruncateNonMonotonicEntries`), so the cache stays
        strictly increasing in both; 2.0 takes only a newer epoch at or after the latest start."""
        epochs = self.epochs
        if epochs:
            last_epoch, last_start = epochs[-1]
            if epoch == last_epoch and start_offset >= last_start:
                return  # the latest epoch goes on (every append but an epoch's first)
            if not self.resolves_epoch_conflicts:
                if epoch < last_epoch or start_offset < last_start:
                    return
            else:
                epochs[:] = [(e, s) for e, s in epochs if e < epoch and s < start_offset]
        epochs.append((epoch, start_offset))

    def append(self, count: int, leader_epoch: int, batch, at_us: int) -> int:
        base = self.leo
        self.assign_epoch_start(leader_epoch, base)
        self.bases.append(base)
        self.entries.append((base, count, leader_epoch, batch))
        self.appended_us.append(at_us)
        self.leo = base + count
        return base

    def append_entry(self, entry: tuple, at_us: int) -> None:
        """Append a batch copied from the leader, keeping its offsets and epoch: it must start
        at this log's end (offsets stay contiguous)."""
        base, count, epoch, _batch = entry
        if base != self.leo:
            raise ModelBug(f"append at offset {base} to a log that ends at {self.leo}")
        self.assign_epoch_start(epoch, base)
        self.bases.append(base)
        self.entries.append(entry)
        self.appended_us.append(at_us)
        self.leo = base + count

    def set_hw(self, hw: int) -> None:
        """Move the high watermark, which never passes the log end."""
        if hw > self.leo:
            raise ModelBug(f"high watermark {hw} past the log end {self.leo}")
        self.hw = hw

    def first_appended_after(self, t_us: int) -> int:
        """The base offset of the first entry appended after `t_us`, or the log end offset
        (entries are appended in time order)."""
        i = bisect_right(self.appended_us, t_us)
        return self.bases[i] if i < len(self.bases) else self.leo

    def flush(self) -> None:
        """Everything appended so far is on disk (`UnifiedLog.flush`)."""
        self.flushed = self.recovery_point = self.leo

    def unflushed_from(self, cutoff_us: int) -> int:
        """Where a power loss cuts the log when the OS holds back what was appended after
        `cutoff_us`: the first such batch, never below what is known to be on disk."""
        return max(self.first_appended_after(cutoff_us), self.flushed)

    def written_back(self, now_us: int, expire_us: int, tick_us: int) -> int:
        """The offset up to which the kernel's writeback has put the log on disk by `now_us`.
        The flusher wakes every `tick_us` (counted from time 0) and writes a file whose oldest
        dirty page is `expire_us` old, all of its dirty pages at once (Linux's
        vm.dirty_writeback_centisecs and vm.dirty_expire_centisecs); an append after that
        dirties the file again. Each log is one file, so each has its own cycle."""
        times = self.appended_us
        i = bisect_left(self.bases, self.flushed)  # the first batch not known to be on disk
        durable = self.flushed
        while i < len(times):
            written_at = -(-(times[i] + expire_us) // tick_us) * tick_us  # the tick after expiry
            if written_at > now_us:
                break
            i = bisect_right(times, written_at, lo=i)
            durable = self.bases[i] if i < len(self.bases) else self.leo
        return durable

    def read(self, from_offset: int, max_batches: int) -> tuple:
        """Batches from the one holding `from_offset` on (LogSegment.read starts at the first
        batch whose last offset is >= the fetch offset): a reader whose position falls inside
        a batch gets that whole batch, and skips its records below the position itself."""
        i = bisect_right(self.bases, from_offset) - 1
        if i < 0 or self.bases[i] + self.entries[i][1] <= from_offset:
            i += 1
        return tuple(self.entries[i:i + max_batches])

    def last_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        # the cache's epochs strictly increase (`assign_epoch_start` appends only a larger one
        # and truncation keeps a prefix), so the largest epoch <= `epoch` is found by bisection
        found = bisect_right(self.epochs, epoch, key=_epoch_of) - 1
        if found < 0:
            # older than every cached epoch (a log that began in a later epoch, or lost its
            # start): `LeaderEpochFileCache.endOffsetFor` answers the requested epoch and the
            # start of the first epoch it knows, so the asker truncates to that start; 2.0
            # answered UNDEFINED, so the asker fell back to its HW
            if self.epochs and epoch >= 0 and self.resolves_epoch_conflicts:
                return (epoch, self.epochs[0][1])
            return (-1, -1)
        if found + 1 < len(self.epochs):
            return (self.epochs[found][0], self.epochs[found + 1][1])
        if self.epochs[found][0] != epoch:
            # newer than every cached epoch: "The requested epoch is larger than any known
            # epoch" (`endOffsetFor`), UNDEFINED. A consumer of a recreated topic asks so
            return (-1, -1)
        return (epoch, self.leo)

    def end_offset_for_epoch_v0(self, epoch: int) -> int:
        """KIP-101's answer, before KIP-279 (OffsetsForLeaderEpoch v0, 0.11-1.1,
        `LeaderEpochFileCache.endOffsetFor`): the log end offset if `epoch` is the latest
        cached epoch, else the start offset of the first cached epoch above it, whether or not
        `epoch` itself is cached; -1 (UNDEFINED_EPOCH_OFFSET) when no epoch above it is cached
        or it is older than every cached epoch (ref §4 row 3)."""
        epochs = self.epochs
        if epochs and epoch == epochs[-1][0]:
            return self.leo
        if not epochs or epoch < epochs[0][0]:
            return -1
        later = bisect_right(epochs, epoch, key=_epoch_of)
        return epochs[later][1] if later < len(epochs) else -1

    def truncate_to(self, offset: int) -> bool:
        """Drop every batch at or above `offset`; returns whether anything was dropped."""
        i = bisect_left(self.bases, offset)
        epochs = [(e, s) for e, s in self.epochs if s < offset]  # truncateFromEnd, even if no batch goes
        changed = i < len(self.entries) or epochs != self.epochs
        self.epochs = epochs
        if i < len(self.entries):
            del self.bases[i:]
            del self.entries[i:]
            del self.appended_us[i:]
            self.leo = self.entries[-1][0] + self.entries[-1][1] if self.entries else self.log_start_offset
        self.hw = min(self.hw, self.leo)
        self.flushed = min(self.flushed, self.leo)
        self.recovery_point = min(self.recovery_point, self.leo)
        # `truncateAndReload` deletes the snapshots above the new log end
        self.snapshots = [s for s in self.snapshots if s[0] <= self.leo]
        return changed

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every batch and the leader-epoch cache; the log restarts empty at `offset`
        (`UnifiedLog.truncateFullyAndStartAt`)."""
        self.bases.clear()
        self.entries.clear()
        self.appended_us.clear()
        self.epochs = []
        self.snapshots = []  # `ProducerStateManager.truncateFullyAndStartAt` deletes them all
        self.leo = self.log_start_offset = self.hw = self.flushed = self.recovery_point = offset

    def advance_start(self, offset: int) -> bool:
        """Retention / DeleteRecords: the log start moves to `offset` (at most the log end)
        and the batches wholly below it go. A batch holding the new log start stays: Kafka
        deletes whole segments below the log start, so the start may fall inside a batch
        (`UnifiedLog.maybeIncrementLogStartOffset`)."""
        if offset <= self.log_start_offset:
            return False
        i = bisect_right(self.bases, offset) - 1  # the batch starting at or below offset
        if i < 0 or self.entries[i][0] + self.entries[i][1] <= offset:
            i += 1  # ... ends at or below it, so it goes too
        del self.bases[:i]
        del self.entries[:i]
        del self.appended_us[:i]
        self.log_start_offset = min(offset, self.leo)
        self._truncate_epochs_from_start(self.log_start_offset)
        return True

    def _truncate_epochs_from_start(self, start: int) -> None:
        """`LeaderEpochFileCache.truncateFromStart` (`clearAndFlushEarliest` before 2.1, to the
        same effect), called whenever the log start moves: the entries at or below `start` go,
        and the last of them comes back starting at `start`, so the cache never names an offset
        below the log start."""
        gone = bisect_right(self.epochs, start, key=_start_of)
        if gone:
            self.epochs = [(self.epochs[gone - 1][0], start)] + self.epochs[gone:]

    def offset_of_batch(self, base_offset: int) -> tuple | None:
        i = bisect_left(self.bases, base_offset)
        if i < len(self.bases) and self.bases[i] == base_offset:
            return self.entries[i]
        return None
