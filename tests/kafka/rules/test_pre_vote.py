"""`sim.kafka.rules.pre_vote`: KIP-996's pre-vote checks and grants (Kafka 4.0+)."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules import kraft
from sim.kafka.rules import pre_vote as P


@pytest.mark.parametrize("pre_vote,replica_epoch,last_epoch,last_offset,epoch,error", [
    (True, 5, 5, 10, 5, E.NONE),             # a prospective asks at its epoch, led by a leader
    (False, 5, 5, 10, 4, E.INVALID_REQUEST),  # a candidate's last epoch is below its new one
    (True, 5, 6, 10, 5, E.INVALID_REQUEST),  # no log can hold an epoch its owner never saw
    (True, 5, 4, -1, 5, E.INVALID_REQUEST),
    (True, 4, 4, 10, 5, E.FENCED_LEADER_EPOCH),
    (False, 6, 5, 10, 5, E.NONE),
])
def test_vote_request_error(pre_vote, replica_epoch, last_epoch, last_offset, epoch, error):
    assert P.vote_request_error(pre_vote, replica_epoch, last_epoch, last_offset, epoch) == error


def test_standard_vote_check_is_the_3x_rule():
    for args in [(5, 5, 10, 4), (6, 5, 10, 5), (4, 3, -1, 4), (3, 2, 1, 4)]:
        assert P.vote_request_error(False, *args) == kraft.vote_request_error(*args)


@pytest.mark.parametrize("state,fetched,up_to_date,granted", [
    ("unattached", False, True, True),     # unattachedOrProspectiveCanGrantVote: the log only
    ("unattached", False, False, False),
    ("voted", False, True, True),          # a pre-vote binds nothing: a vote cast is no bar
    ("prospective", False, True, True),
    ("candidate", False, True, True),      # CandidateState grants an up-to-date pre-vote
    ("candidate", False, False, False),
    ("follower", True, True, False),       # a follower of a live leader refuses
    ("follower", False, True, True),       # one that never fetched from its leader grants
    ("follower", False, False, False),
    ("leader", False, True, False),
    ("resigned", False, True, True),       # it gave up its epoch
    ("resigned", False, False, False),
])
def test_grants_pre_vote(state, fetched, up_to_date, granted):
    assert P.grants_pre_vote(state, fetched, up_to_date) is granted


def test_real_vote_state_and_loss():
    assert P.real_vote_state(None, "c2") == "voted"
    assert P.real_vote_state("c1", None) == "follower"
    assert P.real_vote_state(None, None) == "unattached"
    assert P.after_pre_vote_loss("c1") == "follower"
    assert P.after_pre_vote_loss(None) == "unattached"


@pytest.mark.parametrize("profile,on", [("3.7", False), ("3.9", False), ("4.0", True),
                                         ("4.1", True)])
def test_switch_by_release(profile, on):
    assert resolve_protocol(profile).raft_pre_vote is on


def test_unattached_keeps_timer_only_after_a_timeout():
    assert P.unattached_keeps_timer(True) is True
    assert P.unattached_keeps_timer(False) is False


@pytest.mark.parametrize("profile,on", [("3.9", False), ("4.0", False), ("4.1", True)])
def test_candidate_waits_election_timeout_by_release(profile, on):
    """KAFKA-18345 (4.1): a candidate that lost waits out its election timeout."""
    assert resolve_protocol(profile).raft_candidate_waits_election_timeout is on
