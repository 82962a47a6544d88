"""A voter's word on who leads an epoch, as `KafkaRaftClient` 3.7.0 gives it: a malformed
Fetch refused before its epoch is looked at, BeginQuorumEpoch answered and sent again until
acknowledged, a resigning leader's EndQuorumEpoch with its preferred successors, how a voter
takes it, and a graceful shutdown."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.kafka import errors as E
from sim.kafka.kraft_messages import BeginQuorumEpoch, EndQuorumEpoch, QuorumAnswer, QuorumFetch
from sim.kafka.rules import raft_requests as R
from tests.kafka.test_kraft import KRAFT_UNIT


def _voter(role="follower", epoch=5, leader=None, profile="4.1"):
    """c1 of a three-voter quorum on `profile`, set to `role` in `epoch`, its sends recorded."""
    from tests.kafka import build_cluster
    cluster, _trace = build_cluster(KRAFT_UNIT.replace('"4.1"', f'"{profile}"').replace(
        "[cluster]\n", '[cluster]\nmode = "kraft"\n'))
    c1 = cluster.world.actors["c1"]
    c1.quorum_epoch, c1.role, c1.leader = epoch, role, leader
    sent = []
    c1.send = lambda dst, kind, body: sent.append((dst, kind, body))
    return c1, sent


@pytest.mark.parametrize("max_wait,offset,last_epoch,epoch,error", [
    (0, -5, 0, 5, E.INVALID_REQUEST), (0, 0, -1, 5, E.INVALID_REQUEST),
    (0, 0, 6, 5, E.INVALID_REQUEST), (-1, 0, 0, 5, E.INVALID_REQUEST),
    (0, 0, 0, 6, E.UNKNOWN_LEADER_EPOCH),  # well formed: the epoch check answers
    (0, 0, 6, 4, E.INVALID_REQUEST),       # malformed before fenced
])
def test_a_malformed_fetch_is_invalid_before_its_epoch_is_checked(max_wait, offset, last_epoch,
                                                                  epoch, error):
    """`handleFetchRequest` (3.7.0): the model validated no Fetch, and read its log at a
    negative index for a negative offset."""
    c1, sent = _voter("leader", 5, "c1")
    c1.on_quorum_fetch(SimpleNamespace(src="c2", body=QuorumFetch(
        epoch, "c2", offset, last_epoch, True, 7, max_wait_ms=max_wait)))
    answer = sent[-1][2]
    assert (answer.error, answer.epoch, answer.leader, c1.role) == (error, 5, "c1", "leader")


@pytest.mark.parametrize("role,leader,epoch,req_leader,error,then", [
    ("follower", None, 5, "c2", E.NONE, ("follower", "c2", 5)),     # unattached: follows
    ("candidate", None, 5, "c2", E.NONE, ("follower", "c2", 5)),
    ("follower", "c2", 4, "c3", E.FENCED_LEADER_EPOCH, ("follower", "c2", 5)),
    ("follower", None, 5, None, E.INVALID_REQUEST, ("follower", None, 5)),  # LeaderId -1
    ("leader", "c1", 6, "c2", E.NONE, ("follower", "c2", 6)),
])
def test_a_voter_answers_begin_quorum_epoch(role, leader, epoch, req_leader, error, then):
    """`handleBeginQuorumEpochRequest` (3.7.0): the voter answers with the epoch and leader
    it knows once it acted; the model answered nothing."""
    c1, sent = _voter(role, 5, leader)
    c1.on_begin_quorum_epoch(SimpleNamespace(src="c2", body=BeginQuorumEpoch(epoch, req_leader)))
    assert [(d, k) for d, k, _ in sent] == [("c2", "BeginQuorumEpochResponse")]
    answer = sent[0][2]
    assert answer.error == error
    assert (c1.role, c1.leader, c1.quorum_epoch) == then
    assert (answer.epoch, answer.leader) == (then[2], then[1])


def test_a_leader_sends_begin_quorum_epoch_until_acknowledged():
    """`pollLeader` -> `maybeSendRequests(nonAcknowledgingVoters)` (3.3-3.8): a voter that
    answered or fetched is not asked again; one that did not is asked again after the request
    timeout."""
    c1, sent = _voter("candidate", 5, profile="3.8")
    c1.votes = set(c1.voters)
    c1._maybe_win()
    assert sorted(d for d, k, _ in sent if k == "BeginQuorumEpoch") == ["c2", "c3"]
    c1.on_begin_quorum_epoch_response(SimpleNamespace(src="c2", body=QuorumAnswer(5, "c1")))
    assert c1.acked == {"c2"}
    sent.clear()
    c1._announce()
    assert sent == []  # c3's request is still in flight
    c1.epoch_sent["c3"] -= c1.cluster.quorum_request_timeout_ms * 1000
    c1._announce()
    assert [(d, k) for d, k, _ in sent] == [("c3", "BeginQuorumEpoch")]


def test_a_leader_resends_begin_quorum_epoch_as_a_heartbeat_from_3_9():
    """KafkaRaftClientTest.testBeginQuorumEpochHeartbeat (3.9.0, KAFKA-16536): every
    beginQuorumEpochTimeoutMs (half the fetch timeout) the leader sends BeginQuorumEpoch to
    every other voter, answered before or not; none in between."""
    c1, sent = _voter("candidate", 5, profile="3.9")
    c1.votes = set(c1.voters)
    c1._maybe_win()
    half = c1.cluster.quorum_fetch_timeout_ms * 500
    start, rounds = c1.now_us, []
    for delay in (0, half // 2, half, half + half // 2, 2 * half):
        sent.clear()
        c1._env._now = start + delay  # the voter's clock, as its timers read it
        c1._announce()
        rounds.append(sorted(d for d, k, _ in sent if k == "BeginQuorumEpoch"))
        for voter in ("c2", "c3"):  # both answer: 3.8 would never ask them again
            c1.on_begin_quorum_epoch_response(SimpleNamespace(src=voter,
                                                              body=QuorumAnswer(5, "c1")))
    assert rounds == [[], [], ["c2", "c3"], [], ["c2", "c3"]]  # (round 0 went on election)


def test_a_heartbeat_skips_a_voter_whose_last_request_is_still_in_flight():
    """`maybeSendRequest` asks only ready connections (`RequestManager.isReady`): a voter that
    has not answered within quorum.request.timeout.ms (2 s, above the 1 s heartbeat) is
    skipped that round."""
    c1, sent = _voter("candidate", 5, profile="3.9")
    c1.votes = set(c1.voters)
    c1._maybe_win()
    c1.on_begin_quorum_epoch_response(SimpleNamespace(src="c2", body=QuorumAnswer(5, "c1")))
    sent.clear()
    c1._env._now += c1.cluster.quorum_fetch_timeout_ms * 500
    c1._announce()
    assert [(d, k) for d, k, _ in sent] == [("c2", "BeginQuorumEpoch")]


def test_a_begin_quorum_epoch_answer_of_a_higher_epoch_steps_the_leader_down():
    """`maybeHandleCommonResponse`: a newer epoch in the answer is taken, with its leader."""
    c1, _sent = _voter("candidate", 5)
    c1.votes = set(c1.voters)
    c1._maybe_win()
    c1.on_begin_quorum_epoch_response(SimpleNamespace(src="c3", body=QuorumAnswer(7, "c3")))
    assert (c1.role, c1.leader, c1.quorum_epoch) == ("follower", "c3", 7)


def test_preferred_successors_are_the_furthest_fetched_first():
    """`nonLeaderVotersByDescendingFetchOffset`: by end offset, then node id; a voter that
    never fetched last."""
    assert R.preferred_successors(["c1", "c2", "c3", "c4"], "c1", {"c3": 3, "c4": 1}) == (
        "c3", "c4", "c2")
    assert R.preferred_successors(["c1", "c2", "c3"], "c1", {"c2": 1, "c3": 1}) == ("c2", "c3")


@pytest.mark.parametrize("successors,local,backoff", [
    (("c1",), "c1", 0), (("c3", "c1"), "c1", 50), (("c2", "c3"), "c1", 0),
    (("c2", "c3", "c1"), "c1", 50), (("c2", "c1", "c3"), "c1", 25)])
def test_end_epoch_election_backoff(successors, local, backoff):
    """`endEpochElectionBackoff` with quorum.election.backoff.max.ms 100 (3.7.0)."""
    assert R.end_epoch_election_backoff_ms(successors, local, 100) == backoff


def test_a_resigning_leader_sends_end_quorum_epoch_and_the_follower_stands_by_its_place():
    """`transitionToResigned(nonLeaderVotersByDescendingFetchOffset)` and
    `handleEndQuorumEpochRequest` (3.7.0): the model's resigned leader told no one."""
    c1, sent = _voter("candidate", 5)
    c1.votes = set(c1.voters)
    c1._maybe_win()
    c1.voter_ends = {"c3": 1}
    sent.clear()
    c1._resign("lost quorum")
    assert sorted((d, k, b.preferred_successors) for d, k, b in sent) == [
        ("c2", "EndQuorumEpoch", ("c3", "c2")), ("c3", "EndQuorumEpoch", ("c3", "c2"))]
    c2, sent2 = _voter("follower", 5, "c1")
    c2.name = "c2"
    c2.on_end_quorum_epoch(SimpleNamespace(src="c1", body=EndQuorumEpoch(5, "c1", ("c3", "c2"))))
    assert (sent2[-1][1], sent2[-1][2].error) == ("EndQuorumEpochResponse", E.NONE)
    backoff_us = 1000 * R.end_epoch_election_backoff_ms(
        ("c3", "c2"), "c2", c2.cluster.quorum_election_backoff_max_ms)
    assert c2.last_contact_us + c2.cluster.quorum_fetch_timeout_ms * 1000 == \
        c2.now_us + backoff_us


