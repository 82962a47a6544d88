"""A ZooKeeper-mode controller under test: active at once, ZooKeeper holding the probe's
partition states and live brokers; leaders' AlterPartition delivered by hand, its answers,
ZooKeeper's state and the UpdateMetadata it sends judged; bad probes refused when the
scenario loads."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scenarios.schema import parse_scenario
from sim.core.trace import Trace
from sim.kafka.probe.run import ProbeRun
from tests.probe.helpers import assert_refused, probe_checks

ZK_CONTROLLER = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
controllers = 1
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[probe]
kafka_test = "ControllerIntegrationTest.testAlterPartitionErrors"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
partitions = [{{ tp = "t-0", leader = 1, leader_epoch = 2, partition_epoch = 5, isr = [1, 2, 3] }}]
live_brokers = {live}
shutting_down = {shutting_down}
[[probe.steps]]
deliver = "{deliver}"
from = "{src}"
body = {{ {body} }}
expect = {{ {expect} }}
"""


def _text(profile="3.7", live="[{ id = 1, epoch = 7 }, { id = 2 }, { id = 3 }]",
          shutting_down="[]", deliver="AlterPartition",
          body='tp = "t-0", leader_epoch = 2, partition_epoch = 5, isr = [1, 2]',
          expect='"error" = "NONE"', src="b1"):
    return ZK_CONTROLLER.format(profile=profile, live=live, shutting_down=shutting_down,
                                deliver=deliver, body=body, expect=expect, src=src)


def test_a_shrink_is_written_answered_and_sent_to_every_live_broker():
    checks = probe_checks(_text(expect='"error" = "NONE", "answer.partition_epoch" = 6, '
                                       '"isr:t-0" = [1, 2], "sent_count:UpdateMetadata" = 3, '
                                       '"broker_epoch:1" = 7'))
    assert all(kafka == model for kafka, model in checks.values()), checks


