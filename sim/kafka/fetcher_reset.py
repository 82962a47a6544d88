"""A follower's out-of-range reset: the ListOffsets round trips after OFFSET_OUT_OF_RANGE.

Contract (mixin of `Broker`, beside `Fetcher`): reading a Fetch answer, the fetcher stops at a
partition answered OFFSET_OUT_OF_RANGE and asks its leader where the leader's log ends
(ListOffsets LATEST) and, unless that is below its own log end, where it starts (EARLIEST),
with its broker id as the replica id and, from KIP-320 (2.1, IBP 2.1), its CurrentLeaderEpoch (`ReplicaFetcherThread.handleOffsetOutOfRange`
and `earliestOrLatestOffset` at 1.0.0; `AbstractFetcherThread.handleOutOfRangeError` and
`fetchOffsetAndTruncate` with `ReplicaFetcherThread.fetchOffsetFromLeader` at 2.4.0 and
`RemoteLeaderEndPoint.fetchOffset` at 3.7.0; the same at 3.9.0-rc3 and in the 4.x line's
`AbstractFetcherThread`, read from a stored copy). Kafka's fetcher thread waits for each answer
with the partition lock held, so no Fetch goes to that leader, and the rest of the Fetch answer
is read only once the reset is done (never, if the broker halts).

- LATEST below the follower's log end: it truncates to it and fetches from there; before
  KAFKA-7414 (2.1, `out_of_range_halts`) only where unclean leader election is allowed, else
  the broker halts (FatalExitError) rather than lose committed data.
- Otherwise EARLIEST: above the follower's log end, the log is dropped and starts there
  (`truncateFullyAndStartAt`); else the follower fetches again from its log end.
- An error answer (the ListOffsets', not the Fetch's): FENCED_LEADER_EPOCH for the epoch
  the follower still has marks the partition failed until the LeaderAndIsr of the new epoch
  (`onPartitionFenced`; at 3.7 a Fetch sent at an older epoch is retried at once); any other
  (UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, a lost or timed-out request) backs the
  partition off for `replica.fetch.backoff.ms`, and its next Fetch meets the error again.
The model's broker holds no such lock: a partition whose fetch state changed while its answer
was on the way (moved, re-added at a new epoch, truncated) ignores the answer, since Kafka's
LeaderAndIsr would have waited for the reset and then replaced its fetch state anyway. Tiered storage's EARLIEST_LOCAL is not modelled.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.messages import ListOffsets, ListOffsetsPartition
from sim.kafka.rules.inter_broker import follower_fetch_carries_epoch
from sim.kafka.rules.offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from sim.kafka.rules.replication import fenced_fetch_stops_fetching


class FetcherReset:
    def init_offset_resets(self) -> None:
        # leader id -> (corr, tp, timestamp, Fetch epoch, leader epoch, log end) in flight
        self.reset_inflight: dict[int, tuple] = {}
        # leader id -> the partitions of the Fetch answer after the one being reset
        self.reset_rest: dict[int, tuple] = {}

    def resetting(self, leader: int) -> bool:
        """Whether the fetcher of `leader` waits on a reset (it sends no Fetch meanwhile)."""
        return leader in self.reset_inflight

    def start_offset_reset(self, leader: int, tp: str, fetch_epoch: int, rest: tuple) -> None:
        """`tp`'s Fetch from `leader` (at `fetch_epoch`) was answered OFFSET_OUT_OF_RANGE: ask
        where the leader's log ends; `rest` is read once the reset is done."""
        self.reset_rest[leader] = rest
        self._ask_offset(leader, tp, LATEST_TIMESTAMP, fetch_epoch)

    def _reset_applies(self, leader: int, tp: str) -> bool:
        p = self.partitions.get(tp)
        return p is not None and p.leader == leader and tp in self.fetchers.get(leader, {})

    def _ask_offset(self, leader: int, tp: str, timestamp: int, fetch_epoch: int) -> None:
        p = self.partitions[tp]
        self.fetch_corr += 1
        epoch = p.leader_epoch if follower_fetch_carries_epoch(self.protocol, self.store.ibp) else -1
        self.reset_inflight[leader] = (self.fetch_corr, tp, timestamp, fetch_epoch,
                                       p.leader_epoch, p.log.leo)
        self.fetch_deadlines.add((leader, self.fetch_corr), self.now_us + V.FETCH_TIMEOUT_US)
        self.send(f"b{leader}", "ListOffsets", ListOffsets(
            self.id, self.fetch_corr, (ListOffsetsPartition(tp, epoch, timestamp),)))

    def on_list_offsets_response(self, msg) -> None:
        leader = int(msg.src[1:])
        resp = msg.body
        sent = self.reset_inflight.get(leader)
        if sent is None or sent[0] != resp.corr:
            return
        del self.reset_inflight[leader]
        self.fetch_deadlines.cancel((leader, resp.corr))
        _corr, tp, timestamp, fetch_epoch, leader_epoch, leo = sent
        p = self.partitions.get(tp)
        answer = next((a for a in resp.partitions if a.tp == tp), None)
        if answer is None or not self._reset_applies(leader, tp) \
                or (p.leader_epoch, p.log.leo) != (leader_epoch, leo):
            self._reset_done(leader)  # its fetch state was replaced meanwhile: not read
            return
        if answer.error:
            self._reset_failed(leader, tp, answer.error, fetch_epoch)
        elif timestamp == LATEST_TIMESTAMP:
            if answer.offset < p.log.leo:
                self._reset_below(p, answer.offset)
                if not self.alive:
                    return  # it halted: nothing more of the Fetch answer is read
            else:
                self._ask_offset(leader, tp, EARLIEST_TIMESTAMP, fetch_epoch)
                return
        elif answer.offset > p.log.leo:
            self._start_at_leader_start(p, answer.offset)
        if not answer.error:
            self.truncating.discard(tp)  # the new fetch state is Fetching, its truncation done
        self.fetch_state_changed(tp)
        self._reset_done(leader)

    def _reset_done(self, leader: int) -> None:
        """Read the rest of the Fetch answer; it fetches again once all of it is read."""
        self.read_fetch_answer(leader, self.reset_rest.pop(leader, ()))

    def _reset_failed(self, leader: int, tp: str, error: int, fetch_epoch: int) -> None:
        """`handleOutOfRangeError`'s catch: fenced at the epoch the Fetch named, still the
        follower's, the partition is marked failed; at 3.7 one whose Fetch named an older epoch
        is retried at once (2.4's `onPartitionFenced` marks it failed too, a case the model's
        2.4 follower cannot meet: a new epoch makes it truncate before it reads an answer).
        Any other error backs it off."""
        p = self.partitions[tp]
        if fenced_fetch_stops_fetching(self.protocol, error, fetch_epoch, p.leader_epoch):
            del self.fetchers[leader][tp]  # until the LeaderAndIsr of the leader's new epoch
        elif error != E.FENCED_LEADER_EPOCH:
            self._back_off(leader, tp)

    def reset_lost(self, leader: int) -> None:
        """The connection to `leader` closed or its ListOffsets timed out: the partition backs
        off, and the rest of the Fetch answer is read."""
        sent = self.reset_inflight.pop(leader)
        self.fetch_deadlines.cancel((leader, sent[0]))
        if self._reset_applies(leader, sent[1]):
            self._back_off(leader, sent[1])
            self.fetch_state_changed(sent[1])
        self._reset_done(leader)

    def _reset_below(self, p, leader_end: int) -> None:
        """The leader's log ends below the follower's: truncate to it, or halt where the
        release treats that as data loss (unclean leader election disabled, before 2.1)."""
        if self.protocol.out_of_range_halts and not self.cluster.unclean_leader_election:
            self.halt_on_truncation(p, leader_end)
        else:
            self._truncate(p, leader_end, "out_of_range")

    def halt_on_truncation(self, p, leader_end: int) -> None:
        """The broker process exits (FatalExitError); it stays down until restarted."""
        self.emit(V.HALT, {"tp": p.tp, "topic_id": p.topic_id, "log_end_offset": p.log.leo,
                           "leader_end_offset": leader_end})
        # System.exit (0.10.1+, KAFKA-3997; Runtime.halt before) and later FatalExitError ->
        # Exit.exit both run the JVM's shutdown hooks, and so the broker's clean shutdown
        self.stop_cleanly()

    def _start_at_leader_start(self, p, leader_start: int) -> None:
        """The whole log is behind the leader's log start: drop it and start there."""
        log = p.log
        self.emit(V.TRUNCATE, {"tp": p.tp, "topic_id": p.topic_id,
                               "to_offset": log.log_start_offset, "reason": "out_of_range"})
        log.truncate_fully_and_start_at(leader_start)
        log.producers = {}  # truncateFullyAndStartAt clears the producer state too
        self.emit(V.LOG_START, {"tp": p.tp, "topic_id": p.topic_id,
                                "log_start_offset": log.log_start_offset})
