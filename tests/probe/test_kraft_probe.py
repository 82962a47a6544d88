"""A KRaft broker under test: metadata records delivered as the quorum leader's answer to its
Fetch of the metadata log, applied as `ReplicaManager.applyDelta` does; bad records refused
when the scenario loads."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks

KRAFT = """
[protocol]
profile = "3.7"
[cluster]
mode = "{mode}"
brokers = 3
controllers = 1
[[topics]]
name = "foo"
replication_factor = 2
[probe]
kafka_test = "ReplicaManagerTest.testDeltaFromLeaderToFollower"
kafka_tag = "3.7.0"
node = "b1"
[[probe.steps]]
deliver = "MetadataFetchResponse"
from = "c1"
body = {{ records = [{{ type = "TopicRecord", name = "foo" }}, {create}] }}
expect = {{ "leader:foo-0" = 1, "leader_epoch:foo-0" = 0 }}
[[probe.steps]]
deliver = "{deliver}"
from = "c1"
body = {{ records = [{change}] }}
expect = {{ {expect} }}
"""
CREATE = '{ type = "PartitionRecord", tp = "foo-0", replicas = [1, 2], leader = 1 }'
CHANGE = '{ type = "PartitionChangeRecord", tp = "foo-0", leader = 2 }'


def _text(mode="kraft", create=CREATE, deliver="MetadataFetchResponse", change=CHANGE,
          expect='"leader:foo-0" = 2, "leader_epoch:foo-0" = 1, "partition_epoch:foo-0" = 1'):
    return KRAFT.format(mode=mode, create=create, deliver=deliver, change=change, expect=expect)




def test_a_change_record_naming_a_leader_bumps_both_epochs():
    checks = probe_checks(_text(), by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_an_isr_change_alone_bumps_the_partition_epoch_only():
    checks = probe_checks(_text(change='{ type = "PartitionChangeRecord", tp = "foo-0", isr = [1] }',
                           expect='"isr:foo-0" = [1], "leader_epoch:foo-0" = 0, '
                                  '"partition_epoch:foo-0" = 1'), by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_wrong_expectation_is_a_disagreement():
    checks = probe_checks(_text(expect='"leader_epoch:foo-0" = 0'), by_step=True)
    assert checks["1:leader_epoch:foo-0"] == (0, 1)


@pytest.mark.parametrize("change,key", [
    (dict(mode="zk"), "probe.steps[0].deliver"),
    (dict(deliver="LeaderAndIsr", change=""), "probe.steps[1].deliver"),
    (dict(change='{ type = "PartitionChangeRecord", tp = "foo-1", leader = 2 }'),
     "probe.steps[1].body.records[0].tp"),
    (dict(change='{ type = "PartitionRecrd", tp = "foo-0" }'), "probe.steps[1].body.records[0].type"),
    (dict(create='{ type = "PartitionRecord", tp = "foo-0", leader = 1 }'),
     "probe.steps[0].body.records[1].replicas"),
    (dict(change='{ type = "PartitionChangeRecord", tp = "foo-0", leader_epoch = 4 }'),
     "probe.steps[1].body.records[0].leader_epoch"),
    (dict(change='{ type = "PartitionChangeRecord", tp = "foo-0", leader = 7 }'),
     "probe.steps[1].body.records[0].leader"),
    (dict(change='{ type = "RemoveTopicRecord" }'), "probe.steps[1].body.records[0]"),
])
def test_bad_kraft_probes_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)