@pytest.mark.parametrize("body,error", [
    ('tp = "t-0", leader_epoch = 2, partition_epoch = 4, isr = [1, 2]', "INVALID_UPDATE_VERSION"),
    ('tp = "t-0", leader_epoch = 1, partition_epoch = 5, isr = [1, 2]', "FENCED_LEADER_EPOCH"),
    ('tp = "t-0", leader_epoch = 2, partition_epoch = 4, isr = [1, 2, 3]', "NONE"),  # already
])
def test_a_request_past_the_whole_request_checks_sends_update_metadata_whatever_its_outcome(
        body, error):
    """`KafkaController.processAlterPartition` (3.7.0) sends UpdateMetadata for the request's
    partitions to every live or shutting-down broker, written or not."""
    checks = probe_checks(_text(body=body, expect=f'"error" = "{error}", '
                                                  '"sent_count:UpdateMetadata" = 3, '
                                                  '"partition_epoch:t-0" = 5'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_stale_broker_epoch_is_refused_whole_and_sends_nothing():
    checks = probe_checks(_text(body='tp = "t-0", leader_epoch = 2, partition_epoch = 5, '
                                     'isr = [1, 2], broker_epoch = 6',
                                expect='"error" = "STALE_BROKER_EPOCH", '
                                       '"sent_count:UpdateMetadata" = 0'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_broker_shutting_down_is_not_eligible_for_the_isr():
    """KIP-841 (3.3): `isr -- liveBrokerIds` names every member, so even a shrink that keeps
    a broker in controlled shutdown is refused."""
    checks = probe_checks(_text(shutting_down="[3]", body='tp = "t-0", leader_epoch = 2, '
                                'partition_epoch = 5, isr = [1, 3]',
                                expect='"error" = "NONE", "shutting_down:3" = true'))
    assert checks["error"] == ("NONE", "INELIGIBLE_REPLICA")


def test_epochs_ahead_of_the_controller_are_not_controller_from_3_3_and_a_bad_version_before():
    body = 'tp = "t-0", leader_epoch = 2, partition_epoch = 9, isr = [1, 2]'
    assert probe_checks(_text(body=body))["error"][1] == "NOT_CONTROLLER"
    assert probe_checks(_text(profile="3.2", body=body))["error"][1] == "INVALID_UPDATE_VERSION"


@pytest.mark.parametrize("change,key", [
    (dict(profile="2.6"), "probe.steps[0].deliver"),
    (dict(deliver="BrokerHeartbeat", body="broker_epoch = 1"), "probe.steps[0].deliver"),
    (dict(live="[{ id = 9 }]"), "probe.state.live_brokers[0].id"),
    (dict(shutting_down="[2]", live="[{ id = 1 }]"), "probe.state.shutting_down"),
    (dict(live="[{ id = 1 }, { id = 1 }]"), "probe.state.live_brokers[1].id"),
    (dict(expect='"records" = []'), "probe.steps[0].expect.records"),
])
def test_bad_zk_controller_probes_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)


def test_a_partition_state_outside_its_replicas_or_topics_is_refused():
    text = _text().replace('isr = [1, 2, 3] }]', 'isr = [1, 2, 3], replicas = [1, 2] }]')
    assert_refused(text, "probe.state.partitions[0]")
    assert_refused(_text().replace('tp = "t-0", leader = 1', 'tp = "u-0", leader = 1'),
                   "probe.state.partitions[0].tp")


# -- elections, driven on the probe's controller directly -----------------------------------
ALTER_ISR = 'deliver = "AlterPartition"\nfrom = "b1"\n' \
    'body = { tp = "t-0", leader_epoch = 0, partition_epoch = 0, isr = [1] }'


def _controller(state: str, unclean: bool = False, assignment: str = "[[1, 2]]",
                profile: str = "3.7", step: str = ALTER_ISR):
    """The probe's ZooKeeper-mode controller, active over `state`, for calling its
    operations directly (a probe step delivers only messages)."""
    text = f"""
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
controllers = 1
unclean_leader_election = {str(unclean).lower()}
[[topics]]
name = "t"
partitions = {assignment.count("[") - 1}
replication_factor = 2
assignment = {assignment}
[probe]
kafka_test = "PartitionStateMachineTest"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
{state}
[[probe.steps]]
{step}
"""
    scenario = parse_scenario(text, "probe.toml")
    run = ProbeRun(scenario.options, scenario.probe, 1, Trace({}))
    run.prepare()
    return run.node


def _fail(controller, broker: int) -> None:
    del controller.live[broker]
    controller.on_brokers_failure([broker])


def test_an_unclean_election_passes_over_a_broker_in_controlled_shutdown():
    """`isReplicaOnline` leaves out brokers shutting down (`liveBrokerIds`, 3.7.0), so the
    offline election finds no leader; the model elected it."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }]\n'
                    'shutting_down = [2]', unclean=True)
    _fail(c, 1)
    assert c.store.partition("t-0")[1].leader == -1
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }]', unclean=True)
    _fail(c, 1)
    assert c.store.partition("t-0")[1].leader == 2  # the same election, b2 not shutting down


def test_a_reassignment_election_is_never_unclean_and_a_failed_one_writes_nothing():
    """`reassignPartitionLeaderElection` picks a live target replica in the ISR or none."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }]', unclean=True)
    before = c.store.partition("t-0")[1].partition_epoch
    assert not c.elect("t-0", "reassignment", candidates=[2])
    assert c.store.partition("t-0")[1].partition_epoch == before


def test_a_controlled_shutdown_election_keeps_the_isr_members_not_shutting_down():
    """`leaderForControlledShutdown`: the ISR loses the brokers shutting down, nothing else
    (b3 stays)."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1, 2, 3], '
                    'replicas = [1, 2, 3] }]')
    c.controlled_shutdown(1)
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr) == (2, (2, 3))


def test_a_double_failure_keeps_the_last_isr_member_and_writes_once_per_broker():
    """`onReplicasBecomeOffline`: the election finds nobody, then `doRemoveReplicasFromIsr`
    runs per failed broker: b1 leaves (leaderless, ISR [2]), b2 is the last member and stays;
    each removal is written with a new leader epoch."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1, 2] }]')
    del c.live[1], c.live[2]
    c.on_brokers_failure([1, 2])
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr, st.leader_epoch) == (-1, (2,), 2)


def test_followers_failing_together_are_removed_one_write_each():
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1, 2, 3], '
                    'replicas = [1, 2, 3] }]')
    del c.live[2], c.live[3]
    c.on_brokers_failure([2, 3])
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr, st.leader_epoch) == (1, (1,), 2)


