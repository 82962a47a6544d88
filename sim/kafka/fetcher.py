"""Follower side of replication: one fetcher per (follower, leader) pair, many partitions each.

Contract (mixin of `Broker`): a follower fetches every partition it follows from that
partition's leader with `CurrentLeaderEpoch` (KIP-320), at most one Fetch in flight per leader,
as Kafka's ReplicaFetcherThread does. Errors back the partition off for
`replica.fetch.backoff.ms`, except FENCED_LEADER_EPOCH for the epoch the follower still has: its
leader has moved on, and the partition waits out of the fetcher for the LeaderAndIsr of the new
epoch (`onPartitionFenced`); OFFSET_OUT_OF_RANGE starts a reset by ListOffsets, during which
no Fetch goes to that leader (`sim.kafka.fetcher_reset`). With fetch sessions (KIP-227, 1.1+
and IBP 1.1+) each fetcher keeps a session with its leader (`FetchSessionHandler`): its first
Fetch names every ready partition, later ones only those whose fetch state changed since the
last (kept as a set of dirty partitions, plus the backoffs that end), and forget those that
stopped being ready; a session error, a lost Fetch or an answer whose partitions do not fit
the session (not read) makes the next one full again. How it finds where its log diverges
from its leader's depends on `follower_truncation` (ref §1.2, §1.4 step 4, §4 rows 1, 3, 5):

- `diverging_epoch` (2.8+, KAFKA-10554, inter-broker protocol 2.7+): every Fetch names the
  epoch of the follower's last entry (`LastFetchedEpoch`, Fetch v12) and a `DivergingEpoch`
  answer truncates the log to min(leader's end offset for that epoch, our end offset for it).
  A follower that missed a LeaderAndIsr still learns of a divergence from its next Fetch.
- `kip279` (2.1-2.7): the same answer, but asked once per leader-epoch change, whether or not
  the leader changed (KAFKA-7164): only the first Fetch after `makeFollower` names an epoch,
  standing in for the OffsetsForLeaderEpoch v1+ round trip that preceded fetching. A leader
  with no answer for that epoch sends the follower back to its own HW (its initial fetch
  offset). Between epoch changes nothing is checked: a follower that never hears of an epoch
  change keeps appending what its old leader serves, unless KIP-320's `CurrentLeaderEpoch`
  check fences its Fetch (KAFKA-6880, the zombie follower).
- `kip279_leader_change` (2.0): the same answer, asked only when the leader changed, as in
  `kip101` (`Partition.makeFollower` at 2.0.0 skips a new epoch of the same leader).
- `kip101` (0.11-1.1): asked only when the leader changed, and answered by the end offset alone
  (OffsetsForLeaderEpoch v0): the follower truncates to min(that offset, its log end), or to
  its own HW when the leader has no answer (`ReplicaFetcherThread.maybeTruncate`, 0.11).
- `high_watermark` (before 0.11): a follower whose leader changed truncates to its own HW at
  once, before it fetches (`ReplicaManager.makeFollowers`, 0.10), and no Fetch names an epoch.
  A follower's HW trails its leader's by a Fetch round trip, so this drops records the old
  leader had already committed (KAFKA-1211, the bug KIP-101 fixed).
"""

from __future__ import annotations

import heapq

from sim.core.deadlines import Deadlines
from sim.kafka import errors as E
from sim.kafka import fetch_session as session_state
from sim.kafka import vocab as V
from sim.kafka.fetch_session import FetchSessionHandler
from sim.kafka.idempotence import rebuild, record_append, take_snapshot
from sim.kafka.messages import Fetch, FetchPartition
from sim.kafka.model_bug import ModelBug
from sim.kafka.rules.fetch_session import FINAL_EPOCH
from sim.kafka.rules.inter_broker import follower_fetch_carries_epoch, follower_fetch_sessions
from sim.kafka.rules.replication import (
    epoch_answer_stale,
    fenced_fetch_stops_fetching,
    offset_truncation_state,
)


