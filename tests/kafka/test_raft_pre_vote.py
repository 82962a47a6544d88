"""KIP-996 Pre-Vote in the model's quorum (`raft_pre_vote`, Kafka 4.0+), run end to end on
`tests/kafka/prevote_cut_voter.toml`, a copy of the self-test's counterexample: the quorum
leader c2 is cut off from the other voters but not from the brokers. Without Pre-Vote (3.x,
or 4.1 with the switch off) it stands again and again and a broker that asks it learns an
epoch the real leader answers UNKNOWN_LEADER_EPOCH (`broker_metadata_stalled`); with it, it
stays at its epoch and every broker catches up."""

from __future__ import annotations

import functools
import os

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario

SCENARIO = os.path.join(os.path.dirname(__file__), "prevote_cut_voter.toml")


@functools.lru_cache(maxsize=None)
def _run(**protocol) -> dict:
    overrides = {f"protocol.{k}": v for k, v in protocol.items()}
    scenario = load_scenario(SCENARIO, overrides)
    return run_scenario(scenario, scenario.seed, keep_events=True)


def _kinds(verdict: dict, node: str, kind: str) -> list[dict]:
    return [e for e in verdict["_events"] if e["node"] == node and e["kind"] == kind]


def test_pre_vote_keeps_the_brokers_fed():
    verdict = _run()
    assert verdict["violated"] == [], verdict["violations"][:2]
    # the cut voter asked for pre-votes and never stood again after it resigned
    resigned = _kinds(verdict, "c2", "quorum_resigned")[0]["t"]
    assert [e for e in _kinds(verdict, "c2", "quorum_election") if e["t"] > resigned] == []
    assert {e["epoch"] for e in _kinds(verdict, "c2", "quorum_prospective")
            if e["t"] > resigned} <= {1, 3}


def test_without_pre_vote_a_broker_is_stranded():
    assert "broker_metadata_stalled" in _run(raft_pre_vote=False)["violated"]


def test_3x_is_unchanged():
    assert "broker_metadata_stalled" in _run(profile="3.9")["violated"]


def _voter(role="follower", epoch=5, leader=None, pre_vote=True):
    """c1 of a three-voter quorum with `raft_pre_vote` as given, its sends recorded."""
    from dataclasses import replace

    from tests.kafka import build_cluster
    from tests.kafka.test_kraft import KRAFT_UNIT
    cluster, _trace = build_cluster(KRAFT_UNIT)
    c1 = cluster.world.actors["c1"]
    c1.protocol = replace(c1.protocol, raft_pre_vote=pre_vote)
    c1.quorum_epoch, c1.role, c1.leader = epoch, role, leader
    sent = []
    c1.send = lambda dst, kind, body: sent.append((dst, kind, body))
    return c1, sent


def _msg(src, body):
    from types import SimpleNamespace
    return SimpleNamespace(src=src, body=body)


def test_a_pre_vote_changes_nothing_at_the_voter():
    """`handleVoteRequest` with PreVote=true (4.0+): granted by the unattached voter, which
    records no vote and keeps its election timer; refused by a follower that fetched."""
    from sim.kafka.kraft_messages import Vote
    c1, sent = _voter("follower", 5, None)
    deadline = c1.election_deadline_us
    c1.on_vote(_msg("c2", Vote(5, "c2", 5, 0, True)))
    assert sent[-1][2].granted and (c1.voted_for, c1.quorum_epoch) == (None, 5)
    assert c1.election_deadline_us == deadline
    c1, sent = _voter("follower", 5, "c3")
    c1.fetched_from_leader = True
    c1.on_vote(_msg("c2", Vote(5, "c2", 5, 0, True)))
    assert not sent[-1][2].granted and (c1.role, c1.leader) == ("follower", "c3")


def test_a_timed_out_follower_becomes_prospective_at_its_epoch():
    """`transitionToProspective`: pre-votes at its epoch; a majority makes it a candidate of
    the next; a rejection leaves it following the leader it knew. Off: it stands at once."""
    from sim.kafka.kraft_messages import VoteResponse
    c1, sent = _voter("follower", 5, "c3")
    c1._elect()
    assert (c1.role, c1.quorum_epoch) == ("prospective", 5)
    assert {(d, b.epoch, b.pre_vote) for d, _k, b in sent} == {("c2", 5, True), ("c3", 5, True)}
    c1.on_vote_response(_msg("c2", VoteResponse(5, True)))
    assert (c1.role, c1.quorum_epoch, c1.voted_for) == ("candidate", 6, "c1")
    c1, sent = _voter("follower", 5, "c3")
    c1._elect()
    c1.on_vote_response(_msg("c2", VoteResponse(5, False, leader="c3")))
    c1.on_vote_response(_msg("c3", VoteResponse(5, False, leader="c3")))
    assert (c1.role, c1.leader, c1.quorum_epoch) == ("follower", "c3", 5)
    c1, sent = _voter("follower", 5, "c3", pre_vote=False)
    c1._elect()
    assert (c1.role, c1.quorum_epoch) == ("candidate", 6)


