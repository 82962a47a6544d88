"""The application's poll: Fetch answers buffered until the application collects them.

Contract (mixin of `Consumer`): in a whole run the application always waits in `poll`, so a
Fetch answer is collected as it arrives (`polls_when_told` False, the default:
`Consumer._on_fetch_response` takes it at once). With `polls_when_told` (a probe's consumer
state) each partition of a Fetch answer is buffered, in the answer's order, as a completed
fetch (`AbstractFetch.handleFetchSuccess` at 3.7.0, `Fetcher.sendFetches` at 2.4.0; a KIP-951
leader hint is applied there, on arrival), and only `poll()` collects, as
`FetchCollector.collectFetch` at 3.7.0 and `Fetcher.fetchedRecords` at 2.4.0 (the same steps):
- the next completed fetch is initialized (`initialize`/`initializeCompletedFetch`): dropped for
  a partition without a valid position (before 2.4 also for a paused one, `isFetchable`), or
  records fetched from another offset than the position ("Discarding stale fetch response");
  an error is handled then (`handleInitializeErrors`: metadata update, offset reset, or with no
  reset policy OffsetOutOfRangeException); an exception reaches the application only if the
  poll has returned nothing yet, and the completed fetch stays buffered, to raise again on the
  next poll, while it carries records or something was returned before it;
- records are returned from the position on, at most `max_poll_records` per poll over all
  partitions (`fetchRecords`): none for a partition no longer assigned or fetchable or whose
  position moved (the completed fetch is drained); a paused partition's completed fetch goes
  back to the buffer (2.4+, KAFKA-7548) to be collected once resumed; a batch without records
  (`Batch.count` 0: v2 keeps a compacted batch's offsets) returns none, and once the answer is
  drained the position moves past its last batch with that batch's epoch
  (`CompletedFetch.nextFetchedRecord` at 3.7.0, `Fetcher.PartitionRecords` at 2.4.0: "Message
  format v2 preserves the last offset in a batch even if the last record is removed");
- `last_returned[tp]` keeps what the last return of records for tp held (the offsets from, to,
  and the batches), for a probe to list the records and their leader epochs;
- a partition with a buffered completed fetch is not fetched again (`fetchablePartitions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.kafka import errors as E
from sim.kafka import vocab as V

UNLIMITED = 2**31 - 1  # Integer.MAX_VALUE: FetcherTest's `buildFetcher()` default


@dataclass
class CompletedFetch:
    """One partition's answer in the buffer (`CompletedFetch`)."""

    broker: int
    data: Any  # FetchPartitionData
    fetch_offset: int  # the offset the Fetch asked from
    epoch: int  # the CurrentLeaderEpoch the Fetch carried
    endpoints: tuple
    hinted: bool  # a KIP-951 hint was applied on arrival
    next_offset: int  # `nextFetchOffset`
    initialized: bool = False
    consumed: bool = False


