"""How a KRaft voter answers the quorum's requests, and how a broker takes the answers:
votes by `QuorumState`, Fetches by `validateLeaderOnlyRequest`, an observer's epoch from
`maybeHandleCommonResponse` (Kafka 3.7.0)."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from tests.kafka.test_kraft import KRAFT_UNIT


@pytest.mark.parametrize("leader,voted_for,epoch,granted,error,then_voted", [
    ("c3", None, 5, False, 0, None),    # FollowerState: this epoch has a leader
    ("c3", "c2", 5, False, 0, "c2"),    # even for the one it voted for, once a leader won
    (None, None, 5, True, 0, "c2"),     # UnattachedState: by the log, then Voted
    (None, "c3", 5, False, 0, "c3"),    # VotedState: one vote per epoch
    ("c3", None, 6, True, 0, "c2"),     # a newer epoch: unattached in it first, then Voted
    ("c3", None, 4, False, E.FENCED_LEADER_EPOCH, None),  # an older epoch is fenced
])
def test_a_voter_grants_a_vote_as_its_quorum_state_allows(leader, voted_for, epoch, granted,
                                                           error, then_voted):
    """`handleVoteRequest` and `QuorumState.canGrantVote` (3.7.0): c1, at quorum epoch 5,
    is asked by c2, whose log is as up to date as its own."""
    from types import SimpleNamespace

    from sim.kafka.kraft_messages import Vote
    from tests.kafka import build_cluster
    cluster, _trace = build_cluster(KRAFT_UNIT)
    c1 = cluster.world.actors["c1"]
    c1.quorum_epoch, c1.role, c1.leader, c1.voted_for = 5, "follower", leader, voted_for
    sent = []
    c1.send = lambda dst, kind, body: sent.append((dst, kind, body))
    c1.on_vote(SimpleNamespace(src="c2", body=Vote(epoch, "c2", c1._last_epoch(), c1.end_offset)))
    assert [(d, k) for d, k, _ in sent] == [("c2", "VoteResponse")]
    answer = sent[0][2]
    assert (answer.granted, answer.error, answer.epoch) == (granted, error, max(5, epoch))
    assert c1.voted_for == then_voted


@pytest.mark.parametrize("epoch,error,stays_leader", [
    (5, E.NONE, True), (4, E.FENCED_LEADER_EPOCH, True), (6, E.UNKNOWN_LEADER_EPOCH, True)])
def test_a_quorum_leader_answers_a_fetch_by_its_epoch_and_keeps_its_own(epoch, error,
                                                                       stays_leader):
    """`validateLeaderOnlyRequest` (3.7.0): c1 leads epoch 5; a Fetch of another epoch gets
    an error naming c1's epoch and leader, and a newer one does not make c1 step down (the
    model's leader used to take the newer epoch and resign)."""
    from types import SimpleNamespace

    from sim.kafka.kraft_messages import QuorumFetch
    from tests.kafka import build_cluster
    cluster, _trace = build_cluster(KRAFT_UNIT)
    c1 = cluster.world.actors["c1"]
    c1.quorum_epoch, c1.role, c1.leader = 5, "leader", "c1"
    sent = []
    c1.send = lambda dst, kind, body: sent.append((dst, kind, body))
    c1.on_quorum_fetch(SimpleNamespace(src="b1", body=QuorumFetch(
        epoch, "b1", c1.end_offset + 1, 0, False, 7)))
    assert (c1.role == "leader") is stays_leader and c1.quorum_epoch == 5
    if error:
        assert [(d, k) for d, k, _ in sent] == [("b1", "QuorumFetchResponse")]
        answer = sent[0][2]
        assert (answer.error, answer.epoch, answer.leader, answer.corr) == (error, 5, "c1", 7)


def test_a_broker_fenced_by_a_voter_fetches_at_once_from_the_leader_it_names():
    """`maybeHandleCommonResponse`: an observer whose Fetch carried an older epoch learns the
    epoch and the leader from the FENCED_LEADER_EPOCH answer and fetches from that leader at
    once, carrying the epoch; an answer of an older epoch than it knows teaches it nothing."""
    from types import SimpleNamespace

    from sim.kafka.kraft_messages import QuorumFetchResponse
    from tests.kafka import build_cluster
    cluster, _trace = build_cluster(KRAFT_UNIT)
    b1 = cluster.world.actors["b1"]
    timers = []
    b1.set_timer = lambda delay_us, name, data=None: timers.append((delay_us, name))
    b1.awaiting, b1.meta_corr, b1.meta_epoch, b1.meta_leader = True, 3, 0, None
    b1.on_quorum_fetch_response(SimpleNamespace(src="c3", body=QuorumFetchResponse(
        4, "c2", E.FENCED_LEADER_EPOCH, (), -1, None, 3)))
    assert (b1.meta_epoch, b1.meta_leader, timers) == (4, "c2", [(0, "meta_fetch")])
    b1.awaiting, b1.meta_corr = True, 4
    b1.on_quorum_fetch_response(SimpleNamespace(src="c3", body=QuorumFetchResponse(
        2, "c3", E.NOT_LEADER_OR_FOLLOWER, (), -1, None, 4)))
    assert (b1.meta_epoch, b1.meta_leader) == (4, "c2") and timers[-1][0] > 0


@pytest.mark.parametrize("role,leader,keeps", [
    ("follower", None, True),       # unattached (or voted): the election time left stays
    ("candidate", None, True),
    ("follower", "c3", False),      # a follower of a known leader starts a new timeout
])
def test_a_higher_epoch_vote_keeps_an_unattached_voters_election_time(role, leader, keeps):
    """`QuorumState.transitionToUnattached` (3.7.0): a voter made unattached in a higher epoch
    keeps its remaining election time if it was unattached, voted or a candidate, so a stale
    candidate standing again and again (its votes refused, backing off) cannot hold the
    others' elections off; the model restarted every voter's timer on each such Vote."""
    from types import SimpleNamespace

    from sim.kafka.kraft_messages import Vote
    from tests.kafka import build_cluster
    cluster, _trace = build_cluster(KRAFT_UNIT)
    c1 = cluster.world.actors["c1"]
    c1.quorum_epoch, c1.role, c1.leader = 5, role, leader
    c1.election_deadline_us = c1.now_us + 123
    c1.send = lambda dst, kind, body: None
    # c2's log is behind (end offset -1 is refused; an empty log at epoch 0 is older)
    c1.entries.append((5, None))
    c1.on_vote(SimpleNamespace(src="c2", body=Vote(6, "c2", 0, 0)))
    assert c1.quorum_epoch == 6 and c1.voted_for is None
    assert (c1.election_deadline_us == c1.now_us + 123) is keeps