def test_a_follower_of_another_leader_only_answers_end_quorum_epoch():
    """A follower of c3 in epoch 5 keeps its fetch timeout on c2's EndQuorumEpoch."""
    c1, sent = _voter("follower", 5, "c3")
    before = c1.last_contact_us
    c1.on_end_quorum_epoch(SimpleNamespace(src="c2", body=EndQuorumEpoch(5, "c2", ("c1",))))
    assert (c1.leader, c1.last_contact_us, sent[-1][2].error) == ("c3", before, E.NONE)


def test_a_graceful_shutdown_resigns_a_leader_and_stops_once_another_leads():
    """`shutdown(timeoutMs)`: the leader resigns at once; the node stops once a remote
    leader is known (`maybeCompleteShutdown`)."""
    c1, sent = _voter("candidate", 5)
    c1.votes = set(c1.voters)
    c1._maybe_win()
    c1.begin_raft_shutdown(5000)
    assert c1.role == "resigned" and c1.alive
    c1.on_begin_quorum_epoch(SimpleNamespace(src="c2", body=BeginQuorumEpoch(6, "c2")))
    c1.raft_tick()
    assert not c1.alive


@pytest.mark.parametrize("role,leader,voted_for,then", [
    ("leader", "c1", "c1", ("resigned", "c1")),     # it may not lead (or vote) again in it
    ("resigned", "c1", "c1", ("resigned", "c1")),
    ("candidate", None, "c1", ("candidate", None)),
    ("follower", "c2", None, ("follower", "c2")),   # it follows the leader it knew
    ("follower", None, "c3", ("voted", None)),
    ("follower", None, None, ("unattached", None)),
])
def test_a_restarted_voter_starts_in_the_state_it_stopped_in(role, leader, voted_for, then):
    """`QuorumState.initialize` (3.7.0): the model's restarted voter forgot the leader it knew
    and came back unattached (or voted), so it stood for a needless election once its
    election timeout passed; a restarted leader could vote in the epoch it led."""
    c1, _sent = _voter(role, 5, leader)
    c1.voted_for = voted_for
    c1.world.crash("c1")
    c1.world.restart("c1")
    assert (c1.quorum_state(), c1.leader, c1.quorum_epoch) == (*then, 5)