class FetchCollector:
    def init_poll(self) -> None:
        self.polls_when_told = False
        self.max_poll_records = UNLIMITED
        self.completed: list[CompletedFetch] = []  # `completedFetches`, in arrival order
        self.next_in_line: CompletedFetch | None = None
        self.collecting = False
        self.raising: tuple | None = None  # what `surface` raised during a collection
        self.last_returned: dict[str, tuple] = {}  # tp -> (from, to, batches) last returned

    def buffer_fetch(self, broker: int, data, fp, endpoints: tuple) -> None:
        """Buffer one partition's answer (`polls_when_told`)."""
        offset, epoch = (fp.fetch_offset, fp.current_leader_epoch) if fp else (-1, -1)
        hinted = data.error != E.NONE and self.apply_fetch_hint(broker, data, endpoints)
        self.completed.append(CompletedFetch(broker, data, offset, epoch, endpoints, hinted,
                                             offset))

    def buffered(self, tp: str) -> bool:
        """`bufferedPartitions`: a completed fetch for tp waits, or is being read."""
        nxt = self.next_in_line
        return (nxt is not None and not nxt.consumed and nxt.data.tp == tp) or any(
            cf.data.tp == tp for cf in self.completed)

    def is_fetchable(self, tp: str) -> bool:
        """`SubscriptionState.isFetchable`: a valid position, not paused."""
        return self.has_valid_position(tp) and tp not in self.paused

    def clear_buffered(self, tps) -> None:
        """`clearBufferedDataForUnassignedPartitions` (KafkaConsumer.assign)."""
        self.completed = [cf for cf in self.completed if cf.data.tp in tps]
        if self.next_in_line is not None and self.next_in_line.data.tp not in tps:
            self.next_in_line = None

    def poll(self) -> None:
        """The application's poll: collect (see the module doc), then fetch again."""
        remaining, returned, paused_back = self.max_poll_records, False, []
        while remaining > 0:
            nxt = self.next_in_line
            if nxt is None or nxt.consumed:
                if not self.completed:
                    break
                cf = self.completed[0]
                if not cf.initialized:
                    kept, raised = self._initialize(cf)
                    if raised is not None:
                        if not returned and not cf.data.entries:
                            self.completed.pop(0)  # no records: not stuck on it
                        if not returned:  # else the next poll raises it
                            self.surface(*raised)
                        break
                    cf = cf if kept else None
                self.next_in_line = cf
                self.completed.pop(0)
            elif nxt.data.tp in self.paused and self.protocol.consumer_keeps_paused_fetches:
                paused_back.append(nxt)  # "Skipping fetching records ... because it is paused"
                self.next_in_line = None
            else:
                taken, advanced = self._fetch_records(nxt, remaining)
                remaining -= taken
                returned = returned or taken > 0 or advanced
        self.completed += paused_back
        self.fetch()

    def _initialize(self, cf: CompletedFetch) -> tuple[bool, tuple | None]:
        """`initialize`: (whether the records are to be read, the exception raised)."""
        data, tp = cf.data, cf.data.tp
        if tp in self.paused and not self.protocol.consumer_keeps_paused_fetches:
            return False, None  # before 2.4, `parseCompletedFetch`: "no longer fetchable"
        if not self.has_valid_position(tp):
            return False, None  # "no longer has valid position"
        stale = self.position[tp] != cf.fetch_offset
        if data.error == E.NONE:
            cf.initialized = True
            return not stale, None
        if stale and data.error == E.OFFSET_OUT_OF_RANGE:
            return False, None  # "Discarding stale fetch response"
        self.collecting, self.raising = True, None
        try:
            self.on_fetch_error(cf.broker, data, cf.endpoints, cf.epoch, cf.hinted)
        finally:
            self.collecting = False
        return False, self.raising

    def _fetch_records(self, cf: CompletedFetch, most: int) -> tuple[int, bool]:
        """`fetchRecords`: (records returned, whether the position moved)."""
        tp = cf.data.tp
        if not self.is_fetchable(tp) or cf.next_offset != self.position[tp]:
            cf.consumed = True  # drained: not assigned, not fetchable, or an obsolete request
            return 0, False
        entries = cf.data.entries
        records = [(off, e) for e in entries if e[3].count for off in range(e[0], e[0] + e[1])
                   if off >= cf.next_offset]
        taken = records[:most]
        last = taken[-1][1] if taken else None
        next_offset = taken[-1][0] + 1 if taken else cf.next_offset
        if len(taken) < most:
            cf.consumed = True  # `nextFetchedRecord` found no more: drained
            if entries and entries[-1][0] + entries[-1][1] > next_offset:
                last = entries[-1]  # past batches without records: the last batch's end
                next_offset = last[0] + last[1]
        if last is None:
            return 0, False
        cf.next_offset = next_offset
        self._take(tp, taken, next_offset, last[2])
        return len(taken), True

    def _take(self, tp: str, taken: list, next_offset: int, last_epoch: int) -> None:
        """The position moves to `next_offset` with the leader epoch of the last batch read as
        its offset epoch (`CompletedFetch.lastEpoch`), past the records returned, if any."""
        self.position[tp], self.offset_epoch[tp] = next_offset, last_epoch
        if not taken:
            return
        batches = []
        for _off, e in taken:
            if not batches or batches[-1] is not e:
                batches.append(e)
        self.last_returned[tp] = (taken[0][0], taken[-1][0] + 1, tuple(batches))
        self.emit(V.CONSUME, {"tp": tp, "offset": taken[0][0], "next_offset": next_offset,
                              "batches": len(batches), "count": len(taken),
                              "leader_epoch": batches[-1][2],
                              "end_to_end_us": [self.now_us - e[3].created_us for e in batches],
                              "read": [[e[0], e[3].bid] for e in batches]})
