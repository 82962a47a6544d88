"""A ZooKeeper-mode broker's side of an admin's ElectLeaders: the hand-over to the controller and
the purgatory that holds the answer until the broker's own metadata cache shows each elected
leader.

Contract (mixin of `Broker`; read at 2.2.0, `KafkaApis.handleElectPreferredReplicaLeader`,
`ReplicaManager.electPreferredLeaders`, `DelayedElectPreferredLeader`; at 2.4.0, 3.7.0 and
3.9.0-rc3, `KafkaApis.handleElectLeaders`, `ReplicaManager.electLeaders`, `DelayedElectLeader`,
the same shape): a request naming no partition asks for every partition of the broker's own
metadata cache. The broker hands the election to its controller (Kafka calls its own
`KafkaController.electLeaders`, which answers NOT_CONTROLLER per partition unless it is the
active controller; the model's controllers stand apart, so the broker sends the request to the
controller it knows, and answers NOT_CONTROLLER itself when it knows none). The controller's
answer (`ElectLeadersResult`, Kafka's callback) gives per partition an error or the leader it
elected. With no leader elected the answer goes at once; else the partitions elected wait
(`tryCompleteElseWatch`), each answered NONE once the metadata cache names its expected leader
(checked as the answer arrives and after each UpdateMetadata naming a waiting partition,
`KafkaApis.handleUpdateMetadataRequest` -> `tryCompleteElection`), and REQUEST_TIMED_OUT when
the request's TimeoutMs, counted from its arrival, passes first. An answer for every partition
leaves out those that needed no election. A restart forgets what waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.core.deadlines import Deadlines
from sim.kafka import errors as E
from sim.kafka.admin_messages import ElectLeadersRequest, ElectLeadersResponse
from sim.kafka.rules import admin_elections as AE


@dataclass
class Election:
    """One admin's ElectLeaders at this broker: who asked, whether for every partition, when
    its TimeoutMs ends, the leader each elected partition waits to see, the errors known."""

    admin: str
    corr: int
    every: bool
    deadline_us: int
    waiting: dict = field(default_factory=dict)  # tp -> the leader elected
    results: dict = field(default_factory=dict)  # tp -> error


class ElectLeadersPurgatory:
    def init_elections(self) -> None:
        self.elections: dict[int, Election] = {}  # by hand-over corr, in arrival order
        self.election_corr = 0
        self.election_deadlines = Deadlines(self, "elect_leaders_timeout")

    def on_elect_leaders(self, msg) -> None:
        req = msg.body
        every = req.partitions is None
        tps = sorted(self.metadata) if every else list(dict.fromkeys(req.partitions))
        self.election_corr += 1
        key = self.election_corr
        self.elections[key] = Election(msg.src, req.corr, every,
                                       self.now_us + req.timeout_ms * 1000)
        if self.controller is None:
            self._answer_election(key, {tp: E.NOT_CONTROLLER for tp in tps})
            return
        self.send(self.controller, "ElectLeaders",
                  ElectLeadersRequest(key, req.election_type, tuple(tps), req.timeout_ms))

    def on_elect_leaders_result(self, msg) -> None:
        """The controller's answer: wait for the leaders it elected, or answer now."""
        entry = self.elections.get(msg.body.corr)
        if entry is None or entry.waiting:
            return  # not asked (a restart since), or already answered by the controller
        for tp, error, leader in msg.body.results:
            if error == E.NONE and leader >= 0:
                entry.waiting[tp] = leader
            else:
                entry.results[tp] = error
        if not entry.waiting:
            self._answer_election(msg.body.corr, entry.results)
            return
        self.election_deadlines.add(msg.body.corr, max(self.now_us, entry.deadline_us))
        self.try_complete_elections(tuple(entry.waiting))

    def try_complete_elections(self, tps) -> None:
        """`DelayedElectLeader.tryComplete` for the elections waiting on any of `tps`."""
        named = set(tps)
        for key in sorted(self.elections):
            waiting = self.elections[key].waiting
            if waiting and named.intersection(waiting) and self._update_waiting(key):
                self._finish_election(key)

    def on_elect_leaders_timeout(self) -> None:
        for key in self.election_deadlines.expired():
            if key in self.elections:
                self._update_waiting(key)
                self._finish_election(key)

    def _update_waiting(self, key: int) -> bool:
        """Move each waiting partition whose expected leader the cache names to NONE; whether
        none is left waiting."""
        waiting, results = self.elections[key].waiting, self.elections[key].results
        for tp in AE.seen_in_cache(waiting, self.metadata):
            del waiting[tp]
            results[tp] = E.NONE
        return not waiting

    def _finish_election(self, key: int) -> None:
        """`onComplete`: the partitions still waiting time out."""
        self.election_deadlines.cancel(key)
        entry = self.elections[key]
        self._answer_election(key, AE.completed_answer(entry.waiting, entry.results))

    def _answer_election(self, key: int, results: dict) -> None:
        entry = self.elections.pop(key)
        answered = AE.answered(dict(sorted(results.items())), entry.every)
        self.send(entry.admin, "ElectLeadersResponse",
                  ElectLeadersResponse(entry.corr, E.NONE, tuple(answered.items())))
