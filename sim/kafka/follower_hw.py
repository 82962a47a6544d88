"""A follower's high watermark: taken from its leader's Fetch answers.

Contract (mixin of `Broker`): `_follower_hw` sets a follower partition's HW from its leader's,
capped at its own log end, and lists the change; `_follower_hws_moved` records the changes of
one answer (the `hw` event, role follower) and, with `follower_hw_completes_fetches`, answers
the consumer Fetches parked on those partitions; `_hw_before_truncation` is KAFKA-14704's
early HW.
"""

from __future__ import annotations

from sim.kafka import vocab as V


class FollowerHw:
    @staticmethod
    def _follower_hw(p, leader_hw: int, hws: list) -> None:
        """A follower's HW is the leader's, capped at its own log end (`updateHighWatermark`);
        a change is added to `hws` for the `hw` event."""
        hw = min(leader_hw, p.log.leo)
        if hw != p.log.hw and hw >= 0:
            p.log.set_hw(hw)
            hws.append([p.tp, p.topic_id, hw, p.leader_epoch])

    def _hw_before_truncation(self, p, leader_hw: int) -> None:
        """KAFKA-14704 (2.8-3.4): `processPartitionData` took the HW of a response that carried
        a DivergingEpoch before the truncation ran, so for a moment the follower's HW covers
        records it is about to drop, which a reader of that follower could see."""
        hws: list = []
        self._follower_hw(p, leader_hw, hws)
        if hws:
            self._follower_hws_moved(hws)

    def _follower_hws_moved(self, hws: list) -> None:
        """Record the follower HW changes of one answer; with `follower_hw_completes_fetches`
        (KAFKA-14334, 3.4.0) complete the consumer Fetches parked on those partitions, as
        `ReplicaFetcherThread.completeDelayedFetchRequests` does once the answer is processed."""
        self.emit(V.HW, {"role": "follower", "hws": hws})
        if self.protocol.follower_hw_completes_fetches:
            for tp, *_ in hws:
                self._wake_parked(tp, "consumers")
