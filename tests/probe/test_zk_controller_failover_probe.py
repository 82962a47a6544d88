"""A ZooKeeper-mode controller's failover in a probe: /controller taken or deleted, the events
of its watch (ControllerChange, Reelect), its session expiring, the operator's shutdown and
start; what a new controller sends as it takes over and what a resigned one stops doing; bad
probes refused when the scenario loads."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks

HEAD = """
[protocol]
profile = "3.7"
[cluster]
brokers = 2
controllers = 2
[[topics]]
name = "t"
partitions = 1
replication_factor = 2
[probe]
kafka_test = "ControllerIntegrationTest.testControllerMoveOnTopicCreation"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
active_controller = "{holder}"
"""


def _step(deliver: str, expect: str, body: str = "", src: str = "") -> str:
    sender = f'from = "{src}"\n' if src else ""
    return (f'[[probe.steps]]\ndeliver = "{deliver}"\n{sender}body = {{ {body} }}\n'
            f"expect = {{ {expect} }}\n")


def _agree(text: str) -> None:
    checks = probe_checks(text, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_notification_whose_write_a_newer_epoch_fences_resigns_and_sends_nothing():
    """ControllerMovedException: the event is abandoned, then `maybeResign`."""
    _agree(HEAD.format(holder="c1")
           + _step("ControllerZnode", '"active" = true, "zk_controller_epoch" = 2',
                   'controller = "c2"')
           + _step("TopicChange", '"active" = false, sent = [], "leader:u-0" = "none"',
                   'topic = "u", partitions = [{ replicas = [1] }]'))


def test_a_notification_that_writes_nothing_leaves_a_fenced_controller_unaware():
    _agree(HEAD.format(holder="c1")
           + _step("ControllerZnode", '"active" = true', 'controller = "c2"')
           + _step("TopicChange", '"active" = true, sent = []',
                   'topic = "t", partitions = [{ replicas = [1, 2] }]'))


def test_controller_change_resigns_and_the_resigned_controller_answers_not_controller():
    _agree(HEAD.format(holder="c1")
           + _step("ControllerChange", '"active" = false, "zk_controller" = "c2", '
                   '"zk_controller_epoch" = 2, sent = []', 'controller = "c2"')
           + _step("AlterPartition", '"error" = "NOT_CONTROLLER", "isr:t-0" = [1, 2]',
                   'tp = "t-0", leader_epoch = 0, partition_epoch = 0, isr = [1]', "b1"))


def test_a_standby_takes_over_on_reelect_at_the_next_epoch_and_sends_its_state():
    """`onControllerFailover`: UpdateMetadata with no partition first (2.2+), then LeaderAndIsr
    and UpdateMetadata of the partitions, all at the new epoch."""
    _agree(HEAD.format(holder="c2")
           + _step("Reelect", '"active" = true, "controller_epoch" = 2, "zk_controller" = "c1", '
                   'sent_to = ["UpdateMetadata>b1", "UpdateMetadata>b2", "LeaderAndIsr>b1", '
                   '"LeaderAndIsr>b2", "UpdateMetadata>b1", "UpdateMetadata>b2"], '
                   '"controller_epoch_sent:2" = [2, 2, 2]', 'controller = "none"'))


def test_reelect_with_controller_held_by_another_leaves_a_standby():
    _agree(HEAD.format(holder="none")
           + _step("Reelect", '"active" = false, "zk_controller" = "c2", '
                   '"zk_controller_epoch" = 2, sent = []', 'controller = "c2"'))


def test_an_expired_session_resigns_and_releases_controller():
    _agree(HEAD.format(holder="c1")
           + _step("Expire", '"active" = false, "zk_controller" = "none", '
                   '"zk_controller_epoch" = 1, sent = []')
           + _step("Reelect", '"active" = true, "controller_epoch" = 2'))


def test_a_stopped_controller_keeps_the_epoch_in_zookeeper_and_takes_the_next_on_startup():
    _agree(HEAD.format(holder="c1")
           + _step("Shutdown", '"alive" = false, "zk_controller" = "none", '
                   '"zk_controller_epoch" = 1')
           + _step("AlterPartition", '"answered" = false',
                   'tp = "t-0", leader_epoch = 0, partition_epoch = 0, isr = [1]', "b1")
           + _step("Startup", '"alive" = true, "active" = true, "zk_controller_epoch" = 2, '
                   '"controller_epoch_sent:1" = [2, 2, 2]'))


@pytest.mark.parametrize("text,key", [
    (HEAD.format(holder="c3") + _step("Reelect", "\"active\" = true"),
     "probe.state.active_controller"),
    (HEAD.format(holder="c1") + _step("Reelect", '"active" = true', 'controller = "c9"'),
     "probe.steps[0].body.controller"),
    (HEAD.format(holder="c1") + _step("Expire", '"active" = false', src="b1"),
     "probe.steps[0].from"),
    (HEAD.format(holder="c1") + _step("Startup", '"active" = true', src="zk"),
     "probe.steps[0].from"),
    (HEAD.format(holder="c1") + _step("ControllerChange", '"zk_controler" = "c2"'),
     "probe.steps[0].expect"),
])
def test_bad_failover_probes_are_one_line_errors_naming_the_key(text, key):
    assert_refused(text, key)


def test_a_standby_holds_no_brokers_in_controlled_shutdown():
    text = HEAD.format(holder="c2") + "shutting_down = [1]\n" + _step("Reelect", '"active" = true')
    assert_refused(text, "probe.state.shutting_down")
