"""A consumer under test: its positions set as a unit test sets them, answered by hand, judged on
its `SubscriptionState` (KIP-320 validation, resets), and refused input as one-line errors."""

from __future__ import annotations

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from tests.probe.helpers import assert_refused, probe_checks

VALIDATE = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 1
[[topics]]
name = "t"
replication_factor = 1
[[consumers]]
name = "k1"
topic = "t"
[probe]
kafka_test = "SubscriptionStateTest.testTruncationDetectionWithResetPolicy"
kafka_tag = "3.7.0"
node = "k1"
[probe.state]
metadata = [{{ tp = "t-0", leader = 1, leader_epoch = 10 }}]
positions = [{{ tp = "t-0", offset = 10, offset_epoch = 5{position} }}]
[[probe.steps]]
deliver = "{deliver}"
from = "b1"
body = {{ partitions = [{{ tp = "t-0", {answer} }}] }}
expect = {{ {expect} }}
"""
AWAITING = ", awaiting_validation = true"


def _text(profile="3.7", position=AWAITING, deliver="OffsetsForLeaderEpochResponse",
          answer="leader_epoch = 7, end_offset = 5", expect='"position:t-0" = 5') -> str:
    return VALIDATE.format(profile=profile, position=position, deliver=deliver, answer=answer,
                           expect=expect)




def test_a_truncated_log_moves_the_position_back_to_the_divergence():
    checks = probe_checks(_text(expect='"position:t-0" = 5, "offset_epoch:t-0" = 7, '
                                  '"awaiting_validation:t-0" = false, '
                                  '"sent" = ["OffsetsForLeaderEpoch", "Fetch"], '
                                  '"fetch_sent.fetch_offset:t-0" = 5'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_check_that_kafka_does_not_meet_is_a_disagreement():
    checks = probe_checks(_text(expect='"position:t-0" = 10'))
    assert checks["position:t-0"] == (10, 5)


def test_a_position_on_the_metadatas_leader_is_fetched_at_once():
    """No leader change and no `seekUnvalidated`: the first request is a Fetch at the offset,
    carrying the metadata's epoch; an OffsetsForLeaderEpoch answer nobody asked for is
    dropped."""
    checks = probe_checks(_text(position="", expect='"fetch_sent.fetch_offset:t-0" = 10, '
                                               '"fetch_sent.current_leader_epoch:t-0" = 10, '
                                               '"position:t-0" = 10, "fetch_state:t-0" = "fetching"'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_leader_change_since_the_position_makes_it_wait_for_validation():
    checks = probe_checks(_text(position=", leader = 1, leader_epoch = 8",
                           expect='"validation_sent.current_leader_epoch:t-0" = 10, '
                                  '"validation_sent.leader_epoch:t-0" = 5, '
                                  '"position_leader_epoch:t-0" = 10'))
    assert all(kafka == model for kafka, model in checks.values()), checks


@pytest.mark.parametrize("change,key", [
    (dict(position=', leader = 1'), "probe.state.positions[0]"),
    (dict(position=', leader = 4, leader_epoch = 3'), "probe.state.positions[0].leader"),
    (dict(deliver="LeaderAndIsr"), "probe.steps[0].deliver"),
    (dict(expect='"isr:t-0" = [1]'), "probe.steps[0].expect.isr:t-0"),
    (dict(expect='"validation_sent.timestamp:t-0" = -2'),
     "probe.steps[0].expect.validation_sent.timestamp:t-0"),
    (dict(answer="leader_epoch = 7, end_offset = 5, offset = 3"), "probe.steps[0].body"),
])
def test_bad_consumer_probes_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)


def test_a_position_of_another_topic_is_refused():
    text = _text().replace('positions = [{ tp = "t-0"', 'positions = [{ tp = "u-0"')
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "probe.toml")
    assert "probe.state.positions[0].tp" in str(err.value) and "t-0" in str(err.value)
