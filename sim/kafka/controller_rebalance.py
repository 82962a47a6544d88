"""Automatic preferred-leader rebalance in ZooKeeper mode (mixin of `Controller`), as
`KafkaController` runs it with auto.leader.rebalance.enable (Kafka's default).

Contract: a controller that becomes active schedules the first check 5 s later
(`onControllerFailover` -> `scheduleAutoLeaderRebalanceTask(delay = 5, SECONDS)`), and each
check schedules the next `leader_imbalance_check_interval_ms` later
(`processAutoPreferredReplicaLeaderElection`); a check scheduled by an earlier activation, or
reaching a controller that resigned, does nothing (Kafka's scheduler stops on resignation).
A check elects, broker by broker, the preferred leaders `auto_rebalance_elections` names, one
`onReplicaElection` (a flush: LeaderAndIsr and UpdateMetadata) per broker, each partition at a
new leader epoch with its ISR kept (`partition_state` reason `elect:auto_preferred`). A check
while ZooKeeper is out of reach writes nothing and schedules the next.
"""

from __future__ import annotations

from sim.kafka.rules.elections import auto_rebalance_elections

FIRST_CHECK_US = 5_000_000  # `scheduleAutoLeaderRebalanceTask(delay = 5, unit = SECONDS)`


class RebalanceOps:
    def schedule_auto_rebalance(self, delay_us: int) -> None:
        """Schedule this activation's next check, if the rebalance is enabled."""
        if self.cluster.auto_leader_rebalance:
            self.set_timer(delay_us, "auto_rebalance", self.controller_epoch)

    def on_auto_rebalance(self, controller_epoch: int) -> None:
        """A check scheduled at `controller_epoch` is due (`processAutoPreferredReplicaLeader
        Election`: `if (!isActive) return`, else check and schedule the next)."""
        if not self.active or controller_epoch != self.controller_epoch:
            return
        if self._can_write():
            self.auto_rebalance()
        self.schedule_auto_rebalance(self.cluster.leader_imbalance_check_interval_ms * 1000)

    def auto_rebalance(self) -> None:
        """`checkAndTriggerAutoLeaderRebalance`: elect the preferred leaders of imbalanced
        brokers (topics queued for deletion are no longer in `store.topics`)."""
        parts = []
        for tp in self.store.all_tps():
            _topic, st = self.store.partition(tp)
            parts.append((tp, st.replicas, st.leader, st.isr,
                          self._election_live(tp, st.replicas, False)))
        groups = auto_rebalance_elections(
            parts, self.cluster.leader_imbalance_per_broker_percentage,
            bool(self.store.reassignments), self.protocol.auto_rebalance_during_reassignment)
        for tps in groups:  # one `onReplicaElection` per broker
            self.preferred_election(tps, reason="elect:auto_preferred")
