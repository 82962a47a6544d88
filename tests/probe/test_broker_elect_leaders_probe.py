"""A ZooKeeper-mode broker's side of an admin's ElectLeaders (`sim.kafka.broker_elect_leaders`):
the hand-over to the controller, the purgatory that answers NONE once the broker's metadata
cache names the elected leader, REQUEST_TIMED_OUT at the request's timeout (Kafka's
`DelayedElectLeader.onComplete`, read at 2.4.0 and 3.7.0: no Kafka test asserts it), and the
controller's answer to a broker's hand-over; bad steps refused when the scenario loads."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.core.trace import Trace
from sim.kafka.admin_messages import ElectLeadersRequest
from sim.kafka.broker_elect_leaders import ElectLeadersPurgatory
from sim.kafka.probe.run import ProbeRun
from tests.probe.helpers import assert_refused, probe_checks

HEAD = """[protocol]
profile = "3.7"
[cluster]
brokers = 3
controllers = 1
{mode}[[topics]]
name = "t"
partitions = 2
replication_factor = 3
assignment = [[2, 3, 1], [1, 2, 3]]
[probe]
kafka_test = "PlaintextAdminIntegrationTest.testElectPreferredLeaders"
kafka_tag = "3.7.0"
node = "b1"
"""
METADATA = """[[probe.steps]]
deliver = "UpdateMetadata"
from = "c1"
body = { partitions = [{ tp = "t-0", leader = 1, leader_epoch = 0, replicas = [2, 3, 1] },
                       { tp = "t-1", leader = 1, leader_epoch = 0, replicas = [1, 2, 3] }] }
"""
ELECT = """[[probe.steps]]
deliver = "ElectLeaders"
wait_ms = {wait}
body = {{ {body} }}
expect = {{ {expect} }}
"""
RESULT = """[[probe.steps]]
deliver = "ElectLeadersResult"
from = "c1"
answer_to = "admin"
wait_ms = {wait}
body = {{ results = [{results}] }}
expect = {{ {expect} }}
"""
WAIT = """[[probe.steps]]
wait_ms = {wait}
expect = {{ {expect} }}
"""


def _agree(text: str) -> dict:
    checks = probe_checks(text, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks
    return checks


def test_an_elected_partition_times_out_when_the_cache_never_names_its_leader():
    """TimeoutMs 1000 counted from the request's arrival: the controller's answer comes 300 ms
    later, and with no UpdateMetadata the answer is REQUEST_TIMED_OUT at 1000 ms, not before;
    the partition the controller could not elect keeps its own error."""
    text = (HEAD.format(mode="") + METADATA
            + ELECT.format(wait=300, body='partitions = ["t-0", "t-1"], timeout_ms = 1000',
                           expect='"answered" = false')
            + RESULT.format(wait=600, results='{ tp = "t-0", leader = 2 }, '
                            '{ tp = "t-1", error = "ELECTION_NOT_NEEDED" }',
                            expect='"answered" = false')
            + WAIT.format(wait=200, expect='"sent" = ["ElectLeadersResponse"], '
                          '"sent_error:ElectLeadersResponse/t-0" = "REQUEST_TIMED_OUT", '
                          '"sent_error:ElectLeadersResponse/t-1" = "ELECTION_NOT_NEEDED"'))
    _agree(text)


def test_an_election_of_every_partition_names_the_broker_cache_and_drops_not_needed():
    """No partitions named: the hand-over names each partition of the broker's metadata cache
    (`metadataCache.getAllTopics`), and the answer leaves out ELECTION_NOT_NEEDED."""
    text = (HEAD.format(mode="") + METADATA
            + ELECT.format(wait=100, body="", expect='"sent_to" = ["ElectLeaders>c1"]')
            + RESULT.format(wait=100, results='{ tp = "t-0", error = "ELECTION_NOT_NEEDED" }, '
                            '{ tp = "t-1", error = "PREFERRED_LEADER_NOT_AVAILABLE" }',
                            expect='"answer_partitions" = ["t-1"], '
                            '"error:t-1" = "PREFERRED_LEADER_NOT_AVAILABLE"'))
    checks = _agree(text)
    assert "2:answer_partitions" in checks


def test_the_hand_over_names_every_cached_partition():
    scenario = parse_scenario(HEAD.format(mode="") + METADATA
                              + ELECT.format(wait=100, body="", expect=""), "probe.toml")
    run = ProbeRun(scenario.options, scenario.probe, 1, Trace({}))
    run.run()
    handed = run.last_request("c1", "ElectLeaders")
    assert handed.partitions == ("t-0", "t-1") and handed.election_type == "PREFERRED"


def test_a_broker_that_knows_no_controller_answers_not_controller_at_once():
    """Kafka's broker whose own controller is not active answers NOT_CONTROLLER through the
    same callback; the model's broker that knows no controller does so itself."""
    text = HEAD.format(mode="") + ELECT.format(
        wait=100, body='partitions = ["t-0"]',
        expect='"sent" = ["ElectLeadersResponse"], "error:t-0" = "NOT_CONTROLLER"')
    _agree(text)


