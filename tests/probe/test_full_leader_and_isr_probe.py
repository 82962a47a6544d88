"""A FULL LeaderAndIsr (KIP-516's type) and the replicas it leaves out: a release's broker
keeps them (Kafka removes them only in the ZooKeeper migration, from a KRaft controller,
`ReplicaManager.becomeLeaderOrFollower` at 3.7.0); the `full_leader_and_isr` proposal's
broker removes them."""

from tests.probe.helpers import broker_probe, partition_state, probe_checks

STEP = """
[[probe.steps]]
deliver = "LeaderAndIsr"
body = { full = true, partitions = [{ tp = "t-0", leader = 1, leader_epoch = 10, replicas = [1, 2] }] }
expect = { "hosted:stray-0" = true, "log_exists:stray-0" = true }
"""


def _probe(profile: str) -> str:
    state = "".join(partition_state(tp, leader=1, leader_epoch=0, replicas=[1, 2])
                    for tp in ("t-0", "stray-0"))
    return broker_probe("ReplicaManagerTest.probe", "b1", 2, profile) + state + STEP


def test_a_release_s_broker_keeps_the_replicas_a_full_leader_and_isr_leaves_out():
    checks = probe_checks(_probe("3.7"))
    assert checks == {"hosted:stray-0": (True, True), "log_exists:stray-0": (True, True)}


def test_the_proposal_s_broker_removes_them():
    checks = probe_checks(_probe("proposed"))
    assert checks == {"hosted:stray-0": (True, False), "log_exists:stray-0": (True, False)}