def test_a_candidate_whose_election_times_out_is_prospective_at_once():
    """4.0's `pollCandidate`: no backoff after an election timeout, Prospective at once at the
    candidate's epoch (`KafkaRaftClientPreVoteTest.testPreVoteNotSupportedByRemote`); 3.x
    backs off first."""
    for pre_vote, role in ((True, "prospective"), (False, "candidate")):
        c1, sent = _voter("follower", 5, "c3", pre_vote=pre_vote)
        c1._stand()  # a candidate of epoch 6 (with Pre-Vote: its pre-election won)
        assert (c1.role, c1.quorum_epoch) == ("candidate", 6)
        c1._poll_candidate(c1.election_deadline_us)
        assert (c1.role, c1.quorum_epoch) == (role, 6)
        assert (c1.backoff_until_us >= 0) is not pre_vote


def test_a_prospective_that_votes_starts_its_pre_election_afresh():
    """`prospectiveAddVotedState`: a new ProspectiveState whose EpochElection holds only its
    own pre-vote, so a grant gathered before the vote counts no more."""
    from sim.kafka.kraft_messages import Vote, VoteResponse
    c1, sent = _voter("follower", 5, None)
    c1.voters = ["c1", "c2", "c3", "c4", "c5"]
    c1._elect()
    c1.on_vote_response(_msg("c2", VoteResponse(5, True)))
    assert c1.votes == {"c1", "c2"}
    c1.on_vote(_msg("c3", Vote(5, "c3", 0, 0)))
    assert sent[-1][2].granted and (c1.role, c1.voted_for, c1.votes) == ("prospective", "c3",
                                                                          {"c1"})


def test_a_vote_response_naming_a_leader_is_followed():
    """`maybeHandleCommonResponse` -> `maybeTransition` (3.7.0 and 4.0): a higher epoch's
    answer naming a leader makes the voter its follower, not unattached; so does one naming
    its own epoch's leader while it knows none."""
    from sim.kafka.kraft_messages import VoteResponse
    c1, _sent = _voter("follower", 5, "c2")
    c1._elect()
    c1.on_vote_response(_msg("c2", VoteResponse(6, False, 42, leader="c3")))
    assert (c1.role, c1.quorum_epoch, c1.leader) == ("follower", 6, "c3")
    c1, _sent = _voter("follower", 5, None, pre_vote=False)
    c1._elect()
    c1.on_vote_response(_msg("c2", VoteResponse(6, False, leader="c3")))
    assert (c1.role, c1.quorum_epoch, c1.leader) == ("follower", 6, "c3")


def test_a_timed_out_pre_election_without_leader_keeps_the_spent_timer():
    """`transitionToUnattached` from Prospective keeps its remaining election time unless it
    was rejected: after a timeout the voter is prospective again at its next poll."""
    c1, sent = _voter("follower", 5, None)
    c1._elect()
    deadline = c1.election_deadline_us
    c1._poll_prospective(deadline)
    assert c1.quorum_state() == "unattached" and c1.election_deadline_us == deadline
    from sim.kafka.kraft_messages import VoteResponse
    c1, sent = _voter("follower", 5, None)
    c1._elect()
    c1.on_vote_response(_msg("c2", VoteResponse(5, False)))
    c1.on_vote_response(_msg("c3", VoteResponse(5, False)))
    assert c1.quorum_state() == "unattached" and c1.election_deadline_us > c1.now_us


def test_a_rejected_candidate_backs_off_up_to_40_and_waits_its_timeout_from_41():
    """4.0's `handleVoteResponse` backs a rejected candidate off
    (`binaryExponentialElectionBackoffMs`), then it is prospective; 4.1 (KAFKA-18345,
    `raft_candidate_waits_election_timeout`) waits out the election timeout instead."""
    from dataclasses import replace

    from sim.kafka.kraft_messages import VoteResponse
    for waits in (False, True):
        c1, _sent = _voter("follower", 5, "c3")
        c1.protocol = replace(c1.protocol, raft_candidate_waits_election_timeout=waits)
        c1._stand()
        c1.on_vote_response(_msg("c2", VoteResponse(6, False)))
        c1.on_vote_response(_msg("c3", VoteResponse(6, False)))
        assert (c1.backoff_until_us >= 0) is not waits
        c1._poll_candidate(c1.election_deadline_us - 1)  # past any first backoff (<= 100 ms)
        assert (c1.role, c1.quorum_epoch) == ("candidate" if waits else "prospective", 6)
        if waits:
            c1._poll_candidate(c1.election_deadline_us)
            assert (c1.role, c1.quorum_epoch) == ("prospective", 6)
