"""A KRaft controller under test: the only voter of its quorum, active at once, its metadata
log holding the probe's records; brokers' AlterPartition and heartbeats delivered by hand, its
answers and records judged; bad probes refused when the scenario loads."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks

CONTROLLER = """
[protocol]
profile = "3.7"
[cluster]
mode = "{mode}"
brokers = 3
controllers = {controllers}
[probe]
kafka_test = "ReplicationControlManagerTest.testShrinkAndExpandIsr"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
records = [{{ type = "RegisterBrokerRecord", broker = 1 }}, {{ type = "RegisterBrokerRecord", broker = 2 }},
           {{ type = "RegisterBrokerRecord", broker = 3 }}, {{ type = "TopicRecord", name = "foo" }},
           {{ type = "PartitionRecord", tp = "foo-0", replicas = [1, 2, 3], leader = 1 }}{extra}]
[[probe.steps]]
deliver = "{deliver}"
from = "{src}"
body = {{ {body} }}
expect = {{ {expect} }}
"""


def _text(mode="kraft", controllers=1, extra="", deliver="AlterPartition", src="b1",
          body='tp = "foo-0", leader_epoch = 0, partition_epoch = 0, isr = [1, 2]',
          expect='"error" = "NONE", "isr:foo-0" = [1, 2], "partition_epoch:foo-0" = 1'):
    return CONTROLLER.format(mode=mode, controllers=controllers, extra=extra, deliver=deliver,
                             src=src, body=body, expect=expect)




def test_an_isr_shrink_is_written_and_answered_with_the_new_state():
    checks = probe_checks(_text(expect='"error" = "NONE", "records" = ["PartitionChangeRecord"], '
                                  '"answer.isr" = [1, 2], "isr:foo-0" = [1, 2]'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_stale_leader_epoch_is_fenced_and_nothing_written():
    checks = probe_checks(_text(extra=', { type = "PartitionChangeRecord", tp = "foo-0", leader = 1 }',
                           expect='"error" = "FENCED_LEADER_EPOCH", "records" = [], '
                                  '"leader_epoch:foo-0" = 1'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_heartbeat_of_an_old_registration_is_stale():
    checks = probe_checks(_text(deliver="BrokerHeartbeat", src="b2", body="broker_epoch = 1",
                           expect='"error" = "STALE_BROKER_EPOCH"'))
    assert checks["error"] == ("STALE_BROKER_EPOCH", "STALE_BROKER_EPOCH")  # b2's epoch is 2


def test_a_wrong_expectation_is_a_disagreement():
    checks = probe_checks(_text(expect='"error" = "INVALID_REQUEST"'))
    assert checks["error"] == ("INVALID_REQUEST", "NONE")


@pytest.mark.parametrize("change,key", [
    (dict(mode="zk"), "probe.state.records"),  # a ZooKeeper-mode controller has no log
    (dict(controllers=2), "probe.state.records"),  # two controllers: a voter, no records
    (dict(src="c2"), "probe.steps[0].from"),
    (dict(deliver="LeaderAndIsr"), "probe.steps[0].deliver"),
    (dict(body='tp = "foo-0", leader_epoch = 0, partition_epoch = 0'), "probe.steps[0].body.isr"),
    (dict(body='tp = "foo-0", leader_epoch = 0, partition_epoch = 0, isr = [1, 9]'),
     "probe.steps[0].body.isr"),
    (dict(extra=', { type = "PartitionChangeRecord", tp = "bar-0", leader = 2 }'),
     "probe.state.records[5].tp"),
    (dict(expect='"hosted:foo-0" = true'), "probe.steps[0].expect.hosted:foo-0"),
])
def test_bad_controller_probes_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)



REGISTER = """
[protocol]
profile = "3.7"
[cluster]
mode = "kraft"
brokers = 2
controllers = 1
broker_session_timeout_ms = 6000
[probe]
kafka_test = "ClusterControlManager.registerBroker"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
records = [{ type = "RegisterBrokerRecord", broker = 1 }, { type = "RegisterBrokerRecord", broker = 2 }]
[[probe.steps]]
deliver = "BrokerHeartbeat"
from = "b2"
wait_ms = 3500
body = { broker_epoch = 2, metadata_offset = 10 }
[[probe.steps]]
deliver = "BrokerHeartbeat"
from = "b2"
wait_ms = 3000
body = { broker_epoch = 2, metadata_offset = 10 }
expect = { "fenced:1" = true, "fenced:2" = false }
[[probe.steps]]
deliver = "BrokerRegistration"
from = "b2"
body = { incarnation = 1 }
expect = { "error" = "DUPLICATE_BROKER_REGISTRATION", "records" = [], "broker_epoch:2" = 2 }
[[probe.steps]]
deliver = "BrokerRegistration"
from = "b1"
body = { incarnation = 1 }
expect = { "error" = "NONE", "records" = ["RegisterBrokerRecord"], "answer.broker_epoch" = 4 }
"""


def test_a_new_incarnation_waits_for_the_old_session_to_expire():
    """`ClusterControlManager.registerBroker` (3.3.0-3.7.0): at 6.5 s b1, silent since the
    start, has been fenced (its 6 s session expired; the change record is offset 3), while b2
    heartbeated at 3.5 s. A restarted b2 (incarnation 1) is refused while its old session is
    valid; a restarted b1 registers at once, with the next offset as its broker epoch."""
    checks = probe_checks(REGISTER)
    assert all(kafka == model for kafka, model in checks.values()), checks
