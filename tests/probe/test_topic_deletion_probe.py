"""Topic deletion in a probe of a ZooKeeper-mode controller: ZooKeeper's TopicDeletion
notification, brokers' StopReplica answers, and the replica states TopicDeletionManager moves
a deleted topic's replicas through; the rules behind them; bad probes refused."""

from __future__ import annotations

from sim.kafka.rules import topic_deletion as TD
from tests.probe.helpers import assert_refused, probe_checks

HEAD = """
[protocol]
profile = "3.7"
[cluster]
brokers = 3
[[topics]]
name = "foo"
partitions = 2
replication_factor = 3
[probe]
kafka_test = "TopicDeletionManagerTest.testBrokerFailureAfterDeletionStarted"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
live_brokers = [{ id = 1, epoch = 1 }, { id = 2, epoch = 2 }, { id = 3, epoch = 3 }]
"""
DELETE = '[[probe.steps]]\ndeliver = "TopicDeletion"\nbody = { topics = ["foo"] }\n'
B2_DOWN = '[[probe.steps]]\ndeliver = "BrokerChange"\nbody = { live_brokers = [{ id = 1 }, { id = 3 }] }\n'
B2_BACK = ('[[probe.steps]]\ndeliver = "BrokerChange"\n'
           'body = { live_brokers = [{ id = 1 }, { id = 2, epoch = 10 }, { id = 3 }] }\n')


def _answer(broker: int, extra: str = "") -> str:
    return f'[[probe.steps]]\ndeliver = "StopReplicaResponse"\nfrom = "b{broker}"\n{extra}'


def _expect(expect: str) -> str:
    return f"expect = {{ {expect} }}\n"


def _model(text: str) -> dict:
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


def test_a_deletion_goes_offline_then_started_with_two_stop_replicas_per_broker():
    seen = _model(HEAD + DELETE + _expect(
        'sent_to = [], "deletion_state:2/foo-1" = "x", "stop_replica.delete:3/foo-0" = "x"'))
    assert seen["0:deletion_state:2/foo-1"] == TD.STARTED
    assert seen["0:stop_replica.delete:3/foo-0"] is True
    assert seen["0:sent_to"] == (["UpdateMetadata>b1", "UpdateMetadata>b2", "UpdateMetadata>b3"]
                                 + ["StopReplica>b1", "StopReplica>b2", "StopReplica>b3"] * 2)


def test_a_returning_broker_waits_until_the_other_replicas_are_deleted():
    """`resumeDeletions` retries nothing while a replica is ReplicaDeletionStarted: the broker
    that failed mid-deletion gets its StopReplicas only after the others answered."""
    seen = _model(HEAD + DELETE + B2_DOWN + _expect('topics_ineligible_for_deletion = []')
                  + B2_BACK + _expect('"sent_count:StopReplica>b2" = -1, '
                                      'topics_ineligible_for_deletion = ["x"]')
                  + _answer(1) + _answer(3) + _expect(
                      '"sent_count:StopReplica>b2" = -1, "deletion_state:2/foo-0" = "x"'))
    assert seen["1:topics_ineligible_for_deletion"] == ["foo"]
    assert seen["2:sent_count:StopReplica>b2"] == 0
    assert seen["2:topics_ineligible_for_deletion"] == []
    assert seen["4:sent_count:StopReplica>b2"] == 2
    assert seen["4:deletion_state:2/foo-0"] == TD.STARTED


def test_a_failed_stop_replica_halts_the_deletion_until_the_broker_returns():
    """`failReplicaDeletion`: the replica is ReplicaDeletionIneligible and its topic halted;
    once nothing is being deleted it goes back to OfflineReplica (a StopReplica without
    deletion), and the deletion resumes with the broker's startup."""
    failed = 'body = { partitions = [{ tp = "foo-0", error = "KAFKA_STORAGE_ERROR" }, { tp = "foo-1" }] }\n'
    seen = _model(HEAD + DELETE + _answer(1) + _answer(2, failed)
                  + _expect('"deletion_state:2/foo-0" = "x", "deletion_state:2/foo-1" = "x", '
                            'topics_ineligible_for_deletion = []')
                  + _answer(3) + _expect('"deletion_state:2/foo-0" = "x", sent_to = [], '
                                         '"stop_replica.delete:2/foo-0" = "x"')
                  + B2_DOWN + B2_BACK + _expect('"deletion_state:2/foo-0" = "x"')
                  + _answer(2) + _expect('topics_to_be_deleted = ["x"]'))
    assert seen["2:deletion_state:2/foo-0"] == TD.INELIGIBLE
    assert seen["2:deletion_state:2/foo-1"] == TD.SUCCESSFUL
    assert seen["2:topics_ineligible_for_deletion"] == ["foo"]
    assert seen["3:deletion_state:2/foo-0"] == TD.OFFLINE
    assert seen["3:sent_to"] == ["StopReplica>b2"]
    assert seen["3:stop_replica.delete:2/foo-0"] is False
    assert seen["5:deletion_state:2/foo-0"] == TD.STARTED
    assert seen["6:topics_to_be_deleted"] == []


def test_a_fenced_controller_sends_the_deletions_update_metadata_then_resigns():
    text = (HEAD.replace("[cluster]\n", "[cluster]\ncontrollers = 2\n")
            + '[[probe.steps]]\ndeliver = "ControllerZnode"\nbody = { controller = "c2" }\n'
            + DELETE + _expect('active = true, sent_to = [], topics_to_be_deleted = ["x"]'))
    seen = _model(text)
    assert seen["1:active"] is False and seen["1:topics_to_be_deleted"] == []
    assert seen["1:sent_to"] == ["UpdateMetadata>b1", "UpdateMetadata>b2", "UpdateMetadata>b3"]


def test_resume_decision_follows_resume_deletions():
    assert TD.resume_decision([TD.SUCCESSFUL, TD.SUCCESSFUL], True) == "complete"
    assert TD.resume_decision([TD.STARTED, TD.INELIGIBLE], False) == "wait"
    assert TD.resume_decision([TD.SUCCESSFUL, TD.INELIGIBLE], True) == "retry"
    assert TD.resume_decision([TD.SUCCESSFUL, TD.INELIGIBLE], False) == "retry+start"
    assert TD.resume_decision([TD.ONLINE, TD.OFFLINE], False) == "start"
    assert TD.resume_decision([TD.ONLINE, TD.OFFLINE], True) == "wait"


def test_only_kafkas_valid_previous_states_move():
    states = {1: TD.ONLINE, 2: TD.SUCCESSFUL, 3: TD.STARTED, 4: TD.OFFLINE}
    assert TD.valid_transitions(states, [1, 2, 3, 4], TD.INELIGIBLE) == [3, 4]
    assert TD.valid_transitions(states, [1, 2, 3, 4], TD.STARTED) == [4]
    assert TD.valid_transitions(states, [4, 1], TD.OFFLINE) == [4, 1]


def test_a_stop_replica_answer_must_come_from_a_broker():
    assert_refused(HEAD + DELETE + '[[probe.steps]]\ndeliver = "StopReplicaResponse"\n'
                   'from = "zk"\n', "from")
