"""A broker whose shutdown begins (the operator's `Shutdown` step), then told of new partition
states: what it applies and what its fetchers do, by mode and release (`follower_fetch_change`,
`kraft_shutdown_applies_deltas`); and `Shutdown` steps refused where they make no sense."""

from __future__ import annotations

import pytest

from sim.kafka.profiles import PROFILES
from sim.kafka.rules.replication import follower_fetch_change
from tests.probe.helpers import assert_refused, probe_checks

KRAFT = """
[protocol]
profile = "{profile}"
[cluster]
mode = "kraft"
brokers = 2
controllers = 1
[[topics]]
name = "foo"
replication_factor = 2
[probe]
kafka_test = "ReplicaManagerTest.testReplicasAreStoppedWhileInControlledShutdownWithKRaft"
kafka_tag = "3.7.0"
node = "b1"
[[probe.steps]]
deliver = "MetadataFetchResponse"
from = "c1"
body = {{ records = [{{ type = "TopicRecord", name = "foo" }}, {{ type = "PartitionRecord", tp = "foo-0", replicas = [1, 2], isr = [1, 2], leader = {leader} }}] }}
[[probe.steps]]
deliver = "Shutdown"
{sender}
[[probe.steps]]
deliver = "MetadataFetchResponse"
from = "c1"
body = {{ records = [{{ type = "PartitionChangeRecord", tp = "foo-0", {change} }}] }}
expect = {{ {expect} }}
"""


def _model(profile="3.7", leader=2, change="leader = 2", expect='"leader:foo-0" = 2',
           sender="") -> dict:
    text = KRAFT.format(profile=profile, leader=leader, change=change, expect=expect,
                        sender=sender)
    return {check: model for check, (_kafka, model) in probe_checks(text).items()}


def test_a_kraft_follower_kept_in_the_isr_restarts_its_fetcher_while_shutting_down():
    seen = _model(change="leader = 2, isr = [1, 2]",
                  expect='"leader_epoch:foo-0" = 1, "fetcher_added:foo-0" = 2, '
                         '"fetching_from:foo-0" = 2')
    assert seen == {"leader_epoch:foo-0": 1, "fetcher_added:foo-0": 2, "fetching_from:foo-0": 2}


def test_a_kraft_follower_taken_out_of_the_isr_stops_fetching_at_the_same_epoch():
    # from 3.6 the controller's ISR shrink keeps the leader epoch: nothing restarts, yet the
    # shutting-down broker outside the ISR stops (`partitionsToStopFetching`)
    seen = _model(change="isr = [2]", expect='"leader_epoch:foo-0" = 0, "fetching_from:foo-0" = -1')
    assert seen == {"leader_epoch:foo-0": 0, "fetching_from:foo-0": -1}


@pytest.mark.parametrize("profile, leader, epoch", [("3.3", 1, 0), ("3.4.0", 2, 1)])
def test_before_kafka_14296_a_leader_moved_away_stays_leader_while_shutting_down(
        profile, leader, epoch):
    seen = _model(profile=profile, leader=1, change="leader = 2, isr = [2]",
                  expect='"leader:foo-0" = 2, "leader_epoch:foo-0" = 1')
    assert seen == {"leader:foo-0": leader, "leader_epoch:foo-0": epoch}


def test_the_rule_by_mode():
    proto = PROFILES["3.7"]
    # (kraft, shutting down, leader, in ISR, leader changed, new epoch) -> change
    cases = {(False, False, 2, True, False, True): "restart",
             (False, True, 2, True, False, True): "stop",  # makeFollowers adds no fetcher
             (True, True, 2, True, False, True): "restart",
             (False, True, 2, False, False, False): "keep",
             (True, True, 2, False, False, False): "stop",
             (True, False, 2, False, False, False): "keep",
             (True, False, -1, True, True, True): "stop"}
    for args, change in cases.items():
        assert follower_fetch_change(proto, *args) == change, args


@pytest.mark.parametrize("sender, key", [('from = "b2"', "probe.steps[1].from"),
                                         ('from = "zk"', "probe.steps[1].from")])
def test_a_shutdown_comes_from_the_operator_only(sender, key):
    assert_refused(KRAFT.format(profile="3.7", leader=2, change="leader = 2",
                                expect='"leader:foo-0" = 2', sender=sender), key)


def test_a_shutdown_takes_no_body():
    text = KRAFT.format(profile="3.7", leader=2, change="leader = 2", expect='"leader:foo-0" = 2',
                        sender="body = { delay_ms = 5 }")
    assert_refused(text, "probe.steps[1].body.delay_ms")
