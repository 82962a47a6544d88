"""A consumer that polls when told (`polls_when_told`) buffers its Fetch answers until a `Poll`
step collects them, as Kafka's `FetchCollector.collectFetch` does: a partition with a buffered
answer is not fetched again, an answer made stale by a seek is dropped at collection, an
exception from an answer that carries records is raised again on the next poll, and
`max_poll_records` bounds what one poll returns. Bad poll settings are one-line errors."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_agrees, assert_refused, consumer_probe, with_steps

STATE = """[probe.state]
metadata = [{ tp = "t-0", leader = 1, leader_epoch = 0 }]
positions = [{ tp = "t-0", offset = 0 }]
polls_when_told = true
"""
RECORDS = ('{ partitions = [{ tp = "t-0", high_watermark = 9, error = "%s", records = '
           '[{ base_offset = 0, record_count = 3, leader_epoch = 0 }] }] }')
OUT_OF_RANGE = '{ partitions = [{ tp = "t-0", high_watermark = 9, error = "OFFSET_OUT_OF_RANGE" }] }'
POLL = ("Poll", "app", "{}")
ANSWER = ("FetchResponse", "b1", OUT_OF_RANGE)


def _text(*steps, state=STATE, reset="none") -> str:
    head = consumer_probe("FetcherTest.testFetchedRecordsAfterSeek", "3.7", reset=reset)
    return with_steps(head + state, *steps)


def test_an_answer_waits_for_the_poll_and_its_partition_is_not_fetched_meanwhile():
    assert_agrees(_text(("FetchResponse", "b1", RECORDS % "NONE",
                  '{ "consumed:t-0" = 0, "buffered:t-0" = true, "sent_count:Fetch" = 1 }'),
                 ("Seek", "app", '{ tp = "t-0", offset = 0 }', '{ "sent_count:Fetch" = 0 }'),
                 (*POLL, '{ "consumed:t-0" = 3, "position:t-0" = 3, "buffered:t-0" = false, '
                  '"sent_to" = ["Fetch>b1"], "fetch_sent.fetch_offset:t-0" = 3 }')))


def test_a_seek_before_the_poll_drops_the_answer():
    assert_agrees(_text(("FetchResponse", "b1", RECORDS % "OFFSET_OUT_OF_RANGE",
                  '{ "exception:t-0" = "none" }'),
                 ("Seek", "app", '{ tp = "t-0", offset = 2 }', '{ "position:t-0" = 2 }'),
                 (*POLL, '{ "exception:t-0" = "none", "consumed:t-0" = 0, "position:t-0" = 2 }')))


def test_an_exception_is_raised_again_while_its_answer_holds_records():
    raised = '{ "exception:t-0" = "OffsetOutOfRangeException" }'
    assert_agrees(_text(("FetchResponse", "b1", RECORDS % "OFFSET_OUT_OF_RANGE", "{}"),
                 (*POLL, raised), (*POLL, raised)))
    assert_agrees(_text(("FetchResponse", "b1", OUT_OF_RANGE, "{}"), (*POLL, raised),
                 (*POLL, '{ "exception:t-0" = "none" }')))


def test_an_error_is_handled_at_collection():
    assert_agrees(_text(("FetchResponse", "b1", OUT_OF_RANGE, '{ "offset_reset_needed:t-0" = false }'),
                 (*POLL, '{ "offset_reset_needed:t-0" = true }'), reset="earliest"))


def test_max_poll_records_bounds_one_poll():
    state = STATE + "max_poll_records = 2\n"
    assert_agrees(_text(("FetchResponse", "b1", RECORDS % "NONE", "{}"),
                 (*POLL, '{ "consumed:t-0" = 2, "position:t-0" = 2, "sent_count:Fetch" = 0 }'),
                 (*POLL, '{ "consumed:t-0" = 1, "position:t-0" = 3 }'), state=state))


@pytest.mark.parametrize("state,steps,key", [
    (STATE.replace("polls_when_told = true", ""), (POLL,), "probe.steps[0].deliver"),
    (STATE.replace("polls_when_told = true", "max_poll_records = 2"), (ANSWER,),
     "probe.state.max_poll_records"),
    (STATE + "max_poll_records = 0\n", (ANSWER,), "probe.state.max_poll_records"),
])
def test_bad_poll_settings_are_one_line_errors(state, steps, key):
    assert_refused(_text(*((*s, "{}") for s in steps), state=state), key)
