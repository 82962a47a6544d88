"""An admin client's requests to a KRaft controller under test (CreateTopics, CreatePartitions,
DeleteTopics, ElectLeaders, AlterPartitionReassignments, from the `admin` pseudo-sender): each
answered with an error per topic or partition (`result:<name>`), the records written judged;
bad steps refused when the scenario loads; and the placement rule on its own."""

from __future__ import annotations

import pytest

from scenarios.schema import parse_scenario
from sim.kafka.rules import kraft_admin
from tests.probe.helpers import assert_refused, kraft_controller_probe, probe_checks

ADMIN = kraft_controller_probe("ReplicationControlManagerTest.testCreateTopicsISRInvariants", 3) + """
[probe.state]
records = [{{ type = "RegisterBrokerRecord", broker = 1 }}, {{ type = "RegisterBrokerRecord", broker = 2 }},
           {{ type = "RegisterBrokerRecord", broker = 3, fenced = true }}{extra}]
[[probe.steps]]
deliver = "{deliver}"
{src}body = {{ {body} }}
expect = {{ {expect} }}
"""
FOO = (', { type = "TopicRecord", name = "foo" }, '
       '{ type = "PartitionRecord", tp = "foo-0", replicas = [2, 1], leader = 2 }')


def _text(deliver="CreateTopics", body='name = "foo", replication_factor = 3', expect="",
          extra="", src=""):
    return ADMIN.format(deliver=deliver, body=body, expect=expect, extra=extra, src=src)


def _agree(text: str) -> dict:
    checks = probe_checks(text)
    assert all(kafka == model for kafka, model in checks.values()), checks
    return checks


def test_a_topic_is_placed_on_fenced_brokers_too_with_the_active_ones_as_isr():
    """`StripedReplicaPlacer.place` offers every registered broker, fenced ones last: three
    replicas on two unfenced brokers and a fenced one are created, the ISR the two active.
    The model refused them (fewer unfenced brokers than the replication factor) before."""
    _agree(_text(expect='"result:foo" = "NONE", "records" = ["TopicRecord", "PartitionRecord"], '
                        '"replicas:foo-0" = [1, 2, 3], "isr:foo-0" = [1, 2], "leader:foo-0" = 1'))


def test_a_replication_factor_above_the_registered_brokers_is_refused():
    _agree(_text(body='name = "foo", replication_factor = 4',
                 expect='"result:foo" = "INVALID_REPLICATION_FACTOR", "records" = []'))


def test_an_existing_topic_and_a_manual_assignment_naming_an_unknown_broker_are_refused():
    _agree(_text(body='name = "foo", replication_factor = 1', extra=FOO,
                 expect='"result:foo" = "TOPIC_ALREADY_EXISTS", "records" = []'))
    _agree(_text(body='name = "bar", assignments = [{ broker_ids = [1, 2] }, { broker_ids = [3] }]',
                 expect='"result:bar" = "INVALID_REPLICA_ASSIGNMENT", "records" = []'))


def test_create_partitions_adds_partitions_with_the_topic_replication_factor():
    _agree(_text(deliver="CreatePartitions", body='name = "foo", count = 3', extra=FOO,
                 expect='"result:foo" = "NONE", "records" = ["PartitionRecord", "PartitionRecord"], '
                        '"replicas:foo-1" = [2, 1], "replicas:foo-2" = [1, 2], "isr:foo-2" = [1, 2]'))
    _agree(_text(deliver="CreatePartitions", body='name = "foo", count = 1', extra=FOO,
                 expect='"result:foo" = "INVALID_PARTITIONS", "records" = []'))


def test_elect_leaders_answers_per_partition_and_writes_only_real_elections():
    extra = FOO.replace("leader = 2 }", "leader = 2 }, { type = \"PartitionRecord\", tp = \"foo-1\", "
                        "replicas = [3, 1], isr = [1], leader = 1 }")
    _agree(_text(deliver="ElectLeaders", body='partitions = ["foo-0", "foo-1", "foo-2"]', extra=extra,
                 expect='"error" = "NONE", "result:foo-0" = "ELECTION_NOT_NEEDED", '
                        '"result:foo-1" = "PREFERRED_LEADER_NOT_AVAILABLE", '
                        '"result:foo-2" = "UNKNOWN_TOPIC_OR_PARTITION", "records" = []'))


def test_delete_topics_by_name_and_by_id():
    _agree(_text(deliver="DeleteTopics", body='topic_names = ["foo", "bar"], topic_ids = [7]',
                 extra=FOO, expect='"result:foo" = "NONE", "result:bar" = '
                 '"UNKNOWN_TOPIC_OR_PARTITION", "result:7" = "UNKNOWN_TOPIC_ID", '
                 '"records" = ["RemoveTopicRecord"], "leader:foo-0" = "none"'))


