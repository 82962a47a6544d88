"""A topic deleted while one of its partitions is being reassigned, as Kafka's ZooKeeper-mode
controller handles it (KafkaController.processTopicDeletion, onPartitionReassignment,
maybeResumeReassignments, fetchTopicDeletionsInProgress; TopicDeletionManager
.markTopicIneligibleForDeletion; read at 1.0.0, 2.4.0 and 3.7.0). No Kafka unit test covers
it: `processTopicDeletion` marks a topic being reassigned ineligible before it queues it, and
`markTopicIneligibleForDeletion` ignores a topic not queued, so the deletion starts at once,
over the reassignment's replicas too; the reassignment stays in progress, and halts the
deletion once another notification names the queued topic, a new controller takes over, or
the reassignment resumes. The model cancelled the reassignment, so nothing ever halted it."""

from __future__ import annotations

import pytest

from tests.probe.helpers import probe_checks

HEAD = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
controllers = 2
[[topics]]
name = "foo"
partitions = 1
assignment = [[1, 2]]
[probe]
kafka_test = "DeleteTopicTest.testPartitionReassignmentDuringDeleteTopic"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
live_brokers = [{{ id = 1, epoch = 1 }}, {{ id = 2, epoch = 2 }}, {{ id = 3, epoch = 3 }}]
[[probe.steps]]
deliver = "PartitionReassignment"
body = {{ partitions = [{{ tp = "foo-0", replicas = [3, 2] }}] }}
"""
DELETE = '[[probe.steps]]\ndeliver = "TopicDeletion"\nbody = { topics = ["foo"] }\n'
FAILOVER = ('[[probe.steps]]\ndeliver = "ControllerChange"\nbody = { controller = "c2" }\n'
            '[[probe.steps]]\ndeliver = "Reelect"\nbody = { controller = "none" }\n')


def _answer(broker: int, error: str = "") -> str:
    extra = f'body = {{ partition_error = "{error}" }}\n' if error else ""
    return f'[[probe.steps]]\ndeliver = "StopReplicaResponse"\nfrom = "b{broker}"\n{extra}'


def _expect(expect: str) -> str:
    return f"expect = {{ {expect} }}\n"


def _model(text: str) -> dict:
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


@pytest.mark.parametrize("profile", ["2.4", "3.7"])
def test_a_new_deletion_of_a_topic_being_reassigned_starts_at_once(profile):
    seen = _model(HEAD.format(profile=profile) + _expect('"replicas:foo-0" = "x"') + DELETE
                  + _expect('topics_ineligible_for_deletion = "x", '
                            '"deletion_state:3/foo-0" = "x", "deletion_state:1/foo-0" = "x", '
                            '"leader:foo-0" = "x", "leader_epoch:foo-0" = "x"'))
    assert seen["0:replicas:foo-0"] == [3, 2, 1]
    assert seen["1:topics_ineligible_for_deletion"] == []
    assert seen["1:deletion_state:3/foo-0"] == seen["1:deletion_state:1/foo-0"] == "ReplicaDeletionStarted"
    # the reassignment's epoch 1, then brokers 1 and 2 out of the ISR [1, 2], one write each
    assert seen["1:leader:foo-0"] == -1 and seen["1:leader_epoch:foo-0"] == 3


def test_a_second_notification_halts_the_deletion_so_a_failed_replica_is_not_retried():
    """foo named again (/admin/delete_topics still lists it): queued and being reassigned, it
    is ineligible; broker 2 fails its deletion, so once the others answered, its replica goes
    back to OfflineReplica (`retryDeletionForIneligibleReplicas`) and the deletion waits."""
    seen = _model(HEAD.format(profile="3.7") + DELETE + DELETE
                  + _expect('topics_ineligible_for_deletion = "x"')
                  + _answer(2, "KAFKA_STORAGE_ERROR") + _answer(1) + _answer(3)
                  + _expect('topics_ineligible_for_deletion = "x", "deletion_state:2/foo-0" = "x", '
                            '"stop_replica.delete:2/foo-0" = "x", "topics_to_be_deleted" = "x"'))
    assert seen["2:topics_ineligible_for_deletion"] == ["foo"]
    assert seen["5:topics_ineligible_for_deletion"] == ["foo"]
    assert seen["5:deletion_state:2/foo-0"] == "OfflineReplica"
    assert seen["5:stop_replica.delete:2/foo-0"] is False
    assert seen["5:topics_to_be_deleted"] == ["foo"]


def test_a_new_controller_resumes_the_reassignment_of_a_deleted_topic_and_halts_its_deletion():
    """`fetchTopicDeletionsInProgress` counts foo ineligible, and `maybeResumeReassignments`
    runs `onPartitionReassignment` for foo-0: its target [3, 2] not in the ISR, the leader
    epoch goes up once more and each live replica gets it in a LeaderAndIsr."""
    seen = _model(HEAD.format(profile="3.7") + DELETE + FAILOVER + _expect(
        'active = "x", topics_ineligible_for_deletion = "x", "leader_epoch:foo-0" = "x", '
        '"leader_and_isr.leader_epoch:3/foo-0" = "x", "leader_and_isr.leader:3/foo-0" = "x", '
        '"deletion_state:3/foo-0" = "x", "update_metadata_deleted:1" = "x"'))
    assert seen["3:active"] is True
    assert seen["3:topics_ineligible_for_deletion"] == ["foo"]
    assert seen["3:leader_epoch:foo-0"] == 4
    assert seen["3:leader_and_isr.leader_epoch:3/foo-0"] == 4
    assert seen["3:leader_and_isr.leader:3/foo-0"] == -1
    assert seen["3:deletion_state:3/foo-0"] == "OnlineReplica"
    assert seen["3:update_metadata_deleted:1"] == ["foo-0"]


def test_the_reassignment_goes_with_the_deleted_topic():
    seen = _model(HEAD.format(profile="3.7") + DELETE + _answer(1) + _answer(2) + _answer(3)
                  + FAILOVER + _expect('topics_to_be_deleted = "x", "replicas:foo-0" = "x", '
                                       '"leader_and_isr.leader_epoch:3/foo-0" = "x"'))
    assert seen["6:topics_to_be_deleted"] == [] and seen["6:replicas:foo-0"] == "none"
    assert seen["6:leader_and_isr.leader_epoch:3/foo-0"] == "none"
