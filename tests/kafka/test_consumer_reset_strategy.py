"""A consumer's reset strategies: a reset asked for by a strategy of its own (`seekToBeginning`,
`seekToEnd`, `requestOffsetReset(tp, strategy)`), and which ListOffsets answer a waiting
position takes (`SubscriptionState.maybeSeekUnvalidated` at 2.4.0 and 3.7.0: one for the
strategy it waits by, whichever request asked for it)."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_agrees, assert_refused, consumer_probe, with_steps

METADATA = '[probe.state]\nmetadata = [{ tp = "t-0", leader = 1, leader_epoch = 0 }]\n'
ANSWER = '{ partitions = [{ tp = "t-0", offset = 5 }] }'


def _probe(reset: str = "latest", state: str = "") -> str:
    return consumer_probe("OffsetFetcherTest.testChangeResetWithInFlightReset",
                          reset=reset) + METADATA + state


def test_an_answer_in_flight_is_taken_after_a_new_reset_by_the_same_strategy():
    """The fix: a reset asked again, here by OFFSET_OUT_OF_RANGE after a seek, by the strategy
    the ListOffsets in flight was sent for still takes that answer (Kafka compares strategies;
    the model used to drop every answer to a reset asked before the last one)."""
    assert_agrees(with_steps(
        _probe(),
        ("Seek", "app", '{ tp = "t-0", offset = 3 }', '{ "fetch_sent.fetch_offset:t-0" = 3 }'),
        ("FetchResponse", "b1", '{ partitions = [{ tp = "t-0", error = "OFFSET_OUT_OF_RANGE" }] }',
         '{ "offset_reset_needed:t-0" = true, "sent_count:ListOffsets" = 0 }'),
        ("ListOffsetsResponse", "b1", ANSWER,
         '{ "position:t-0" = 5, "offset_reset_needed:t-0" = false }')))


def test_an_answer_for_another_strategy_is_dropped_and_the_new_one_asked():
    assert_agrees(with_steps(
        _probe(),
        ("SeekToBeginning", "app", '{ partitions = ["t-0"] }',
         '{ "reset_strategy:t-0" = "earliest", "list_offsets_sent.timestamp:t-0" = -1 }'),
        ("ListOffsetsResponse", "b1", ANSWER,
         '{ "position:t-0" = "none", "list_offsets_sent.timestamp:t-0" = -2 }')))


def test_seek_to_end_resets_a_fetching_position_and_drops_its_fetch():
    """`seekToEnd` on a position that fetches: it waits for a LATEST reset, sent at once, and
    the answer to its Fetch in flight has no valid position to land on."""
    assert_agrees(with_steps(
        _probe(reset="earliest", state='positions = [{ tp = "t-0", offset = 3 }]\n'),
        ("SeekToEnd", "app", '{ partitions = ["t-0"] }',
         '{ "fetch_state:t-0" = "await_reset", "reset_strategy:t-0" = "latest", '
         '"list_offsets_sent.timestamp:t-0" = -1 }'),
        ("FetchResponse", "b1", '{ partitions = [{ tp = "t-0", records = [{ base_offset = 3, '
         'leader_epoch = 0 }] }] }', '{ "consumed:t-0" = 0, "position:t-0" = "none" }')))


def test_a_strategy_of_its_own_resets_without_a_default_policy():
    """With `auto_offset_reset = "none"` a `seekToBeginning` still resets (EARLIEST), while a
    partition reset by NONE raises NoOffsetForPartitionException and sends nothing."""
    assert_agrees(with_steps(
        _probe(reset="none", state='resets = [{ tp = "t-0", strategy = "none" }]\n'),
        ("SeekToBeginning", "app", '{ partitions = ["t-0"] }',
         '{ "exception:t-0" = "NoOffsetForPartitionException", '
         '"list_offsets_sent.timestamp:t-0" = -2, "fetch_state:t-0" = "await_reset" }'),
        ("ListOffsetsResponse", "b1", ANSWER, '{ "position:t-0" = 5 }')))


PAUSE = ("Pause", "app", '{ partitions = ["t-0"] }', '{ "paused:t-0" = true }')


@pytest.mark.parametrize("state,step,key", [
    ('resets = [{ tp = "t-0", strategy = "oldest" }]\n', PAUSE, "probe.state.resets[0].strategy"),
    ('resets = [{ tp = "t-1", strategy = "latest" }]\n', PAUSE, "probe.state.resets[0].tp"),
    ("", ("SeekToEnd", "app", '{ partitions = ["t-1"] }', '{ "paused:t-0" = false }'),
     "probe.steps[0].body.partitions"),
])
def test_bad_resets_are_refused_naming_the_key(state, step, key):
    assert_refused(with_steps(_probe(state=state), step), key)
