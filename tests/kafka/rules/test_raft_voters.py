"""KIP-853's decision rules (`sim.kafka.rules.raft_voters`), each checked against the order
`AddVoterHandler.handleAddVoterRequest` / `RemoveVoterHandler.handleRemoveVoterRequest` /
`handleApiVersionsResponse` take them at 3.9.0-rc3."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.rules import raft_voters as R

VOTERS = ("c1", "c2")
# is_leader, pending, hw, kraft_version, last_voters_offset: a leader free to change
FREE = (True, False, 3, 1, 2)


@pytest.mark.parametrize("inputs,error", [
    ((False, False, 3, 1, 2), E.NOT_LEADER_OR_FOLLOWER),
    ((True, True, 3, 1, 2), E.REQUEST_TIMED_OUT),      # another change pending
    ((True, False, None, 1, 2), E.REQUEST_TIMED_OUT),  # no high watermark yet
    ((True, False, 3, 0, -1), E.UNSUPPORTED_VERSION),  # static voters
    ((True, False, 3, 1, 3), E.REQUEST_TIMED_OUT),     # the last VotersRecord uncommitted
    ((True, True, None, 0, 3), E.REQUEST_TIMED_OUT),   # pending is checked before the version
    ((True, False, None, 0, 3), E.REQUEST_TIMED_OUT),  # so is the high watermark
])
def test_the_checks_both_requests_share_come_in_kafkas_order(inputs, error):
    assert R.add_voter_error(*inputs, VOTERS, "c3") == error
    assert R.remove_voter_error(*inputs, VOTERS, "c2") == error


def test_add_voter_refuses_a_voter_already_in_the_set():
    assert R.add_voter_error(*FREE, VOTERS, "c2") == E.DUPLICATE_VOTER
    assert R.add_voter_error(*FREE, VOTERS, "c3") == E.NONE


def test_remove_voter_refuses_a_non_voter_and_the_last_voter():
    assert R.remove_voter_error(*FREE, VOTERS, "c3") == E.VOTER_NOT_FOUND
    assert R.remove_voter_error(*FREE, ("c1",), "c1") == E.VOTER_NOT_FOUND  # `removeVoter`
    assert R.remove_voter_error(*FREE, VOTERS, "c1") == E.NONE  # the leader itself: allowed


def test_the_new_voters_api_versions_answer():
    assert R.pending_add_outcome(E.INVALID_REQUEST, (0, 1), 1, True) == E.REQUEST_TIMED_OUT
    assert R.pending_add_outcome(E.NONE, None, 1, True) == E.INVALID_REQUEST  # no feature
    assert R.pending_add_outcome(E.NONE, (0, 0), 1, True) == E.INVALID_REQUEST
    assert R.pending_add_outcome(E.NONE, (0, 1), 1, False) == E.REQUEST_TIMED_OUT  # lagging
    assert R.pending_add_outcome(E.NONE, (0, 1), 1, True) == E.NONE


def test_caught_up_means_caught_up_once_and_fetched_within_the_hour():
    hour = R.CAUGHT_UP_WINDOW_MS
    assert not R.replica_caught_up((-1, -1, -1, -1), 10)  # never fetched
    assert not R.replica_caught_up((0, 5, -1, 3), 10)  # fetched, never caught up
    assert R.replica_caught_up((3, 5, 5, 3), 10)
    assert not R.replica_caught_up((3, 5, 5, 3), 5 + hour)  # its last fetch an hour ago


def test_a_change_is_committed_once_the_hw_passes_its_record():
    assert not R.change_committed(None, 3)
    assert not R.change_committed(3, 3)
    assert not R.change_committed(4, None)  # an add still waiting for ApiVersions
    assert R.change_committed(4, 3)


def test_the_voter_set_is_the_last_record_committed_or_not():
    boot = ("c1", "c2", "c3")
    assert R.last_voter_set(boot, []) == (-1, boot)
    records = [(2, boot), (5, ("c1", "c2"))]
    assert R.last_voter_set(boot, records) == (5, ("c1", "c2"))  # committed or not


def test_a_leader_resigns_only_after_removing_itself():
    assert R.resigns_after_removal(("c2", "c3"), "c1")
    assert not R.resigns_after_removal(("c1", "c3"), "c1")
