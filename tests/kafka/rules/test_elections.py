"""The ZooKeeper-mode controller's leader elections against Kafka's own table of cases:
`PartitionLeaderElectionAlgorithmsTest` (core/src/test/scala/unit/kafka/controller, 1.1.0 to
3.7.0, read at 3.7.0), each row its test's assignment, ISR, live replicas and expected leader
(None: the election fails)."""

from __future__ import annotations

import pytest

from sim.kafka.rules import elections as el

OFFLINE = [  # (test, assignment, isr, live, unclean, leader)
    ("testOfflinePartitionLeaderElection", (2, 4), (2, 4), {4}, False, 4),
    ("testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled",
     (2, 4), (2,), {4}, False, None),
    ("testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled",
     (2, 4), (2,), {4}, True, 4),
]
REASSIGN = [  # (test, reassignment, isr, live, leader)
    ("testReassignPartitionLeaderElection", (2, 4), (2, 4), {4}, 4),
    ("testReassignPartitionLeaderElectionWithNoLiveIsr", (2, 4), (2,), set(), None),
    ("testReassignPartitionLeaderElectionWithEmptyIsr", (2, 4), (), {2}, None),
]
PREFERRED = [  # (test, assignment, isr, live, leader)
    ("testPreferredReplicaPartitionLeaderElection", (2, 4), (2, 4), {2, 4}, 2),
    ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaInIsrNotLive",
     (2, 4), (2,), set(), None),
    ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrLive",
     (2, 4), (4,), {2, 4}, None),
    ("testPreferredReplicaPartitionLeaderElectionPreferredReplicaNotInIsrNotLive",
     (2, 4), (), set(), None),
]
SHUTDOWN = [  # (test, assignment, isr, live, shutting down, leader)
    ("testControlledShutdownPartitionLeaderElection", (2, 4), (2, 4), {2, 4}, {2}, 4),
    ("testControlledShutdownPartitionLeaderElectionLastIsrShuttingDown",
     (2, 4), (2,), {2, 4}, {2}, None),
    ("testControlledShutdownPartitionLeaderElectionAllIsrSimultaneouslyShutdown",
     (2, 4), (2, 4), {2, 4}, {2, 4}, None),
]


@pytest.mark.parametrize("test,assignment,isr,live,unclean,leader", OFFLINE)
def test_offline_partition_leader_election(test, assignment, isr, live, unclean, leader):
    assert el.offline_partition_leader_election(assignment, isr, live, unclean) == leader, test


@pytest.mark.parametrize("test,reassignment,isr,live,leader", REASSIGN)
def test_reassign_partition_leader_election(test, reassignment, isr, live, leader):
    assert el.reassign_partition_leader_election(reassignment, isr, live) == leader, test


@pytest.mark.parametrize("test,assignment,isr,live,leader", PREFERRED)
def test_preferred_replica_partition_leader_election(test, assignment, isr, live, leader):
    assert el.preferred_replica_partition_leader_election(assignment, isr, live) == leader, test


@pytest.mark.parametrize("test,assignment,isr,live,shutting_down,leader", SHUTDOWN)
def test_controlled_shutdown_partition_leader_election(test, assignment, isr, live,
                                                       shutting_down, leader):
    assert el.controlled_shutdown_partition_leader_election(
        assignment, isr, live, shutting_down) == leader, test


def test_an_offline_election_leads_the_live_isr_or_an_isr_of_the_unclean_leader_alone():
    """`Election.leaderForOffline` (3.7.0): `isr.filter(isReplicaOnline)` for a leader from
    the ISR, `List(leader)` for an unclean one."""
    assert el.leader_for_offline((1, 2, 3), (1, 2, 3), {2, 3}, False) == (2, (2, 3))
    assert el.leader_for_offline((1, 2, 3), (1,), {2, 3}, True) == (2, (2,))
    assert el.leader_for_offline((1, 2, 3), (1,), {2, 3}, False) is None


def test_a_controlled_shutdown_election_drops_only_the_brokers_shutting_down_from_the_isr():
    """`Election.leaderForControlledShutdown` (3.7.0): `isr.filter(!shuttingDownBrokerIds)`,
    an offline member kept."""
    assert el.leader_for_controlled_shutdown((1, 2, 3), (1, 2, 3), {1, 2}, {1}) == (2, (2, 3))
    assert el.leader_for_controlled_shutdown((1, 2), (1,), {1, 2}, {1}) is None
