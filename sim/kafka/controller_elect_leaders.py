"""The admin's ElectLeaders on a ZooKeeper-mode controller (mixin of `Controller`).

Contract: `elect_leaders(tps, election_type)` is the controller's `ReplicaLeaderElection`
event with `AdminClientTriggered` (`processReplicaLeaderElection`, read at 2.4.0 and 3.7.0; at
2.2.0 and 2.3.0 `PreferredReplicaLeaderElection`, PREFERRED only), as a broker's
`KafkaApis.handleElectLeaders` -> `ReplicaManager.electLeaders` hands it over: it returns the
error per partition (`rules.admin_elections`): NOT_CONTROLLER from a controller that is not
active (or cannot write ZooKeeper), INVALID_TOPIC_EXCEPTION for a topic queued for deletion,
UNKNOWN_TOPIC_OR_PARTITION for a partition it does not know, ELECTION_NOT_NEEDED (NONE at
2.2-2.3) for one that needs no election, and for the rest the election's result: NONE, written
(each elected partition a new state, then one flush: LeaderAndIsr and UpdateMetadata), or
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE. PREFERRED elects the first
replica where it is live and in the ISR (`PreferredReplicaPartitionLeaderElectionStrategy`);
UNCLEAN runs the offline election allowing an unclean leader whatever the topic's config
(`OfflinePartitionLeaderElectionStrategy(allowUnclean = true)`): the first live ISR member,
leading the live ISR, else the first live replica, leading an ISR of itself. `tps` None: every
partition (the broker expands a request naming none from its metadata cache), and the answer
leaves out those that needed no election. Not modelled: the broker's purgatory
(`DelayedElectLeader`), which holds a NONE until the broker's own metadata cache shows the
new leader (REQUEST_TIMED_OUT if it does not within the request's timeout); the model answers
with the controller's result.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.rules import admin_elections as AE
from sim.kafka.rules.elections import (
    leader_for_offline,
    preferred_replica_partition_leader_election,
)


class ElectLeadersOps:
    def elect_leaders(self, tps: list[str] | None,
                      election_type: str = AE.PREFERRED) -> dict:
        """The error per partition of an admin's election (see the module contract)."""
        every = tps is None
        # a set of partitions (`ElectLeadersRequest.topicPartitions`): one named twice is one
        tps = self.store.all_tps() if every else list(dict.fromkeys(tps))
        if not self._can_write():
            return {tp: E.NOT_CONTROLLER for tp in tps}
        mode = self.protocol.admin_elect_leaders
        live_brokers = set(self.live) - set(self.shutting_down)
        results = {}
        for tp in tps:
            if self.marked_for_deletion(tp.rpartition("-")[0]):
                results[tp] = E.INVALID_TOPIC_EXCEPTION
            elif self.store.partition(tp) is None:
                results[tp] = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                _topic, st = self.store.partition(tp)
                needed = AE.zk_election_needed(election_type, st.replicas, st.leader,
                                               live_brokers)
                results[tp] = (self._admin_elect(tp, st, election_type) if needed
                               else AE.not_needed_error(mode))
        self.flush()
        return AE.answered(results, every)

    def _admin_elect(self, tp: str, st, election_type: str) -> int:
        """One partition's election: NONE once written, else the failed election's error."""
        live = self._election_live(tp, st.replicas, False)
        if election_type == AE.PREFERRED:
            if preferred_replica_partition_leader_election(st.replicas, st.isr, live) is None:
                return AE.failed_error(election_type)
            self.change(tp, AE.ADMIN_PREFERRED, leader=st.replicas[0])
            return E.NONE
        elected = leader_for_offline(st.replicas, st.isr, live, True)
        if elected is None:
            return AE.failed_error(election_type)
        self.change(tp, AE.ADMIN_UNCLEAN, leader=elected[0], isr=elected[1])
        return E.NONE
