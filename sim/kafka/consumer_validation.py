"""Consumer position validation after a leader change (KIP-320 client side, KAFKA-7747, 2.3).

Contract (mixin of `Consumer`, switch `consumer_validation`): a position remembers the leader
epoch of the last batch read (`offset_epoch`, Kafka's `FetchPosition.offsetEpoch`) and the
(leader, epoch) it was last fetched or validated against (`currentLeader`). When the metadata
names another leader or epoch (which the position takes as `position_leader` decides: a
current leader the metadata does not know is ignored from 2.6, KAFKA-9840), a position with an
`offset_epoch` stops fetching and waits for validation (`maybeValidatePositionForCurrentLeader`,
ref §3.3.1), sent once a leader is known; a position without one just takes the new leader. One OffsetsForLeaderEpoch per leader broker asks, for each waiting
partition, the end offset of its `offset_epoch`, with `CurrentLeaderEpoch` = the epoch known
(ref §1.2 table). The answer, per `SubscriptionState.maybeCompleteValidation`:
- an undefined epoch or offset: the position waits for a reset by `auto.offset.reset`
  (`requestOffsetReset`; `consumer_reset.py`), from 2.6 (`rules.validation_outcome`);
- an end offset below the position: the log was truncated under it, so the position moves back
  to that offset and takes the answered epoch ("Truncation detected ... resetting offset to the
  first offset known to diverge"; the consumer has a reset policy); before 2.6 also an
  undefined end offset, -1;
- otherwise the position is valid and fetching resumes;
- an error: the partition waits `retry.backoff.ms` and metadata is refreshed
  (`OffsetsForLeaderEpochClient`, `setNextAllowedRetry`).
With no reset policy (`auto_offset_reset = "none"`) both of the first two leave the position
waiting for validation and surface LogTruncationException (from 2.3: `LogTruncation`, the
divergent offset when the answer defined one).
An answer for a position that changed since the request (another leader change, a seek) is
dropped. A leader whose release answers no OffsetsForLeaderEpoch v3 (before 2.3, read from
its ApiVersions: `broker_profile`) is not asked: the position is fetched from as it stands
(`rules.leader_validates`, `testOffsetValidationSkippedForOldBroker`).
Every answer is a `validate_position` event, and so is a validation skipped (action `skipped`).
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.messages import OffsetForLeaderPartition, OffsetsForLeaderEpoch
from sim.kafka.rules.client_consumer import leader_validates, position_leader


class PositionValidator:
    def init_validation(self) -> None:
        self.offset_epoch = {tp: -1 for tp in self.tps}
        self.position_leader: dict[str, tuple] = {}  # tp -> (leader, epoch): currentLeader
        self.awaiting: dict[str, tuple] = {}  # tp -> (leader, epoch) to validate against
        self.validating: dict[int, int] = {}  # broker -> corr of its request in flight
        self.validation_asked: dict[int, dict] = {}  # broker -> {tp: position asked about}
        self.validates = self.rules.validates_positions(self.protocol)

    def follow_current_leader(self, tp: str) -> tuple[int, int]:
        """The (leader, epoch) the position of `tp` fetches from, (-1, ...) for none, after it
        followed the metadata's current leader as `position_leader` decides
        (`maybeValidatePositionForCurrentLeader`); a position that moves and has an
        `offset_epoch` waits for validation (`validatePosition`), also one that moves to an
        epoch without a leader (2.3-2.5), which it can validate only once a leader is known."""
        before = self.position_leader.get(tp)
        after = position_leader(self.protocol, before, self.meta.current_leader(tp))
        if after is None:
            return -1, -1
        if after != before:
            self.position_leader[tp] = after
            if self.validates and self.offset_epoch[tp] >= 0 and after[1] >= 0:
                self.awaiting[tp] = after
            else:
                self.awaiting.pop(tp, None)
        if tp in self.awaiting and after[0] >= 0 \
                and not leader_validates(self.broker_profile(after[0])):
            self._skip_validation(tp, after)
        return after

    def broker_profile(self, broker: int) -> str:
        """The release broker `broker` runs, as its ApiVersions answer tells a client that
        connects to it. A broker changes release only by restarting (`upgrade`), which closes
        its connections, so the release it runs now is the one its connection was opened on."""
        name = f"b{broker}"
        actor = self.world.actors.get(name)
        return actor.profile if actor is not None else self.world.options.node_profile(name)

    def _skip_validation(self, tp: str, leader: tuple) -> None:
        """The leader is too old to be asked (`leader_validates`): the position is fetched
        from as it stands, a `validate_position` event with action `skipped`."""
        del self.awaiting[tp]
        self.emit(V.VALIDATE_POSITION, {
            "tp": tp, "broker": leader[0], "leader_epoch": leader[1],
            "offset": self.position[tp], "offset_epoch": self.offset_epoch[tp], "error": 0,
            "end_epoch": -1, "end_offset": -1, "action": "skipped",
            "position": self.position[tp]})

    def _asked(self, tp: str) -> tuple:
        return (self.position[tp], self.offset_epoch[tp], self.awaiting.get(tp))

    def validate(self) -> None:
        """One OffsetsForLeaderEpoch to each leader that has none in flight, for its waiting
        partitions that are not resting after an error."""
        by_leader: dict[int, list] = {}
        for tp in sorted(self.awaiting):
            leader, epoch = self.awaiting[tp]
            if leader < 0:  # no leader to ask yet: `fetch` asked for metadata
                continue
            if leader not in self.validating and self._fetchable(tp, epoch):
                by_leader.setdefault(leader, []).append(tp)
        for leader in sorted(by_leader):
            tps = by_leader[leader]
            self.corr += 1
            self.validating[leader] = self.corr
            self.validation_asked[leader] = {tp: self._asked(tp) for tp in tps}
            parts = tuple(OffsetForLeaderPartition(tp, self.awaiting[tp][1], self.offset_epoch[tp])
                          for tp in tps)
            self.send(f"b{leader}", "OffsetsForLeaderEpoch", OffsetsForLeaderEpoch(-1, self.corr, parts))
            self.set_timer(self.request_timeout_us(), "validate_timeout", (leader, self.corr))

    def on_validation_response(self, broker: int, resp) -> None:
        if self.validating.get(broker) != resp.corr:
            return
        del self.validating[broker]
        asked = self.validation_asked.pop(broker)
        for answer in resp.partitions:
            if answer.tp in self.awaiting and asked.get(answer.tp) == self._asked(answer.tp):
                self._complete(broker, answer)
        self.fetch()

    def _complete(self, broker: int, answer) -> None:
        tp = answer.tp
        before, offset_epoch, (_leader, epoch) = self._asked(tp)
        if answer.error:
            action = "retry"
            self.resting[tp] = (self.now_us + self.retry_backoff_us(), epoch)
            self.request_update()
        else:
            action = self.rules.validation_outcome(self.protocol, before, answer.leader_epoch,
                                                   answer.end_offset)
            if action != "valid" and self.reset_ts is None:
                self._log_truncation(tp, action, answer, epoch)
                action = "raise"
            else:
                del self.awaiting[tp]
            if action == "reset":
                self.request_reset(tp)
            elif action == "truncate":
                self.position[tp] = answer.end_offset
                self.offset_epoch[tp] = answer.leader_epoch
        self.emit(V.VALIDATE_POSITION, {
            "tp": tp, "broker": broker, "leader_epoch": epoch, "offset": before,
            "offset_epoch": offset_epoch, "error": answer.error, "end_epoch": answer.leader_epoch,
            "end_offset": answer.end_offset, "action": action, "position": self.position[tp]})

    def _log_truncation(self, tp: str, action: str, answer, epoch: int) -> None:
        """No reset policy: a diverged position is neither reset nor moved; it keeps waiting for
        validation and poll raises LogTruncationException, with the divergent offset and
        epoch when the answer defined them (`maybeCompleteValidation` returns a LogTruncation;
        `OffsetFetcher` rethrows it). It is asked again once `request.timeout.ms` is over, the
        retry time `OffsetFetcher` gave it when it sent the request (`setNextAllowedRetry`)."""
        divergent = (answer.end_offset, answer.leader_epoch) if action == "truncate" else ()
        self.surface(tp, "LogTruncationException", self.position[tp], divergent)
        self.resting[tp] = (self.now_us + self.request_timeout_us(), epoch)
