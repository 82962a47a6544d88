"""The admin's leader elections by request, on either controller: which partitions need one,
and what a partition's answer says when its election is not needed or fails.

Contract: pure functions of plain values (broker ids, replica lists, the `admin_elect_leaders`
switch's value). Read at 2.2.0 (KIP-183's ElectPreferredLeaders:
`KafkaController.PreferredReplicaLeaderElection` with `AdminClientTriggered`), 2.4.0 and 3.7.0
(KIP-460's ElectLeaders: `KafkaApis.handleElectLeaders`, `KafkaController
.processReplicaLeaderElection`, `onReplicaElection`), and for KRaft 3.7.0 and 3.9.0-rc3
(`ReplicationControlManager.electLeaders`, `electLeader`; the same check in the copies the
code search holds). The election itself is each controller's own: ZooKeeper mode's
`rules.elections` (a preferred one, or the offline election with `allowUnclean`), KRaft's
`PartitionChangeBuilder` with `Election.PREFERRED` or `UNCLEAN`. A ZooKeeper-mode broker's
purgatory (`seen_in_cache`, `completed_answer`) holds each elected partition's answer until its
own metadata cache names the leader.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.switch_choices import elect_leaders_refused as refused  # noqa: F401 (the loaders')
from sim.kafka.vocab import ADMIN_UNCLEAN_ELECTION

PREFERRED, UNCLEAN = "PREFERRED", "UNCLEAN"
ELECTION_TYPES = (PREFERRED, UNCLEAN)
ADMIN_UNCLEAN = ADMIN_UNCLEAN_ELECTION  # the invariants excuse the loss an operator chose
ADMIN_PREFERRED = "elect:preferred"


def zk_election_needed(election_type: str, replicas, leader: int, live_brokers) -> bool:
    """`processReplicaLeaderElection`'s split: PREFERRED elects where the first replica does
    not lead; UNCLEAN where there is no leader or its broker is not live (`liveBrokerIds`:
    registered and not shutting down)."""
    if election_type == PREFERRED:
        return bool(replicas) and leader != replicas[0]
    return leader == E.NO_LEADER or leader not in live_brokers


def kraft_election_needed(election_type: str, replicas, leader: int) -> bool:
    """`electLeader`: PREFERRED is not needed where the first replica leads
    (`hasPreferredLeader`), UNCLEAN where any replica leads (`hasLeader`: a KRaft controller
    takes the leadership from a fenced broker, so a leader is a live one)."""
    if election_type == PREFERRED:
        return not (replicas and leader == replicas[0])
    return leader == E.NO_LEADER


def not_needed_error(mode: str) -> int:
    """A partition whose election is not needed: ELECTION_NOT_NEEDED from KIP-460; KIP-183's
    ElectPreferredLeaders answered one its preferred replica led NONE (`alreadyPreferred`)."""
    return E.NONE if mode == "preferred" else E.ELECTION_NOT_NEEDED


def failed_error(election_type: str) -> int:
    """A partition whose election found no leader (`StateChangeFailedException` in ZooKeeper
    mode, no record from `PartitionChangeBuilder` in KRaft)."""
    return E.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED \
        else E.ELIGIBLE_LEADERS_NOT_AVAILABLE


def answered(results: dict, every_partition: bool) -> dict:
    """The answer's partitions: an election of every partition (no partitions named) leaves
    out those that needed none (`handleElectLeaders` in ZooKeeper mode, `electLeaders` in
    KRaft)."""
    if not every_partition:
        return results
    return {tp: e for tp, e in results.items() if e != E.ELECTION_NOT_NEEDED}


def seen_in_cache(waiting: dict, cache: dict) -> list:
    """`DelayedElectLeader.updateWaiting` (2.4.0-3.9.0-rc3; `DelayedElectPreferredLeader` at
    2.2.0): the waiting partitions (tp -> the leader elected) whose leader the broker's metadata
    cache (tp -> (topic id, leader, leader epoch)) now names, in partition order."""
    return [tp for tp in sorted(waiting) if cache.get(tp, (None, None))[1] == waiting[tp]]


def completed_answer(waiting: dict, results: dict) -> dict:
    """`onComplete`: the answer per partition once the purgatory lets go, the partitions still
    waiting REQUEST_TIMED_OUT beside the results already known."""
    return {**{tp: E.REQUEST_TIMED_OUT for tp in waiting}, **results}
