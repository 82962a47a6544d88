"""A new ZooKeeper-mode controller takes the replicas on dead brokers offline as it starts
(KAFKA-3143, 2.3; switch `offline_replicas_at_failover`).

Kafka: `ReplicaStateMachine.startup` moves every replica `isReplicaOnline` says is offline to
OfflineReplica from 2.3.0 (only the live ones to OnlineReplica up to 2.2.0), which takes it out
of the ISR with a new leader epoch (`doRemoveReplicasFromIsr`, `newLeaderAndIsr`), before
`PartitionStateMachine.startup` elects leaders (`onControllerFailover`, read at 2.2.0, 2.3.0
and 3.7.0).
"""

from __future__ import annotations

import pytest

from tests.probe.helpers import probe_checks

# b3, a follower of t-0, died while no controller was active: the new controller finds it in
# the ISR and not registered; b1 still leads
PROBE = """
name = "offline-replicas-at-failover-{version}"
description = "a new controller finds a dead follower in an ISR"

[protocol]
profile = "{version}"

[cluster]
brokers = 3
controllers = 1

[[topics]]
name = "t"
partitions = 1
replication_factor = 3

[probe]
kafka_test = "ReplicaStateMachine.startup"
kafka_tag = "{version}.0"
kafka_source = "core/src/main/scala/kafka/controller/ReplicaStateMachine.scala"
node = "c1"

[probe.state]
controller_epoch = 2
partitions = [{{ tp = "t-0", leader = 1, leader_epoch = 4, partition_epoch = 4, isr = [1, 2, 3], replicas = [1, 2, 3] }}]
live_brokers = [{{ id = 1 }}, {{ id = 2 }}]

[[probe.steps]]
deliver = "BrokerChange"
body = {{ live_brokers = [{{ id = 1 }}, {{ id = 2 }}] }}
expect = {{ "isr:t-0" = {isr}, "leader:t-0" = 1, "leader_epoch:t-0" = {epoch} }}
"""


@pytest.mark.parametrize("version,isr,epoch", [("2.2", [1, 2, 3], 4), ("2.3", [1, 2], 5),
                                               ("3.7", [1, 2], 5)])
def test_a_new_controller_takes_dead_followers_out_of_the_isr_from_2_3(version, isr, epoch):
    checks = probe_checks(PROBE.format(version=version, isr=isr, epoch=epoch))
    assert checks["isr:t-0"] == (isr, isr)
    assert checks["leader_epoch:t-0"] == (epoch, epoch)
    assert checks["leader:t-0"] == (1, 1)


@pytest.mark.parametrize("version,epoch", [("2.2", 5), ("2.3", 6)])
def test_a_dead_leader_is_replaced_after_it_leaves_the_isr(version, epoch):
    """From 2.3 the dead leader's OfflineReplica writes the partition leaderless (one epoch)
    and the election then names b1, the first live replica of the ISR (another); up to 2.2
    the election alone. Either way the election keeps the live ISR members
    (`OfflinePartitionLeaderElectionStrategy`)."""
    text = PROBE.format(version=version, isr=[1, 2], epoch=epoch).replace(
        "leader = 1, leader_epoch = 4", "leader = 3, leader_epoch = 4")
    checks = probe_checks(text)
    assert checks["leader:t-0"] == (1, 1)
    assert checks["isr:t-0"] == ([1, 2], [1, 2])
    assert checks["leader_epoch:t-0"] == (epoch, epoch)
