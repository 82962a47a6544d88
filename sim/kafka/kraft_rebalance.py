"""Automatic preferred-leader balancing on a KRaft controller (mixin of `KraftController`), as
`QuorumController` runs it with auto.leader.rebalance.enable (Kafka's default; read at 3.7.0).

Contract:
- a partition is imbalanced while its leader is not its first replica (`PartitionRegistration
  .hasPreferredLeader`; a leaderless one is imbalanced too);
- after every write, and when a controller becomes active, `maybe_schedule_balance` schedules
  one balance if none is scheduled and some partition is imbalanced
  (`maybeScheduleNextBalancePartitionLeaders`): `leader_imbalance_check_interval_ms` later
  when the schedule is deferred (at first, after a balance that elected all it could, and
  after a resignation: `cancelMaybeBalancePartitionLeaders`), 10 ms later when the last
  balance stopped at its limit;
- a balance (`ReplicationControlManager.maybeBalancePartitionLeaders`) elects, partition by
  partition in name order, the first replica where it is in the ISR and usable (a
  PartitionChangeRecord at a new leader epoch, `partition_state` reason `elect:auto_preferred`),
  at most MAX_ELECTIONS_PER_IMBALANCE a balance; the rest wait for the next, 10 ms later.
  Kafka walks a hash set, in no set order; the model's name order keeps runs deterministic.
A balance scheduled in an earlier term of office, or reaching a controller no longer active,
does nothing. Unlike the ZooKeeper-mode controller's, no per-broker threshold applies
(`leader.imbalance.per.broker.percentage` is not read in KRaft mode).
"""

from __future__ import annotations

MAX_ELECTIONS_PER_IMBALANCE = 1000  # `ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE`
IMMEDIATELY_US = 10_000  # `NANOSECONDS.convert(10, MILLISECONDS)`
DEFERRED, IMMEDIATELY, SCHEDULED = "deferred", "immediately", "scheduled"


class KraftRebalance:
    def reset_balance(self) -> None:
        """A new or resigned controller's schedule: deferred, nothing scheduled."""
        self.balance_schedule = DEFERRED

    def imbalanced(self, tps=None) -> list[str]:
        """The partitions (of `tps`, default all) whose leader is not their first replica, in
        name order."""
        parts = self.image.parts
        return [tp for tp in sorted(parts if tps is None else tps)
                if tp in parts and parts[tp].replicas and parts[tp].leader != parts[tp].replicas[0]]

    def maybe_schedule_balance(self, tps=None) -> None:
        """Schedule a balance if none is and a partition is imbalanced; `tps`: only these can
        have become imbalanced since the last call (the partitions of a record just written),
        so a run with thousands of partitions does not look at all of them per record."""
        if (not self.active or self.balance_schedule == SCHEDULED
                or not self.cluster.auto_leader_rebalance or not self.imbalanced(tps)):
            return
        delay_us = (self.cluster.leader_imbalance_check_interval_ms * 1000
                    if self.balance_schedule == DEFERRED else IMMEDIATELY_US)
        self.set_timer(delay_us, "balance", self.claim_epoch)
        self.balance_schedule = SCHEDULED

    def on_balance(self, claim_epoch: int) -> None:
        """A scheduled balance is due: elect what it can, then schedule the next if needed. The
        schedule stays SCHEDULED while it runs, so its own writes schedule nothing."""
        if not self.active or claim_epoch != self.claim_epoch:
            return
        elected, full = 0, False
        for tp in self.imbalanced():
            if elected >= MAX_ELECTIONS_PER_IMBALANCE:
                full = True
                break
            elected += self.elect_preferred(tp, "elect:auto_preferred")
        self.balance_schedule = IMMEDIATELY if full else DEFERRED
        self.maybe_schedule_balance()