def test_a_planted_broker_that_answers_at_once_disagrees(monkeypatch):
    """The case's checks can fail: a purgatory that never waits answers NONE with the
    controller's result, before the cache names the leader."""
    monkeypatch.setattr(ElectLeadersPurgatory, "_update_waiting", lambda self, key: (
        self.elections[key].results.update({tp: 0 for tp in self.elections[key].waiting})
        or self.elections[key].waiting.clear() or True))
    text = open("scenarios/conformance/zk-broker-elect-preferred-leaders-3.7.toml").read()
    verdict = run_scenario(parse_scenario(text, "case.toml"), 1)
    wrong = [c for c in verdict["probe"] if c["kafka"] != c["model"]]
    assert any(c["check"] == "answered" for c in wrong), wrong


@pytest.mark.parametrize("mode,deliver,key", [
    ('mode = "kraft"\n', "ElectLeaders", "probe.steps[0].deliver"),  # a KRaft broker forwards
    ("", "ElectLeadersResult", "probe.steps[0].from"),               # from a controller only
])
def test_what_a_broker_cannot_take_is_refused_in_one_line(mode, deliver, key):
    frm = 'from = "b2"\n' if deliver == "ElectLeadersResult" else ""
    text = HEAD.format(mode=mode) + f'[[probe.steps]]\ndeliver = "{deliver}"\n{frm}'
    assert_refused(text, key)


def test_the_controller_answers_a_hand_over_with_the_leader_it_elected():
    """A ZooKeeper-mode controller under test sent a broker's hand-over (no probe kind: the
    controller's own handler, called as a run would): the preferred election of t-0 elects b2
    and is answered (t-0, NONE, 2); t-1, led by its preferred replica, is not needed."""
    text = ("[protocol]\nprofile = \"3.7\"\n[cluster]\nbrokers = 3\ncontrollers = 1\n"
            "[[topics]]\nname = \"t\"\npartitions = 2\nreplication_factor = 3\n"
            "assignment = [[2, 3, 1], [1, 2, 3]]\n[probe]\nkafka_test = \"T.t\"\n"
            "kafka_tag = \"3.7.0\"\nnode = \"c1\"\n[[probe.steps]]\nwait_ms = 1\n")
    scenario = parse_scenario(text, "probe.toml")
    run = ProbeRun(scenario.options, scenario.probe, 1, Trace({}))
    run.prepare()
    controller = run.node
    controller.change("t-0", "test", leader=1)  # b1 leads t-0, whose preferred replica is b2
    sent = []
    controller.send = lambda dst, kind, body: sent.append((dst, kind, body))

    class Msg:
        src, kind = "b1", "ElectLeaders"
        body = ElectLeadersRequest(7, "PREFERRED", ("t-0", "t-1"))
    controller.on_elect_leaders(Msg)
    answer = [body for dst, kind, body in sent if kind == "ElectLeadersResult"]
    assert answer and answer[0].corr == 7
    assert answer[0].results == (("t-0", 0, 2), ("t-1", 84, -1))