def test_a_reassignment_starts_and_a_cancel_needs_one_in_progress():
    _agree(_text(deliver="AlterPartitionReassignments",
                 body='partitions = [{ tp = "foo-0", replicas = [3, 1] }]', extra=FOO,
                 expect='"result:foo-0" = "NONE", "replicas:foo-0" = [3, 1, 2], '
                        '"adding_replicas:foo-0" = [3], "removing_replicas:foo-0" = [2]'))
    _agree(_text(deliver="AlterPartitionReassignments", body='partitions = [{ tp = "foo-0" }]',
                 extra=FOO, expect='"result:foo-0" = "NO_REASSIGNMENT_IN_PROGRESS"'))


@pytest.mark.parametrize("change,key", [
    (dict(body='name = "foo"'), "probe.steps[0].body.replication_factor"),
    (dict(src='from = "b1"\n'), "probe.steps[0].from"),
    (dict(deliver="ElectLeaders", body='partitions = "foo-0"'), "probe.steps[0].body.partitions"),
    (dict(deliver="AlterPartitionReassignments", body='partitions = [{ replicas = [1] }]'),
     "probe.steps[0].body.partitions[0].tp"),
    (dict(expect='"result" = "NONE"'), "probe.steps[0].expect.result"),
])
def test_bad_admin_steps_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)


def _zk(deliver: str, body: str, profile: str = "3.7") -> str:
    return (f'[protocol]\nprofile = "{profile}"\n[cluster]\nbrokers = 3\ncontrollers = 1\n'
            '[[topics]]\nname = "t"\n[probe]\nkafka_test = "T.t"\nkafka_tag = "3.7.0"\n'
            f'node = "c1"\n[[probe.steps]]\ndeliver = "{deliver}"\nbody = {{ {body} }}\n')


def test_an_admin_request_goes_to_a_kraft_controller_only_but_elect_leaders():
    assert_refused(_zk("DeleteTopics", 'topic_names = ["t"]'), "probe.steps[0].deliver")
    parse_scenario(_zk("ElectLeaders", 'partitions = ["t-0"], election_type = "UNCLEAN"'),
                   "probe.toml")


@pytest.mark.parametrize("profile,body,why", [
    ("2.1", 'partitions = ["t-0"]', "no ElectLeaders request before 2.2"),
    ("2.3", 'election_type = "UNCLEAN"', "UNCLEAN comes with ElectLeaders v1"),
    ("3.7", 'election_type = "DIRTY"', "no election type 'DIRTY'"),
])
def test_an_election_the_release_cannot_send_is_refused_in_one_line(profile, body, why):
    message = assert_refused(_zk("ElectLeaders", body, profile), "probe.steps[0].body")
    assert why in message


@pytest.mark.parametrize("unfenced,fenced,rf,placed", [
    ((1, 2), (3,), 3, [[1, 2, 3], [2, 1, 3]]),  # fenced brokers only after the unfenced
    ((1, 2, 3), (), 2, [[1, 2], [2, 3]]),       # a rotation over the unfenced
    ((2,), (1, 3), 2, [[2, 1], [2, 3]]),        # the leader is always unfenced
])
def test_place_replicas(unfenced, fenced, rf, placed):
    assert kraft_admin.place_replicas(unfenced, fenced, 2, rf) == placed


@pytest.mark.parametrize("unfenced,fenced,rf,error", [
    ((), (1, 2), 1, "All brokers are currently fenced."),
    ((1,), (2,), 3, "only 2 broker(s) are registered"),
    ((1,), (), 0, "the replication factor must be positive"),
])
def test_place_replicas_refusals(unfenced, fenced, rf, error):
    placed = kraft_admin.place_replicas(unfenced, fenced, 1, rf)
    assert placed.startswith("INVALID_REPLICATION_FACTOR: ") and error in placed, placed


def test_unregister_broker_takes_it_out_of_the_isrs_then_removes_its_registration():
    _agree(_text(deliver="UnregisterBroker", body="broker_id = 2", extra=FOO,
                 expect='"error" = "NONE", "records" = ["PartitionChangeRecord", '
                        '"UnregisterBrokerRecord"], "leader:foo-0" = 1, "isr:foo-0" = [1], '
                        '"fenced:2" = "none", "broker_epoch:2" = "none"'))
    _agree(_text(deliver="UnregisterBroker", body="broker_id = 3",
                 extra=', { type = "UnregisterBrokerRecord", broker = 3 }',
                 expect='"error" = "BROKER_ID_NOT_REGISTERED", "records" = []'))