def test_a_dead_leader_nobody_can_replace_stays_at_a_failover_and_is_reelected_on_return():
    """A new controller finds t-0 led by b1, not live, with no live ISR member: b1's replica
    goes offline first (KAFKA-3143, 2.3+: leaderless, the ISR keeping its last member, a new
    leader epoch), then the election fails and writes nothing (the partition is offline).
    When b1 starts again the offline partition is elected anew, b1 again, at a new leader
    epoch."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }]\n'
                    'live_brokers = [{ id = 2 }]')
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr, st.leader_epoch) == (-1, (1,), 1)
    c.live[1] = 9
    c.on_brokers_startup([1])
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr, st.leader_epoch) == (1, (1,), 2)


def test_a_partition_may_be_set_leaderless():
    """`leader = -1` is a state (no leader), not "left as created"."""
    c = _controller('partitions = [{ tp = "t-0", leader = -1, isr = [1] }]\n'
                    'live_brokers = [{ id = 2 }]')
    assert c.store.partition("t-0")[1].leader == -1


# -- controlled shutdown -----------------------------------------------------------------
def _recording(controller) -> list:
    """Every message `controller` sends from now on, as (destination, kind, body)."""
    sent: list = []
    controller.send = lambda dst, kind, body: sent.append((dst, kind, body))
    return sent


def test_a_controlled_shutdown_stops_each_followed_partition_twice_at_its_epoch_before_removal():
    """`doControlledShutdown` (1.1.0-3.7.0): b2 follows t-0 in its ISR and t-1 outside it, and
    leads t-2. t-2 gets the controlled shutdown election (b1, sent to both replicas); t-0 and
    t-1 are stopped on b2 at leader epoch 0, then `OfflineReplica` takes b2 out of t-0's ISR
    (leader epoch 1, sent to b1 only) and stops both again at epoch 0, read before the removal.
    The model stopped only t-0, once, at epoch 1, after sending b2 its removal."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1, 2] }, '
                    '{ tp = "t-1", leader = 1, isr = [1] }, '
                    '{ tp = "t-2", leader = 2, isr = [2, 1], replicas = [2, 1] }]',
                    assignment="[[1, 2], [1, 2], [2, 1]]")
    sent = _recording(c)
    assert c.controlled_shutdown(2, c.live[2]) is None
    stops = [(dst, [(p.tp, p.leader_epoch, p.delete) for p in body.partitions])
             for dst, kind, body in sent if kind == "StopReplica"]
    assert stops == [("b2", [("t-0", 0, False), ("t-1", 0, False)])] * 2
    to_b2 = [[p.tp for p in body.partitions] for dst, kind, body in sent
             if kind == "LeaderAndIsr" and dst == "b2"]
    assert to_b2 == [["t-2"]]
    states = {tp: (st.leader, st.isr, st.leader_epoch) for tp in ("t-0", "t-1", "t-2")
              for st in [c.store.partition(tp)[1]]}
    assert states == {"t-0": (1, (1,), 1), "t-1": (1, (1,), 0), "t-2": (1, (1,), 1)}
    assert c.leads_after_shutdown(2) == []


