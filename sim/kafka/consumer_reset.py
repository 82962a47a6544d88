"""Consumer position reset with ListOffsets (`auto.offset.reset`).

Contract (mixin of `Consumer`): a partition whose position has no offset waits for a reset
(`SubscriptionState.requestOffsetReset`, AWAIT_RESET) by a reset strategy: the default one,
`auto_offset_reset`, at the start (no committed offsets), after OFFSET_OUT_OF_RANGE
(`handleOffsetOutOfRange`), and after a position validation that found no end offset for its
epoch (`maybeCompleteValidation`); or one of its own, asked for by the application
(`request_offset_reset`: `seekToBeginning` EARLIEST, `seekToEnd` LATEST), which also ends the
partition's retry backoff (`TopicPartitionState.reset`: `nextRetryTimeMs = null`). It is not
fetched or validated meanwhile. One ListOffsets per leader broker is in flight at a time, naming
each waiting partition whose rest is over, with `replica_id` -1, the leader epoch the consumer
knows as `CurrentLeaderEpoch` (v4+, KIP-320) and the timestamp of the partition's strategy
(EARLIEST or LATEST; `Fetcher.resetOffsetsAsync` at 2.6.0, `OffsetsRequestManager` at 3.7.0).
The answer, per partition (`handleListOffsetResponse`, `resetOffsetIfNeeded` /
`resetPositionIfNeeded`):
- an offset: the position moves there, without an offset epoch, so it is not validated ("This
  will ensure we skip validation"), against the leader the metadata names now;
- an error (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER,
  KAFKA_STORAGE_ERROR, OFFSET_NOT_AVAILABLE, ...): the partition rests `retry.backoff.ms` and
  metadata is refreshed (`requestFailed`, `metadata.requestUpdate()`), then asks again;
  TOPIC_AUTHORIZATION_FAILED is also raised to the application, once
  (`OffsetFetcherUtils.handleListOffsetResponse` fails the request with a
  TopicAuthorizationException, which the next `resetPositionsIfNeeded` throws, at 3.7.0).
With the strategy NONE (`auto_offset_reset = "none"`) nothing is reset: a partition without a
position surfaces NoOffsetForPartitionException and stays without one.
A partition whose leader the metadata does not know waits for metadata, and asks for it. An
answer is taken only for a partition that still waits for a reset by the strategy the request
was sent for (`SubscriptionState.maybeSeekUnvalidated` at 2.4.0 and 3.7.0: "Skipping reset ...
since reset is no longer needed", "... since an alternative reset has been requested"): asked
again by the same strategy, the reset in flight still counts. Every answer is a `reset_position`
event. An answered leader epoch newer than the last seen one is recorded as it
(`updateLastSeenEpochIfNewer`, `learn_leader_epoch`), as Kafka does; a fetched batch's is not.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.messages import ListOffsets, ListOffsetsPartition
from sim.kafka.rules.offsets import CONSUMER_REPLICA_ID, RESET_TIMESTAMPS, reset_timestamp

DEFAULT = "default"  # a reset by the consumer's `auto_offset_reset` (`requestOffsetReset(tp)`)


class OffsetResetter:
    def init_reset(self) -> None:
        self.awaiting_reset: dict[str, int] = {tp: 1 for tp in self.tps}  # tp -> reset number
        self.resets = dict(self.awaiting_reset)  # tp -> resets asked for so far
        self.resetting: dict[int, int] = {}  # broker -> corr of its ListOffsets in flight
        self.reset_asked: dict[int, dict] = {}  # broker -> {tp: (timestamp, epoch sent)}
        self.reset_ts = reset_timestamp(self.spec.auto_offset_reset)  # None: `none`
        # tp -> the timestamp of the strategy its last reset was asked by (None: NONE)
        self.reset_strategy: dict[str, int | None] = {tp: self.reset_ts for tp in self.tps}
        self.raised_no_offset: dict[str, int] = {}  # tp -> reset number it was raised for

    def request_reset(self, tp: str, strategy: str = DEFAULT) -> None:
        """The position of `tp` has no offset any more: it waits for a reset by `strategy`
        ("earliest", "latest", "none", or the default)."""
        self.resets[tp] += 1
        self.awaiting_reset[tp] = self.resets[tp]
        self.reset_strategy[tp] = (self.reset_ts if strategy == DEFAULT
                                   else RESET_TIMESTAMPS.get(strategy))
        self.awaiting.pop(tp, None)  # AWAIT_RESET is not validated

    def request_offset_reset(self, tps, strategy: str) -> None:
        """The application's `seekToBeginning` ("earliest") or `seekToEnd` ("latest") on
        `tps` (`SubscriptionState.requestOffsetReset(partitions, strategy)`): each waits for a
        reset by that strategy, its retry backoff over."""
        for tp in tps:
            self.request_reset(tp, strategy)
            self.resting.pop(tp, None)
        self.fetch()

    def reset_positions(self) -> None:
        """One ListOffsets to each leader that has none in flight, for its partitions that
        wait for a reset and are not resting after an error; none for a partition whose
        strategy is NONE."""
        self._no_offsets()
        by_leader: dict[int, list] = {}
        for tp in sorted(self.awaiting_reset):
            timestamp = self.reset_strategy[tp]
            if timestamp is None:
                continue
            leader, epoch = self.meta.current_leader(tp)  # `Metadata.currentLeader`
            if leader < 0 or leader not in self.meta.brokers:
                # `groupListOffsetRequests` asks for metadata itself: from 2.6 the position
                # keeps its last leader when the metadata knows none, so `fetch` does not
                # (`Fetcher` 2.6.0, `OffsetFetcher` 3.7.0: `metadata.requestUpdate`)
                self.request_update()
                continue
            if leader not in self.resetting and self._fetchable(tp, epoch):
                by_leader.setdefault(leader, []).append(ListOffsetsPartition(tp, epoch, timestamp))
        for leader in sorted(by_leader):
            parts = tuple(by_leader[leader])
            self.corr += 1
            self.resetting[leader] = self.corr
            self.reset_asked[leader] = {p.tp: (p.timestamp, p.current_leader_epoch) for p in parts}
            self.send(f"b{leader}", "ListOffsets", ListOffsets(CONSUMER_REPLICA_ID, self.corr, parts))
            self.set_timer(self.request_timeout_us(), "reset_timeout", (leader, self.corr))

    def _no_offsets(self) -> None:
        """The strategy NONE (`auto.offset.reset = none`): a partition without a position is
        not reset; the application's poll raises NoOffsetForPartitionException for it
        (`SubscriptionState.resetInitializingPositions` at 3.7.0, `resetMissingPositions` from
        2.0.0), once per partition left without a position here with the strategy NONE."""
        for tp in sorted(self.awaiting_reset):
            if (self.reset_strategy[tp] is None
                    and self.raised_no_offset.get(tp) != self.awaiting_reset[tp]):
                self.raised_no_offset[tp] = self.awaiting_reset[tp]
                self.surface(tp, "NoOffsetForPartitionException", -1)

    def on_reset_response(self, broker: int, resp) -> None:
        if self.resetting.get(broker) != resp.corr:
            return
        del self.resetting[broker]
        asked = self.reset_asked.pop(broker)
        for answer in resp.partitions:
            timestamp, epoch = asked.get(answer.tp, (None, -1))
            if (timestamp is not None and answer.tp in self.awaiting_reset
                    and self.reset_strategy[answer.tp] == timestamp):
                self._complete_reset(broker, answer, epoch, timestamp)
        self.fetch()

    def _complete_reset(self, broker: int, answer, epoch: int, timestamp: int) -> None:
        tp = answer.tp
        if answer.error or answer.offset < 0:
            action = "retry"
            self.resting[tp] = (self.now_us + self.retry_backoff_us(), epoch)
            self.request_update()
            if answer.error == E.TOPIC_AUTHORIZATION_FAILED:
                self.surface(tp, "TopicAuthorizationException", -1)
        else:
            action = "reset"
            del self.awaiting_reset[tp]
            self.position[tp] = answer.offset
            self.offset_epoch[tp] = -1
            # `OffsetFetcherUtils.resetPositionIfNeeded` (3.7): the position takes the current
            # leader, unvalidated, and the answer's leader epoch feeds the last seen one
            self.position_leader[tp] = self.meta.current_leader(tp)
            if answer.leader_epoch >= 0:
                self.learn_leader_epoch(tp, answer.leader_epoch, "list_offsets", broker)
        self.emit(V.RESET_POSITION, {
            "tp": tp, "broker": broker, "leader_epoch": epoch, "timestamp": timestamp,
            "error": answer.error, "offset": answer.offset, "offset_epoch": answer.leader_epoch,
            "action": action, "position": self.position[tp]})
