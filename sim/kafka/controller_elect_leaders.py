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
leaves out those that needed no election. A broker's hand-over (`on_elect_leaders`) is
answered with each partition's error and the leader elected, for the broker's purgatory
(`sim.kafka.broker_elect_leaders`); a run's `elect_leaders` fault and a probe's admin step to
the controller take the errors at once.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.admin_messages import ElectLeadersResult
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
        outcomes = self.election_outcomes(self.store.all_tps() if every else tps, election_type)
        return AE.answered({tp: error for tp, (error, _) in outcomes.items()}, every)

    def on_elect_leaders(self, msg) -> None:
        """A broker's hand-over (Kafka's in-process `KafkaController.electLeaders`): the
        `ElectLeadersResult` names per partition its error and the leader elected (-1 for
        none), which the broker's purgatory waits to see in its metadata cache."""
        req = msg.body
        outcomes = self.election_outcomes(list(req.partitions), req.election_type)
        self.send(msg.src, "ElectLeadersResult", ElectLeadersResult(
            req.corr, tuple((tp, error, leader) for tp, (error, leader) in outcomes.items())))

    def election_outcomes(self, tps: list[str], election_type: str) -> dict:
        """tp -> (error, the leader elected or -1), each partition named once (the request's
        partitions are a set) and elected as the module contract says."""
        tps = list(dict.fromkeys(tps))
        if not self._can_write():
            return {tp: (E.NOT_CONTROLLER, E.NO_LEADER) for tp in tps}
        mode = self.protocol.admin_elect_leaders
        live_brokers = set(self.live) - set(self.shutting_down)
        results = {}
        for tp in tps:
            if self.marked_for_deletion(tp.rpartition("-")[0]):
                results[tp] = (E.INVALID_TOPIC_EXCEPTION, E.NO_LEADER)
            elif self.store.partition(tp) is None:
                results[tp] = (E.UNKNOWN_TOPIC_OR_PARTITION, E.NO_LEADER)
            else:
                st = self.store.partition(tp)[1]
                needed = AE.zk_election_needed(election_type, st.replicas, st.leader,
                                               live_brokers)
                error = (self._admin_elect(tp, st, election_type) if needed
                         else AE.not_needed_error(mode))
                elected = needed and error == E.NONE
                results[tp] = (error, st.leader if elected else E.NO_LEADER)
        self.flush()
        return results

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
