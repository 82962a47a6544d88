"""A deleted topic's partition state while its deletion runs, in a probe of a ZooKeeper-mode
controller: `OfflineReplica`'s ZooKeeper write of the shrunk ISR (no LeaderAndIsr sent), and
the LeaderAndIsr of that state that `OnlineReplica` sends a restarted broker or, at a failover,
every live replica (ReplicaStateMachine and KafkaController.onBrokerStartup at 2.4.0 and
3.7.0)."""

from __future__ import annotations

import pytest

from sim.kafka.rules.controller import isr_removal
from tests.probe.helpers import probe_checks

HEAD = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
[[topics]]
name = "foo"
partitions = 1
replication_factor = {rf}
[probe]
kafka_test = "DeleteTopicTest.testResumeDeleteTopicWithRecoveredFollower"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
live_brokers = [{{ id = 1, epoch = 1 }}, {{ id = 2, epoch = 2 }}, {{ id = 3, epoch = 3 }}]
"""
DELETE = '[[probe.steps]]\ndeliver = "TopicDeletion"\nbody = { topics = ["foo"] }\n'
B2_DOWN = '[[probe.steps]]\ndeliver = "BrokerChange"\nbody = { live_brokers = [{ id = 1 }, { id = 3 }] }\n'
B2_BACK = ('[[probe.steps]]\ndeliver = "BrokerChange"\n'
           'body = { live_brokers = [{ id = 1 }, { id = 2, epoch = 10 }, { id = 3 }] }\n')
STATE = '"leader:foo-0" = "x", "isr:foo-0" = "x", "leader_epoch:foo-0" = "x", "partition_epoch:foo-0" = "x"'


def _expect(expect: str) -> str:
    return f"expect = {{ {expect} }}\n"


def _model(text: str) -> dict:
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


def test_isr_removal_leaves_the_last_member_and_drops_the_leader():
    assert isr_removal(1, (1, 2, 3), 1) == (-1, (2, 3))
    assert isr_removal(1, (1, 2, 3), 2) == (1, (1, 3))
    assert isr_removal(-1, (3,), 3) == (-1, (3,))
    assert isr_removal(1, (1, 3), 2) is None


@pytest.mark.parametrize("profile", ["2.4", "3.7"])
def test_a_deletion_writes_each_replicas_isr_removal_and_sends_no_leader_and_isr(profile):
    """Three replicas taken offline one broker at a time (the model's order: by broker id):
    three writes, each a new leader epoch and partition epoch; leaderless, the ISR the last
    broker written; no LeaderAndIsr, as the topic is queued for deletion."""
    seen = _model(HEAD.format(profile=profile, rf=3) + DELETE + _expect(
        STATE + ', "sent_count:LeaderAndIsr>b1" = -1, "sent_count:LeaderAndIsr>b3" = -1'))
    assert seen["0:leader:foo-0"] == -1
    assert seen["0:isr:foo-0"] == [3]
    assert seen["0:leader_epoch:foo-0"] == 3
    assert seen["0:partition_epoch:foo-0"] == 3
    assert seen["0:sent_count:LeaderAndIsr>b1"] == seen["0:sent_count:LeaderAndIsr>b3"] == 0


def test_the_deleted_partitions_state_goes_with_the_topic():
    seen = _model(HEAD.format(profile="3.7", rf=1) + DELETE
                  + '[[probe.steps]]\ndeliver = "StopReplicaResponse"\nfrom = "b1"\n'
                  + _expect('"leader:foo-0" = "x", "isr:foo-0" = "x"'))
    assert seen["1:leader:foo-0"] == "none" and seen["1:isr:foo-0"] == "none"


def test_a_restarted_broker_gets_a_leader_and_isr_of_the_deleted_partition():
    """Broker 2 down during the deletion: its replica is ReplicaDeletionIneligible, unwritten;
    on its return `OnlineReplica` sends it foo-0 as ZooKeeper holds it, the UpdateMetadata
    that goes with it marking foo-0 deleted."""
    seen = _model(HEAD.format(profile="3.7", rf=2) + B2_DOWN + DELETE + B2_BACK + _expect(
        '"leader_and_isr.leader:2/foo-0" = "x", "leader_and_isr.isr:2/foo-0" = "x", '
        '"leader_and_isr.leader_epoch:2/foo-0" = "x", "deletion_state:2/foo-0" = "x", '
        '"update_metadata_deleted:3" = "x"'))
    assert seen["2:leader_and_isr.leader:2/foo-0"] == -1
    assert seen["2:leader_and_isr.isr:2/foo-0"] == [1]
    assert seen["2:leader_and_isr.leader_epoch:2/foo-0"] == 2
    assert seen["2:deletion_state:2/foo-0"] == "OnlineReplica"
    assert seen["2:update_metadata_deleted:3"] == ["foo-0"]


def test_a_bounced_broker_fails_its_replica_being_deleted_then_gets_a_leader_and_isr():
    """A broker registering again with a new epoch is bounced (`processBrokerChange`:
    `onBrokerFailure` then `onBrokerStartup`, read at 3.7.0): its ReplicaDeletionStarted
    replica fails (ReplicaDeletionIneligible), so it may go OnlineReplica (`validPreviousStates`)
    and gets a LeaderAndIsr of the partition; the other replica still being deleted, it waits."""
    seen = _model(HEAD.format(profile="3.7", rf=2) + DELETE + B2_BACK + _expect(
        '"leader_and_isr.leader:2/foo-0" = "x", "deletion_state:2/foo-0" = "x", '
        '"deletion_state:1/foo-0" = "x"'))
    assert seen["1:leader_and_isr.leader:2/foo-0"] == -1
    assert seen["1:deletion_state:2/foo-0"] == "OnlineReplica"
    assert seen["1:deletion_state:1/foo-0"] == "ReplicaDeletionStarted"
