"""A new ZooKeeper-mode controller takes the replicas on dead brokers offline as it starts
(KAFKA-3143, 2.3; switch `offline_replicas_at_failover`).

Kafka: `ReplicaStateMachine.startup` moves every replica `isReplicaOnline` says is offline to
OfflineReplica from 2.3.0 (only the live ones to OnlineReplica up to 2.2.0), which takes it out
of the ISR with a new leader epoch (`doRemoveReplicasFromIsr`, `newLeaderAndIsr`), before
`PartitionStateMachine.startup` elects leaders (`onControllerFailover`, read at 2.2.0, 2.3.0
and 3.7.0). Posed on the probe's controller, which becomes active before its first step with
t-0 led by b1 at leader epoch 2, ISR [1, 2, 3], and b3 not registered: b3 died while no
controller was active. The step, ZooKeeper's notification of the same live brokers, changes
nothing.
"""

from __future__ import annotations

import pytest

from tests.probe.helpers import probe_checks
from tests.probe.test_zk_controller_probe import _text

LIVE = "[{ id = 1 }, { id = 2 }]"


def _checks(profile: str, expect: str, leader: int = 1) -> dict:
    text = _text(profile=profile, live=LIVE, deliver="BrokerChange",
                 body=f"live_brokers = {LIVE}", expect=expect)
    return probe_checks(text.replace("leader = 1, leader_epoch = 2", f"leader = {leader}, "
                                     "leader_epoch = 2").replace('from = "b1"\n', ""))


@pytest.mark.parametrize("profile,isr,epoch", [("2.2", [1, 2, 3], 2), ("2.3", [1, 2], 3),
                                               ("3.7", [1, 2], 3)])
def test_a_new_controller_takes_dead_followers_out_of_the_isr_from_2_3(profile, isr, epoch):
    checks = _checks(profile, f'"isr:t-0" = {isr}, "leader:t-0" = 1, "leader_epoch:t-0" = {epoch}')
    assert checks["isr:t-0"] == (isr, isr)
    assert checks["leader_epoch:t-0"] == (epoch, epoch)
    assert checks["leader:t-0"] == (1, 1)


@pytest.mark.parametrize("profile,epoch", [("2.2", 3), ("2.3", 4)])
def test_a_dead_leader_leaves_the_isr_and_then_is_replaced(profile, epoch):
    """From 2.3 the dead leader's OfflineReplica writes the partition leaderless (one epoch)
    and the election then names b1, the first live replica in the ISR (another); up to 2.2
    the election alone. Either way the election keeps the live ISR members
    (`OfflinePartitionLeaderElectionStrategy`)."""
    checks = _checks(profile, f'"isr:t-0" = [1, 2], "leader:t-0" = 1, "leader_epoch:t-0" = {epoch}',
                     leader=3)
    assert checks["leader:t-0"] == (1, 1)
    assert checks["isr:t-0"] == ([1, 2], [1, 2])
    assert checks["leader_epoch:t-0"] == (epoch, epoch)