class Fetcher:
    def init_fetchers(self) -> None:
        self.fetchers: dict[int, dict[str, int]] = {}  # leader id -> tp -> backoff until (us)
        self.fetch_inflight: dict[int, int] = {}  # leader id -> corr
        # leader id -> (the last Fetch's FetchPartitions, those of them sent while truncating)
        self.fetch_sent: dict[int, tuple] = {}
        self.fetch_corr = 0
        self.fetch_deadlines = Deadlines(self, "fetch_timeout")
        # kip101, kip279_leader_change, kip279: partitions yet to learn where to truncate
        self.truncating: set[str] = set()
        # with `fetch_sessions` (KIP-227): leader id -> the session with it, and a heap of
        # (backoff end, tp) whose end a session build must notice
        self.fetch_handlers: dict[int, FetchSessionHandler] = {}
        self.fetch_backoffs: dict[int, list] = {}
        # no replica Fetch goes out while True (a KRaft broker's `fetch_held`)
        self.fetch_held = False
        self.init_offset_resets()

    def add_to_fetcher(self, tp: str, leader: int, leader_changed: bool = True,
                       new_epoch: bool = True) -> None:
        self.remove_from_fetchers(tp)
        self.fetchers.setdefault(leader, {})[tp] = 0
        self.fetch_state_changed(tp)
        # *when* a follower is re-added is its own release's (`makes_follower`: before
        # KAFKA-7164, 2.1, only on a new leader); *how* it truncates then is what the IBP lets
        # it ask (`initialFetchOffset`: OffsetsForLeaderEpoch from IBP 0.11, its HW below)
        mode = self.replication.follower_truncation
        if leader_changed or new_epoch:  # not a probe's initial state
            if mode == "high_watermark":
                p = self.partitions[tp]
                self._truncate(p, p.log.hw, "high_watermark")
            elif mode != "diverging_epoch" or self.rules.truncates_to_hw_unasked(
                    self.protocol, mode, self.partitions[tp].log.last_epoch()):
                self.truncating.add(tp)  # OffsetsForLeaderEpoch (kip101, kip279*), or its HW
        # fetch once the whole LeaderAndIsr is applied, as `addFetcherForPartitions` runs after
        # every partition of the request: one Fetch then names all of them, not just the first
        self.set_timer(0, "fetch_retry", leader)

    def remove_from_fetchers(self, tp: str) -> None:
        for parts in self.fetchers.values():
            parts.pop(tp, None)
        self.fetch_state_changed(tp)

    def fetch_state_changed(self, tp: str) -> None:
        """`tp`'s fetch state (log end and start, last epoch, leader epoch, truncation, backoff,
        which fetcher has it) may have changed: each session's next build looks at it again."""
        for handler in self.fetch_handlers.values():
            handler.dirty.add(tp)

    def _fetch_partitions(self, tps) -> dict:
        """What a Fetch names for each of `tps` now (tp -> FetchPartition, in their order); the
        Fetch version, hence whether it carries CurrentLeaderEpoch and LastFetchedEpoch, is
        the IBP's, decided once per Fetch."""
        names_epoch, replication = self.rules.fetch_last_fetched_epoch, self.replication
        carries_epoch = follower_fetch_carries_epoch(self.protocol, self.store.ibp)
        carries_start = self.protocol.follower_log_start_from_leader  # Fetch v5+ (KIP-107)
        out = {}
        for tp in tps:
            p = self.partitions[tp]
            last_epoch = names_epoch(replication, tp in self.truncating, p.log.last_epoch())
            out[tp] = FetchPartition(tp, p.log.leo, p.leader_epoch if carries_epoch else -1,
                                     last_epoch, p.log.log_start_offset if carries_start else -1)
        return out

    def _maybe_fetch(self, leader: int) -> None:
        if leader in self.fetch_inflight or self.fetch_held or self.resetting(leader):
            return  # one Fetch at a time, none while the thread waits on a ListOffsets
        parts = self.fetchers.get(leader)
        if not parts:
            # an idle fetcher thread is shut down, its session with it (the leader keeps it)
            self.fetch_handlers.pop(leader, None)
            self.fetch_backoffs.pop(leader, None)
            return
        if self.truncating:
            self._truncate_unasked(parts)
        if follower_fetch_sessions(self.protocol, self.store.ibp):
            self._fetch_in_session(leader, parts)
            return
        now = self.now_us
        ready = [tp for tp in sorted(parts) if parts[tp] <= now]
        if not ready:
            self.set_timer(min(parts.values()) - now, "fetch_retry", leader)
            return
        reqs = tuple(self._fetch_partitions(ready).values())
        sent_truncating = self._asked_epochs(self.truncating.intersection(ready)) \
            if self.truncating else ()
        self._send_fetch(leader, reqs, {fp.tp: fp for fp in reqs}, sent_truncating)

    def _truncate_unasked(self, parts: dict) -> None:
        """Truncate to its HW each ready truncating partition of `parts` its leader is not asked
        about (a log with no epoch), as `doWork`'s `maybeTruncate` does before the Fetch."""
        now, mode, unasked = self.now_us, self.replication.follower_truncation, \
            self.rules.truncates_to_hw_unasked
        for tp in sorted(self.truncating.intersection(parts)):
            p = self.partitions[tp]
            if parts[tp] <= now and unasked(self.protocol, mode, p.log.last_epoch()):
                self.truncating.discard(tp)
                self._truncate(p, p.log.hw, "high_watermark")
                self.fetch_state_changed(tp)

    def _fetch_in_session(self, leader: int, parts: dict) -> None:
        """KIP-227: a full Fetch opens the session; later ones name only the partitions whose
        fetch state changed and forget those no longer ready (backing off, or moved), as
        `FetchSessionHandler.Builder.build` does with the partitions `buildFetch` offers."""
        handler = self.fetch_handlers.get(leader)
        if handler is None:
            handler = self.fetch_handlers[leader] = FetchSessionHandler()
        now = self.now_us
        if handler.full:
            send, forget = handler.build_full(list(self._fetch_partitions(
                tp for tp in sorted(parts) if parts[tp] <= now).values()))
        else:
            backoffs = self.fetch_backoffs.get(leader)
            while backoffs and backoffs[0][0] <= now:
                handler.dirty.add(heapq.heappop(backoffs)[1])
            ready = self._fetch_partitions(tp for tp in handler.dirty
                                           if parts.get(tp, now + 1) <= now)
            changes = {tp: ready.get(tp) for tp in sorted(handler.dirty)}
            handler.dirty.clear()
            send, forget = handler.build_incremental(changes)
            if session_state.CHECK_AGAINST_FULL_READS:
                self._check_session_build(leader, handler, parts)
        if not handler.parts and not forget:
            self.set_timer(min(parts.values()) - now, "fetch_retry", leader)
            return
        sent = handler.parts
        sent_truncating = self._asked_epochs(tp for tp in self.truncating if tp in sent) \
            if self.truncating else ()
        self._send_fetch(leader, send, sent, sent_truncating, handler.session_id,
                         handler.epoch, forget)

    def _asked_epochs(self, tps) -> dict:
        """tp -> the leader epoch of each truncating partition a Fetch asks about (the
        OffsetsForLeaderEpoch request's CurrentLeaderEpoch, whatever the wire carries)."""
        return {tp: self.partitions[tp].leader_epoch for tp in tps}

    def _check_session_build(self, leader: int, handler, parts: dict) -> None:
        """The session a build leaves must be what a full build would name."""
        now = self.now_us
        want = self._fetch_partitions(tp for tp in sorted(parts) if parts[tp] <= now)
        if want != handler.parts:
            missed = sorted(tp for tp in set(want) | set(handler.parts)
                            if want.get(tp) != handler.parts.get(tp))
            raise ModelBug(f"{self.name}: fetch session with b{leader} out of step on {missed}")

    def _send_fetch(self, leader: int, reqs: tuple, sent: dict, sent_truncating,
                    session_id: int = 0, session_epoch: int = FINAL_EPOCH,
                    forget: tuple = ()) -> None:
        """Send a Fetch; `sent` is every partition it fetches (tp -> FetchPartition), those
        it names and, in a session, those the leader holds for it."""
        self.fetch_corr += 1
        wait_us = self.cluster.replica_fetch_wait_max_ms * 1000
        self.fetch_inflight[leader] = self.fetch_corr
        self.fetch_sent[leader] = (sent, sent_truncating)
        self.send(f"b{leader}", "Fetch", Fetch(self.id, self.fetch_corr, wait_us, reqs,
                                               session_id, session_epoch, forget,
                                               replica_epoch=self.broker_epoch))
        self.fetch_deadlines.add((leader, self.fetch_corr), self.now_us + wait_us + V.FETCH_TIMEOUT_US)

    def _back_off(self, leader: int, tp: str) -> None:
        """Rest a partition `replica.fetch.backoff.ms`; a session build notices its end."""
        until = self.now_us + V.FETCH_BACKOFF_US
        self.fetchers[leader][tp] = until
        if follower_fetch_sessions(self.protocol, self.store.ibp):
            heapq.heappush(self.fetch_backoffs.setdefault(leader, []), (until, tp))

    def _fetch_failed(self, leader: int) -> None:
        """A Fetch to `leader` was lost (`FetchSessionHandler.handleError`): the next is full."""
        handler = self.fetch_handlers.get(leader)
        if handler is not None:
            handler.handle_error()

    def on_disconnect(self, peer: str) -> None:
        """The leader died: forget the lost Fetch and back its partitions off."""
        if not peer.startswith("b"):
            return
        leader = int(peer[1:])
        if self.resetting(leader):
            self.reset_lost(leader)
        elif self.fetch_inflight.pop(leader, None) is not None:
            self._fetch_failed(leader)
            for tp in sorted(self.fetchers.get(leader, {})):
                self._back_off(leader, tp)
            self._maybe_fetch(leader)

    def on_fetcher_timer(self, name: str, data) -> None:
        if name == "fetch_retry":
            self._maybe_fetch(data)
        elif name == "fetch_timeout":
            for leader, corr in self.fetch_deadlines.expired():
                if self.fetch_inflight.get(leader) == corr:
                    del self.fetch_inflight[leader]
                    self.reset_connection(f"b{leader}")  # NetworkClient drops a timed-out connection
                    self._fetch_failed(leader)
                    self._maybe_fetch(leader)
                elif self.reset_inflight.get(leader, (None,))[0] == corr:
                    self.reset_connection(f"b{leader}")
                    self.reset_lost(leader)

    def on_fetch_response(self, msg) -> None:
        leader = int(msg.src[1:])
        resp = msg.body
        if self.fetch_inflight.get(leader) != resp.corr:
            return
        del self.fetch_inflight[leader]
        self.fetch_deadlines.cancel((leader, resp.corr))
        handler = self.fetch_handlers.get(leader)
        if handler is not None and not handler.handle_response(
                resp.error, resp.session_id, [data.tp for data in resp.partitions]) \
                or resp.error:  # a session error, or partitions out of the session: not read
            self._maybe_fetch(leader)
            return
        self.read_fetch_answer(leader, resp.partitions)

    def read_fetch_answer(self, leader: int, answer: tuple) -> None:
        """Apply the Fetch answer's partitions `answer` in order, as `processFetchRequest` does;
        an OFFSET_OUT_OF_RANGE one stops the reading there until its reset is done, and the
        rest waits for it (`sim.kafka.fetcher_reset`); then the next Fetch may go."""
        handler = self.fetch_handlers.get(leader)
        parts = self.fetchers.get(leader, {})
        added, hws, starts = [], [], []
        truncating = self.truncating
        sent, sent_truncating = self.fetch_sent[leader]
        reset = None
        for i, data in enumerate(answer):
            fp = sent.get(data.tp)
            p = self.partitions.get(data.tp)
            if fp is None or p is None or data.tp not in parts or p.leader != leader:
                continue
            if handler is not None:  # this answer may change its fetch state
                handler.dirty.add(data.tp)
            if fp.fetch_offset != p.log.leo or (data.tp in truncating and data.tp not in sent_truncating):
                # truncated, or made to truncate, since this Fetch went out: processFetchRequest
                # applies only a response for the current offset of a partition ready to fetch
                continue
            if data.tp in sent_truncating and epoch_answer_stale(
                    self.protocol, self.replication.follower_truncation,
                    sent_truncating[data.tp], p.leader_epoch):
                continue  # still truncating: the next Fetch asks again at the new epoch
            if data.error == E.OFFSET_OUT_OF_RANGE:  # ask the leader where its log is
                reset = (data.tp, fp.current_leader_epoch, answer[i + 1:])
                break
            if data.error:
                if fenced_fetch_stops_fetching(self.protocol, data.error, fp.current_leader_epoch,
                                               p.leader_epoch):
                    del parts[data.tp]  # until the LeaderAndIsr of the leader's new epoch
                    self.fetch_state_changed(data.tp)
                else:
                    self._back_off(leader, data.tp)
                continue
            self.truncating.discard(data.tp)
            if data.diverging is not None:
                if self.protocol.hw_before_diverging_truncation \
                        and self.replication.follower_truncation == "diverging_epoch":
                    self._hw_before_truncation(p, data.high_watermark)
                if not self._truncate_diverging(p, data.diverging):
                    self.truncating.add(data.tp)  # ask again from the new log end
            else:
                self._append_fetched(p, data, added, hws, starts)
        if added:
            self.emit(V.REPLICATE, {"leader": leader, "batches": added})
        # log starts before HWs (one step in Kafka): no HW announced covers what the answer drops
        for p, start in starts:
            self.raise_log_start(p.tp, p.topic_id, p.log, start)
        if hws:
            self._follower_hws_moved(hws)
        if reset is not None:
            self.start_offset_reset(leader, *reset)
        else:
            self._maybe_fetch(leader)

    def _truncate_diverging(self, p, diverging) -> bool:
        """Truncate to where the leader's answer says the logs diverge; returns whether that
        settles it. When the follower does not have the epoch the leader answered with, it
        truncates to the end of its own largest epoch below it and must ask again
        (`AbstractFetcherThread.getOffsetTruncationState`, truncationCompleted = false)."""
        log = p.log
        local = log.end_offset_for_epoch(diverging[0]) if diverging[0] >= 0 else (-1, -1)
        target, reason, complete = offset_truncation_state(diverging, local, log.hw, log.leo,
                                                           log.log_start_offset)
        self._truncate(p, target, reason)
        return complete

    def _truncate(self, p, target: int, reason: str) -> None:
        self.truncate_log(p.tp, p.topic_id, p.log, target, reason)

    def truncate_log(self, tp: str, topic_id: int, log, target: int, reason: str) -> None:
        """Drop every batch from `target` on and rebuild the producer state, which ends with a
        producer-state snapshot at the new log end (`truncateTo` -> `loadProducerState`, 2.4.0
        and 3.7.0; the log dropped those above it); a `truncate` event naming the new log end
        when anything went (a batch that straddles `target` stays)."""
        if log.truncate_to(target):
            self.touch_sessions(tp)
            self.fetch_state_changed(tp)
            rebuild(log, self.protocol.idempotent_batches)
            take_snapshot(log)
            self.emit(V.TRUNCATE, {"tp": tp, "topic_id": topic_id, "to_offset": log.leo,
                                   "reason": reason})

    def _append_fetched(self, p, data, added: list, hws: list, starts: list) -> None:
        """Append the answer's batches at the log end, take its HW, and note in `starts` the
        leader's log start when the follower is to move up to it (judged by the new HW)."""
        log = p.log
        first = data.entries[0] if data.entries else None
        if first and first[0] < log.leo < first[0] + first[1] and log.leo == log.log_start_offset:
            self._start_at_batch(p, first[0])  # only the first batch can straddle the start
        for entry in data.entries:
            if entry[0] != log.leo:
                continue
            log.append_entry(entry, self.now_us)
            record_append(log, entry[3], entry[0], self.now_us, self.protocol.idempotent_batches)
            added.append([p.tp, p.topic_id, entry[0], entry[1], entry[2], entry[3].bid])
        self._follower_hw(p, data.high_watermark, hws)
        if data.log_start_offset > log.log_start_offset:  # else the rule keeps it: no call
            start = self.rules.follower_log_start(self.protocol, data.log_start_offset,
                                                  log.log_start_offset, log.hw)
            if start is not None:
                starts.append((p, start))

    def _start_at_batch(self, p, base_offset: int) -> None:
        """An empty follower log starts inside the first batch it is sent (the leader's log
        start fell inside a batch): it starts over at the batch's base offset, as
        `Partition.appendRecordsToFollowerOrFutureReplica` does on an
        UnexpectedAppendOffsetException, so the batch can be appended."""
        p.log.truncate_fully_and_start_at(base_offset)
        p.log.producers = {}
        self.emit(V.LOG_START, {"tp": p.tp, "topic_id": p.topic_id, "log_start_offset": base_offset})
