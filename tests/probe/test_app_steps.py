"""The application's calls on a consumer under test (`from = "app"`: Seek, Pause, Resume,
Assign) act through the consumer's own methods mid-test, and a call Kafka would throw on, or a
malformed one, is a one-line error naming its key."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_agrees, assert_refused, consumer_probe, with_steps

STATE = """[probe.state]
metadata = [{ tp = "t-0", leader = 1, leader_epoch = 0 }, { tp = "t-1", leader = 1, leader_epoch = 0 }]
positions = [{ tp = "t-0", offset = 0 }]
assignment = ["t-0"]
"""
RECORDS = '{ partitions = [{ tp = "t-0", high_watermark = 9, records = [{ base_offset = 0, record_count = 3, leader_epoch = 0 }] }] }'


def _text(*steps, profile="3.7") -> str:
    head = consumer_probe("FetcherTest.testStaleOutOfRangeError", profile, partitions=2)
    return with_steps(head + STATE, *steps)


def test_a_seek_makes_a_fetch_in_flight_stale():
    assert_agrees(_text(("Seek", "app", '{ tp = "t-0", offset = 1 }', '{ "position:t-0" = 1 }'),
                 ("FetchResponse", "b1", RECORDS, '{ "consumed:t-0" = 0, "position:t-0" = 1, '
                  '"sent_to" = ["Fetch>b1"], "fetch_sent.fetch_offset:t-0" = 1 }')))


def test_records_kept_while_paused_are_taken_on_resume_from_2_4():
    steps = (("Pause", "app", '{ partitions = ["t-0"] }', '{ "paused:t-0" = true }'),
             ("FetchResponse", "b1", RECORDS, '{ "consumed:t-0" = 0, "sent_count:Fetch" = 0 }'))
    assert_agrees(_text(*steps, ("Resume", "app", '{ partitions = ["t-0"] }',
                          '{ "consumed:t-0" = 3, "position:t-0" = 3 }')))
    assert_agrees(_text(*steps, ("Resume", "app", '{ partitions = ["t-0"] }',
                          '{ "consumed:t-0" = 0, "position:t-0" = 0 }'), profile="2.3"))


def test_an_assigned_partition_waits_for_a_reset_and_a_dropped_one_is_forgotten():
    assert_agrees(_text(("Assign", "app", '{ partitions = ["t-1"] }',
                  '{ "assigned:t-0" = false, "position:t-0" = "none", '
                  '"fetch_state:t-1" = "await_reset", '
                  '"sent_to" = ["Fetch>b1", "ListOffsets>b1"] }'),
                 ("FetchResponse", "b1", RECORDS, '{ "consumed:t-0" = 0, "sent_to" = [] }')))


def test_an_unvalidated_seek_waits_for_validation():
    assert_agrees(_text(("Seek", "app", '{ tp = "t-0", offset = 4, offset_epoch = 0, leader = 1, '
                  'leader_epoch = 0, awaiting_validation = true }',
                  '{ "awaiting_validation:t-0" = true }')))


@pytest.mark.parametrize("step,key", [
    (("Seek", "app", '{ tp = "t-1", offset = 1 }', "{}"), "probe.steps[0].body.tp"),
    (("Pause", "app", '{ partitions = ["t-2"] }', "{}"), "probe.steps[0].body.partitions"),
    (("Assign", "app", '{ partitions = ["u-0"] }', "{}"), "probe.steps[0].body.partitions"),
    (("Seek", "app", '{ tp = "t-0", offset = 1, leader = 1 }', "{}"), "probe.steps[0].body"),
    (("Seek", "b1", '{ tp = "t-0", offset = 1 }', "{}"), "probe.steps[0].from"),
    (("Seek", "app", '{ tp = "t-0" }', "{}"), "probe.steps[0].body.offset"),
    (("FetchResponse", "app", RECORDS, "{}"), "probe.steps[0].from"),
    (("Seek", "app", '{ tp = "t-0", offset = 1 }', '{ "paused" = true }'),
     "probe.steps[0].expect.paused"),
])
def test_bad_application_calls_are_one_line_errors_naming_the_key(step, key):
    assert_refused(_text(step), key)


def test_an_unvalidated_seek_before_2_3_is_refused():
    assert_refused(_text(("Seek", "app", '{ tp = "t-0", offset = 1, offset_epoch = 0, '
                          'awaiting_validation = true }', "{}"), profile="2.2"),
                   "probe.steps[0].body.awaiting_validation")


def test_a_state_pausing_an_unassigned_partition_is_refused():
    step = ("Seek", "app", '{ tp = "t-0", offset = 1 }', "{}")
    assert_refused(_text(step).replace('assignment = ["t-0"]',
                                       'assignment = ["t-0"]\npaused = ["t-1"]'),
                   "probe.state.paused")
