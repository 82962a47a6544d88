"""The records a consumer returns, as a probe reads them (`consumed_offsets`, `consumed_epochs`),
batches without records (`empty`: v2 keeps a compacted batch's offsets), and a connection that
closes under a Fetch."""

from __future__ import annotations

from tests.probe.helpers import assert_agrees, consumer_probe, probe_checks, with_steps

STATE = ('[probe.state]\nmetadata = [{ tp = "t-0", leader = 1, leader_epoch = 0 }]\n'
         'positions = [{ tp = "t-0", offset = %d }]\n')
POLL = ("Poll", "app", "{}", "{}")


def _probe(offset: int = 0, polls: bool = True, limit: int = 0) -> str:
    text = consumer_probe("FetcherTest.testLeaderEpochInConsumerRecord") + STATE % offset
    if polls:
        text += "polls_when_told = true\n"
    if limit:
        text += f"max_poll_records = {limit}\n"
    return text


def _answer(*batches: str) -> str:
    return ('{ partitions = [{ tp = "t-0", high_watermark = 100, records = [%s] }] }'
            % ", ".join(batches))


def _poll(expect: str) -> tuple:
    return ("Poll", "app", "{}", expect)


def test_records_are_listed_with_their_batch_epochs_across_limited_polls():
    assert_agrees(with_steps(
        _probe(limit=2),
        ("FetchResponse", "b1", _answer("{ base_offset = 0, record_count = 1, leader_epoch = 2 }",
                                        "{ base_offset = 1, record_count = 2, leader_epoch = 4 }"),
         '{ "consumed_offsets:t-0" = [] }'),
        _poll('{ "consumed_offsets:t-0" = [0, 1], "consumed_epochs:t-0" = [2, 4], '
              '"offset_epoch:t-0" = 4 }'),
        _poll('{ "consumed_offsets:t-0" = [2], "consumed_epochs:t-0" = [4], "position:t-0" = 3 }'),
        _poll('{ "consumed_offsets:t-0" = [] }')))


def test_an_empty_batch_between_records_returns_none_and_a_trailing_one_moves_the_position():
    assert_agrees(with_steps(
        _probe(),
        ("FetchResponse", "b1", _answer(
            "{ base_offset = 0, record_count = 2, leader_epoch = 1 }",
            "{ base_offset = 2, record_count = 3, leader_epoch = 2, empty = true }",
            "{ base_offset = 5, record_count = 1, leader_epoch = 3 }",
            "{ base_offset = 6, record_count = 4, leader_epoch = 5, empty = true }"), "{}"),
        _poll('{ "consumed_offsets:t-0" = [0, 1, 5], "consumed_epochs:t-0" = [1, 1, 3], '
              '"consumed:t-0" = 3, "position:t-0" = 10, "offset_epoch:t-0" = 5 }')))


def test_an_empty_batch_left_after_a_full_poll_moves_the_position_on_the_next():
    """`fetchRecords` stops at `max.poll.records` before it looks past the last record; the
    next poll finds only the empty batch, returns nothing and moves the position past it."""
    assert_agrees(with_steps(
        _probe(limit=1),
        ("FetchResponse", "b1", _answer(
            "{ base_offset = 0, record_count = 1, leader_epoch = 1 }",
            "{ base_offset = 1, record_count = 3, leader_epoch = 2, empty = true }"), "{}"),
        _poll('{ "consumed_offsets:t-0" = [0], "position:t-0" = 1 }'),
        _poll('{ "consumed_offsets:t-0" = [], "position:t-0" = 4, "offset_epoch:t-0" = 2 }')))


def test_an_answer_taken_as_it_comes_lists_the_records_from_the_position():
    """Without `polls_when_told`: records of a batch below the position are not returned."""
    assert_agrees(with_steps(
        _probe(offset=1, polls=False),
        ("FetchResponse", "b1", _answer("{ base_offset = 0, record_count = 3, leader_epoch = -1 }"),
         '{ "consumed_offsets:t-0" = [1, 2], "consumed_epochs:t-0" = ["none", "none"], '
         '"offset_epoch:t-0" = "none" }')))


def test_a_check_on_returned_records_can_disagree():
    checks = probe_checks(with_steps(
        _probe(),
        ("FetchResponse", "b1", _answer("{ base_offset = 0, record_count = 2, leader_epoch = 1 }"),
         "{}"), _poll('{ "consumed_epochs:t-0" = [1, 2] }')), by_step=True)
    assert checks["1:consumed_epochs:t-0"] == ([1, 2], [1, 1])


def test_a_disconnect_loses_the_fetch_in_flight_and_fetches_again_from_the_position():
    """The Fetch's connection closes: nothing is taken and nothing is sent to b1 at once (its
    reconnect backoff, 50 ms); after it, Metadata and a Fetch from the same position."""
    assert_agrees(with_steps(
        _probe(polls=False),
        ("Disconnect", "b1", "{}", '{ "metadata_update_requested" = true, "position:t-0" = 0, '
         '"consumed:t-0" = 0, "sent_to" = ["Fetch>b1"] }'),
        ("FetchResponse", "b1", _answer("{ base_offset = 0, record_count = 2, leader_epoch = 1 }"),
         '{ "consumed:t-0" = 2, "position:t-0" = 2, '
         '"sent_to" = ["Metadata>b1", "Fetch>b1", "Fetch>b1"] }')))
