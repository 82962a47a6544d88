"""`sim.kafka.rules.fetch_session`: KIP-227's contexts, what an incremental answer carries, and
what the client sends next, as `FetchSession.scala` and `FetchSessionHandler` decide them
(cases after Kafka's `FetchSessionTest` and `FetchSessionHandlerTest`)."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.fetch_session import FetchSessionHandler
from sim.kafka.messages import FetchPartition
from sim.kafka.profiles import PROFILES
from sim.kafka.rules import fetch_session as fs


def test_epochs_count_up_wrap_to_one_and_final_stays_final():
    assert fs.next_epoch(fs.INITIAL_EPOCH) == 1
    assert fs.next_epoch(41) == 42
    assert fs.next_epoch(2**31 - 1) == 1
    assert fs.next_epoch(fs.FINAL_EPOCH) == fs.FINAL_EPOCH


@pytest.mark.parametrize("epoch, cached, context, error", [
    (fs.FINAL_EPOCH, None, fs.SESSIONLESS, E.NONE),  # a client without sessions
    (fs.FINAL_EPOCH, 4, fs.SESSIONLESS, E.NONE),
    (fs.INITIAL_EPOCH, None, fs.FULL, E.NONE),  # opens one
    (fs.INITIAL_EPOCH, 4, fs.FULL, E.NONE),  # closes the one it names, opens another
    (4, None, fs.SESSION_ERROR, E.FETCH_SESSION_ID_NOT_FOUND),  # a restarted leader
    (4, 5, fs.SESSION_ERROR, E.INVALID_FETCH_SESSION_EPOCH),  # a duplicate, or a stale one
    (5, 4, fs.SESSION_ERROR, E.INVALID_FETCH_SESSION_EPOCH),
    (4, 4, fs.INCREMENTAL, E.NONE),
])
def test_the_context_a_fetch_opens(epoch, cached, context, error):
    assert fs.fetch_context(epoch, cached) == (context, error)


@pytest.mark.parametrize("cached, answer, expected", [
    # (cached hw, log start), (records, error, diverging, hw, log start) -> (carried, hw, log start)
    ((10, 0), (False, E.NONE, False, 10, 0), (False, 10, 0)),  # nothing new: left out
    ((10, 0), (True, E.NONE, False, 10, 0), (True, 10, 0)),  # records
    ((10, 0), (False, E.NONE, False, 12, 0), (True, 12, 0)),  # the HW moved
    ((10, 0), (False, E.NONE, False, 10, 3), (True, 10, 3)),  # the log start moved
    ((10, 0), (False, E.NONE, True, 10, 0), (True, 10, 0)),  # a DivergingEpoch (3.7)
    ((10, 0), (False, E.NOT_LEADER_OR_FOLLOWER, False, -1, -1), (True, -1, -1)),
    ((10, 0), (False, E.OFFSET_OUT_OF_RANGE, False, 10, 0), (True, -1, 0)),  # HW -1 on error
    ((-1, -1), (False, E.NONE, False, 10, 0), (True, 10, 0)),  # new to the session
])
def test_what_an_incremental_answer_carries(cached, answer, expected):
    records, error, diverging, hw, log_start = answer
    assert fs.must_respond(*cached, records, error, diverging, hw, log_start) == expected


def test_an_error_once_gone_is_carried_again_even_at_the_same_hw():
    _, hw, start = fs.must_respond(10, 0, False, E.FENCED_LEADER_EPOCH, False, 10, 0)
    assert fs.must_respond(hw, start, False, E.NONE, False, 10, 0)[0]


@pytest.mark.parametrize("before, error, response_id, after", [
    ((0, 0), E.NONE, 7, (7, 1)),  # a full answer opened session 7
    ((0, 0), E.NONE, 0, (0, 0)),  # none opened: full again
    ((7, 1), E.NONE, 7, (7, 2)),
    ((7, 9), E.NONE, 0, (0, 0)),  # the leader closed it
    ((7, 9), E.FETCH_SESSION_ID_NOT_FOUND, 0, (0, 0)),  # start over
    ((7, 9), E.INVALID_FETCH_SESSION_EPOCH, 7, (7, 0)),  # close it, open a new one
])
def test_what_the_client_sends_after_an_answer(before, error, response_id, after):
    assert fs.session_after_response(*before, error, response_id) == after


def test_a_lost_fetch_makes_the_next_one_full_and_closes_the_session():
    assert fs.session_after_error(7) == (7, fs.INITIAL_EPOCH)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_sessions_come_with_1_1(profile):
    proto = PROFILES[profile]
    assert proto.fetch_sessions == (profile not in ("0.10.2", "0.11", "1.0"))


def _fp(tp, offset, epoch=0):
    return FetchPartition(tp, offset, epoch, -1)


def test_a_client_session_sends_only_what_changed_and_forgets_what_it_dropped():
    handler = FetchSessionHandler()
    assert handler.full
    sent, forgotten = handler.build_full([_fp("t-0", 5), _fp("t-1", 7), _fp("t-2", 9)])
    assert [fp.tp for fp in sent] == ["t-0", "t-1", "t-2"] and forgotten == ()
    handler.session_id, handler.epoch = fs.session_after_response(0, 0, E.NONE, 3)
    assert not handler.full
    sent, forgotten = handler.build_incremental(
        {"t-0": _fp("t-0", 5), "t-1": _fp("t-1", 8), "t-2": None, "t-3": _fp("t-3", 0)})
    # Kafka's order (`Builder.build`, FetchSessionHandlerTest.testIncrementals): the partitions
    # that join first, then those altered
    assert sent == (_fp("t-3", 0), _fp("t-1", 8)) and forgotten == ("t-2",)
    assert list(handler.parts) == ["t-0", "t-1", "t-3"]
    assert handler.build_incremental({"t-2": None, "t-0": _fp("t-0", 5, epoch=1)}) == \
        ((_fp("t-0", 5, epoch=1),), ())  # a new leader epoch alone is a change


def test_an_incremental_build_sends_joiners_then_altered_and_forgets_in_session_order():
    """`FetchSessionHandler.Builder.build` (1.1.0 to 3.7.0): `next` keeps the partitions that
    join the session in the order given, then each altered one moved to its end in the
    session's order; `removed` follows the session's order; an altered partition keeps its
    place in `sessionPartitions`."""
    handler = FetchSessionHandler()
    handler.build_full([_fp("t-5", 0), _fp("t-1", 0), _fp("t-3", 0), _fp("t-0", 0)])
    handler.session_id, handler.epoch = 3, 1
    sent, forgotten = handler.build_incremental(
        {"t-9": _fp("t-9", 0), "t-3": _fp("t-3", 4), "t-2": _fp("t-2", 0),
         "t-5": _fp("t-5", 2), "t-0": None, "t-1": None})
    assert [fp.tp for fp in sent] == ["t-9", "t-2", "t-5", "t-3"]
    assert forgotten == ("t-1", "t-0")
    assert list(handler.parts) == ["t-5", "t-3", "t-9", "t-2"]


def test_a_full_answer_must_carry_the_session_and_an_incremental_one_nothing_else():
    """`verifyFullFetchResponsePartitions` / `verifyIncrementalFetchResponsePartitions`
    (FetchSessionHandlerTest.testVerifyFullFetchResponsePartitions at 3.7.0)."""
    held = ["foo-0", "foo-1", "bar-0"]
    assert fs.response_problem(True, held, ["foo-0", "foo-1", "bar-0"]) is None
    assert fs.response_problem(True, held, ["foo-0", "foo-1"]) == "omitted"
    assert fs.response_problem(True, [], ["foo-0"]) == "extra"
    assert fs.response_problem(False, held, ["foo-1"]) is None
    assert fs.response_problem(False, held, ["baz-0"]) == "extra"


def test_a_refused_answer_is_not_used_and_resets_the_session():
    """`handleResponse` returns false: after a full Fetch `FetchMetadata.INITIAL`, after an
    incremental one `nextCloseExisting(AttemptNew)` (the session's id at INITIAL_EPOCH)."""
    handler = FetchSessionHandler()
    handler.build_full([_fp("t-0", 0), _fp("t-1", 0)])
    assert not handler.handle_response(E.NONE, 123, ["t-0"])  # omits t-1
    assert (handler.session_id, handler.epoch) == (0, 0)
    handler.build_full([_fp("t-0", 0), _fp("t-1", 0)])
    assert handler.handle_response(E.NONE, 123, ["t-0", "t-1"])
    assert (handler.session_id, handler.epoch) == (123, 1)
    handler.build_incremental({"t-0": _fp("t-0", 0), "t-1": _fp("t-1", 0)})
    assert handler.handle_response(E.NONE, 123, [])  # an incremental answer may leave all out
    assert (handler.session_id, handler.epoch) == (123, 2)
    assert not handler.handle_response(E.NONE, 123, ["t-2"])  # not in the session
    assert (handler.session_id, handler.epoch) == (123, 0)
    assert not handler.handle_response(E.UNKNOWN_TOPIC_ID, 123, [])  # testTopLevelErrorResetsMetadata
    assert (handler.session_id, handler.epoch) == (123, 0)


def test_the_session_epoch_wraps_to_one():
    """`FetchMetadata.nextEpoch`: after Integer.MAX_VALUE comes 1, never INITIAL_EPOCH."""
    assert fs.session_after_response(7, fs.INT_MAX, E.NONE, 7) == (7, 1)
