"""The application's calls on a consumer's partitions, as Kafka's `SubscriptionState` takes them.

Contract (mixin of `Consumer`): the consumer fetches the partitions assigned to it (`assigned`:
every partition of its topic unless `assign` names others, `assignFromUser`) that are not
paused, and whose position is valid (`hasValidPosition`: assigned, not waiting for a reset or
for validation). The calls, each as `SubscriptionState` does it at 3.7.0:
- `seek(tp, offset, ...)`: the position becomes `offset`, with the leader epoch of the record
  before it (`offset_epoch`, -1: none) and the (leader, epoch) it is held against (by default
  the metadata's current leader, `Metadata.currentLeader`); it fetches (`seekValidated`), or,
  with `unvalidated` and both epochs known, waits for validation (`seekUnvalidated` ->
  `validatePosition`). A reset or a validation it waited for is over, and so is its retry
  backoff (`nextRetryTimeMs = null`); an answer to a request sent for the old position is
  then stale and dropped (below).
- `pause(tps)` / `resume(tps)`: a paused partition is not fetched (`isFetchable`) but is still
  reset and validated (`partitionsNeedingReset`, `partitionsNeedingValidation` do not look at
  `paused`). With `consumer_keeps_paused_fetches` (2.4+, KAFKA-7548) records that arrive for a
  paused partition are kept (`FetchCollector.collectFetch`: "we add the records back to the
  completedFetches queue") and taken on `resume` if the position has not moved since; before,
  an answer for a paused partition is ignored whole, errors too (`Fetcher.parseCompletedFetch`
  at 2.3.0: "no longer fetchable").
- `assign(tps)`: a partition no longer assigned loses its state (position, pause, waits,
  kept records, buffered answers: KafkaConsumer.assign's
  `clearBufferedDataForUnassignedPartitions`); a newly assigned one has no position and
  waits for a reset by `auto_offset_reset` (INITIALIZING; there are no committed offsets),
  or, with the `none` policy, surfaces NoOffsetForPartitionException (`consumer_reset.py`).
`wanted_fetch(data, fetch_offset)` says whether one partition of a Fetch answer still counts
(`FetchCollector.initialize`, `handleInitializeSuccess`, `handleInitializeErrors`): not for a
partition without a valid position; records or OFFSET_OUT_OF_RANGE only when the Fetch asked
from the current position ("Discarding stale fetch response"). `surface(tp, exception, ...)`
records an exception the application's poll would raise as a `consumer_error` event.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V


class SubscriptionUser:
    def init_subscription(self) -> None:
        self.assigned: list[str] = list(self.tps)  # in partition order
        self.paused: list[str] = []
        self.parked: dict[str, tuple] = {}  # tp -> (fetch offset, partition data) kept while paused

    def has_valid_position(self, tp: str) -> bool:
        """`SubscriptionState.hasValidPosition`: assigned and FETCHING."""
        return tp in self.assigned and tp not in self.awaiting_reset and tp not in self.awaiting

    def seek(self, tp: str, offset: int, offset_epoch: int = -1, leader: tuple | None = None,
             unvalidated: bool = False) -> None:
        """`seekValidated`, or `seekUnvalidated` with `unvalidated` (see the module doc)."""
        self.position[tp], self.offset_epoch[tp] = offset, offset_epoch
        leader = self.meta.current_leader(tp) if leader is None else leader
        self.position_leader[tp] = leader
        self.awaiting_reset.pop(tp, None)
        self.awaiting.pop(tp, None)
        self.resting.pop(tp, None)
        # `validatePosition`: only a position with an offset epoch, held against a leader
        # epoch, waits; another fetches
        if unvalidated and self.validates and offset_epoch >= 0 and leader[1] >= 0:
            self.awaiting[tp] = leader
        self.fetch()

    def pause(self, tps) -> None:
        self.paused += [tp for tp in tps if tp not in self.paused]

    def resume(self, tps) -> None:
        """Fetch the partitions again, first taking the records kept for them while paused if
        the position is still where they were fetched from (`FetchCollector.fetchRecords`:
        "Ignoring fetched records ... since the current position is ...")."""
        self.paused = [tp for tp in self.paused if tp not in tps]
        for tp in tps:
            offset, data = self.parked.pop(tp, (None, None))
            if data is not None and self.has_valid_position(tp) and self.position[tp] == offset:
                self._consume(data)
        self.fetch()

    def assign(self, tps) -> None:
        """`assignFromUser`: the partitions kept keep their state, the others lose it; a new
        one has no position (see the module doc)."""
        for tp in self.assigned:
            if tp not in tps:
                for held in (self.awaiting_reset, self.awaiting, self.resting, self.parked,
                             self.position_leader):
                    held.pop(tp, None)
        self.paused = [tp for tp in self.paused if tp in tps]
        self.clear_buffered(tps)  # KafkaConsumer.assign, before `assignFromUser`
        for tp in self.tps:
            if tp in tps and tp not in self.assigned:
                self.offset_epoch[tp] = -1
                self.position_leader.pop(tp, None)
                self.request_reset(tp)
        self.assigned = [tp for tp in self.tps if tp in tps]
        self.fetch()

    def wanted_fetch(self, data, fetch_offset: int) -> bool:
        """Whether the answer `data` for one partition of a Fetch that asked from `fetch_offset`
        is taken (see the module doc); records for a paused partition are kept aside."""
        tp = data.tp
        if tp in self.paused and not self.protocol.consumer_keeps_paused_fetches:
            return False  # `isFetchable` before 2.4: ignored whole
        if not self.has_valid_position(tp):
            return False  # "no longer has valid position"
        stale = self.position[tp] != fetch_offset
        if data.error == E.NONE:
            if not stale and tp in self.paused:
                self.parked[tp] = (fetch_offset, data)
            return not stale and tp not in self.paused
        return not (stale and data.error == E.OFFSET_OUT_OF_RANGE)

    def surface(self, tp: str, exception: str, offset: int, divergent: tuple = ()) -> None:
        """An exception the application's next poll raises for `tp` (no reset policy, or an
        authorization error answering a reset); during
        a poll's collection (`consumer_poll.py`) the poll decides whether it is raised."""
        if self.collecting:
            self.raising = (tp, exception, offset, divergent)
            return
        self.emit(V.CONSUMER_ERROR, {"tp": tp, "exception": exception, "offset": offset,
                                     "divergent": list(divergent)})