def test_a_controlled_shutdown_leaves_single_replica_partitions_alone_and_lists_what_it_leads():
    """Partitions of one replica are not acted on; one the broker still leads after a failed
    election is listed in the answer (`partitionLeadersOnBroker`)."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }, '
                    '{ tp = "t-1", leader = 1, isr = [1], replicas = [1] }]',
                    assignment="[[1, 2], [1, 2]]")
    sent = _recording(c)
    assert c.controlled_shutdown(1, c.live[1]) is None
    assert c.leads_after_shutdown(1) == ["t-0"]
    assert not [kind for _dst, kind, _body in sent if kind in ("StopReplica", "LeaderAndIsr")]
    assert c.shutting_down == {1}


@pytest.mark.parametrize("live,epoch,error", [
    ("[{ id = 1 }, { id = 2, epoch = 9 }]", 8, "STALE_BROKER_EPOCH"),
    ("[{ id = 1 }, { id = 2, epoch = 9 }]", 10, "NONE"),  # newer: the controller acts
    ("[{ id = 1 }, { id = 2, epoch = 9 }]", -1, "NONE"),  # not carried (before v2): no check
    ("[{ id = 1 }]", -1, "BROKER_NOT_AVAILABLE"),
    ("[{ id = 1 }]", 8, "UNKNOWN_SERVER_ERROR"),  # `liveBrokerIdAndEpochs(id)` throws
])
def test_a_controlled_shutdown_is_refused_before_acting(live, epoch, error):
    """`doControlledShutdown`'s checks (2.2.0, 3.7.0), in its order; a refused one changes
    nothing and sends nothing."""
    accepted = error == "NONE"
    checks = probe_checks(_text(live=live, deliver="ControlledShutdown", src="b2",
                                body=f"broker_epoch = {epoch}",
                                expect=f'"error" = "{error}", "shutting_down:2" = '
                                       f'{str(accepted).lower()}, '
                                       f'"sent_count:StopReplica" = {2 * accepted}'))
    assert all(kafka == model for kafka, model in checks.values()), checks


# -- ZooKeeper's broker notifications -----------------------------------------------------
def test_a_broker_change_starts_new_brokers_before_it_fails_dead_ones():
    """`processBrokerChange` (2.2.0-3.7.0): b1's registration goes as b2's comes, unclean
    election on, t-0 led by b1 alone. Kafka starts b2 first (t-0 is not offline yet: b1 still
    counts live), then fails b1, whose offline election takes b2 uncleanly: one write, leader
    epoch 1. The model failed b1 first (leaderless, epoch 1) and elected b2 at epoch 2."""
    c = _controller('partitions = [{ tp = "t-0", leader = 1, isr = [1] }]\n'
                    'live_brokers = [{ id = 1 }]', unclean=True)
    del c.store.brokers[1]
    c.store.register_broker(2, c.now_us, c.cluster.broker_session_timeout_ms * 1000)
    c.check_brokers()
    st = c.store.partition("t-0")[1]
    assert (st.leader, st.isr, st.leader_epoch) == (2, (2,), 1)
    assert sorted(c.live) == [2]


@pytest.mark.parametrize("change,key", [
    ('live_brokers = [{ id = 4 }]', "probe.steps[0].body.live_brokers[0].id"),
    ('live_brokers = [{ id = 1 }, { id = 1 }]', "probe.steps[0].body.live_brokers[1].id"),
])
def test_a_broker_change_names_brokers_of_the_cluster_once(change, key):
    assert_refused(_text(deliver="BrokerChange", src="zk", body=change), key)


def test_a_broker_change_comes_from_zookeeper_only():
    assert_refused(_text(deliver="BrokerChange", src="b1", body="live_brokers = []"),
                   "probe.steps[0].from")
    assert_refused(_text(src="zk"), "probe.steps[0].from")  # an AlterPartition from zk


@pytest.mark.parametrize("body,key", [
    ('topic = "", partitions = [{ replicas = [1] }]', "probe.steps[0].body.topic"),
    ('topic = "u", partitions = []', "probe.steps[0].body.partitions"),
    ('topic = "u", partitions = [{ replicas = [1, 1] }]', "probe.steps[0].body.partitions[0].replicas"),
    ('topic = "u", partitions = [{ replicas = [1, 2] }, { replicas = [1] }]',
     "probe.steps[0].body.partitions[1].replicas"),
    ('topic = "u", partitions = [{ replicas = [4] }]', "probe.steps[0].body.partitions[0].replicas"),
])
@pytest.mark.parametrize("kind", ["TopicChange", "PartitionModifications"])
def test_a_topic_change_is_a_topic_kafka_would_create(body, key, kind):
    """The same shape for a new topic's assignment and a topic's rewritten one."""
    assert_refused(_text(deliver=kind, src="zk", body=body), key)


@pytest.mark.parametrize("profile, format_", [("0.10.2", 1), ("0.11", 2), ("3.7", 2)])
def test_a_topic_created_by_a_topic_change_takes_its_releases_message_format(profile, format_):
    """The brokers' `log.message.format.version` default on the run's release: v1 on 0.10.2."""
    c = _controller("", profile=profile, step='deliver = "BrokerChange"\n'
                    'body = { live_brokers = [{ id = 1 }, { id = 2 }, { id = 3 }] }')
    c.on_zk_notification("TopicChange", SimpleNamespace(topic="u", assignment=((1, 2),)))
    assert c.store.topics["u"].message_format == format_


def test_a_new_partition_with_no_online_replica_waits_for_one_to_start():
    """`initializeLeaderAndIsrForPartitions`: the first online replica leads, the online ones
    form the ISR; with none online nothing is sent, and a replica's broker starting elects it."""
    c = _controller('live_brokers = [{ id = 1 }]')
    sent = _recording(c)
    assert c.create_topic("u", 2, 2, assignment=[[3, 1], [2, 3]]) is None
    first, second = c.store.partition("u-0")[1], c.store.partition("u-1")[1]
    assert (first.leader, first.isr, first.leader_epoch) == (1, (1,), 0)
    assert (second.leader, second.isr) == (-1, (2, 3))
    assert all("u-1" not in [p.tp for p in body.partitions] for _d, kind, body in sent
               if kind in ("LeaderAndIsr", "UpdateMetadata"))
    c.live[3] = 9
    c.on_brokers_startup([3])
    assert (second.leader, second.isr) == (3, (3,))


def test_the_requests_the_controller_sent_are_checks_of_their_own():
    """`leader_and_isr.*`, `leader_and_isr_full`, `stop_replica.*` and `controller_epoch`
    read what the controller sent each broker during the step: b2's controlled shutdown
    stops its replica at the epoch of the moment (`OfflineReplica`: the StopReplica is added
    before the ISR removal) and sends the shrunk ISR at the next epoch to the others."""
    checks = probe_checks(_text(
        deliver="ControlledShutdown", src="b2", body="",
        expect='"stop_replica.delete:2/t-0" = false, "stop_replica.leader_epoch:2/t-0" = 2, '
               '"leader_and_isr.isr:1/t-0" = [1, 3], "leader_and_isr.leader_epoch:3/t-0" = 3, '
               '"leader_and_isr.leader:3/t-0" = 1, "leader_and_isr_full:1" = false, '
               '"controller_epoch" = 1, "leader_and_isr.isr:2/t-0" = "none", '
               '"stop_replica.delete:1/t-0" = "none"'))
    assert all(kafka == model for kafka, model in checks.values()), checks
    assert len(checks) == 9
