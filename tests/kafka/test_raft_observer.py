"""A Raft node outside the voter set (`sim.kafka.quorum_observer`, `KafkaRaftClient`'s observer
paths at 3.7.0 and 3.9.0-rc3) and the voter-set check of `validateVoterOnlyRequest` (switch
`raft_observer_votes`, KAFKA-16526, 3.8)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from sim.kafka import errors as E
from sim.kafka.kraft_messages import QuorumFetchResponse, Vote
from sim.kafka.profiles import PROFILES
from sim.kafka.rules.raft_requests import voter_set_error
from tests.probe.helpers import probe_checks


def _observer(profile: str = "3.7", leader: str | None = None, epoch: int = 5):
    """c1 of a cluster of three controllers, made an observer of the voters {c2, c3}."""
    from tests.kafka import build_cluster
    from tests.kafka.test_kraft import KRAFT_UNIT
    cluster, _trace = build_cluster(KRAFT_UNIT)
    c1 = cluster.world.actors["c1"]
    c1.protocol = replace(PROFILES[profile])
    c1.voters = ["c2", "c3"]
    c1.quorum_epoch, c1.role, c1.leader = epoch, "follower", leader
    sent = []
    c1.send = lambda dst, kind, body: sent.append((dst, kind, body))
    return c1, sent


def _msg(src, body):
    return SimpleNamespace(src=src, body=body)


def test_the_voter_set_check_up_to_3_7_only():
    """`validateVoterOnlyRequest`'s INCONSISTENT_VOTER_SET: to or from a non-voter up to 3.7;
    gone from 3.8."""
    old, new = PROFILES["3.7"], PROFILES["3.8"]
    assert voter_set_error(old, True, True) == E.NONE
    assert voter_set_error(old, False, True) == E.INCONSISTENT_VOTER_SET
    assert voter_set_error(old, True, False) == E.INCONSISTENT_VOTER_SET
    assert voter_set_error(new, False, True) == voter_set_error(new, True, False) == E.NONE


def test_an_observer_never_stands_and_asks_the_voters_in_turn():
    """`pollUnattachedAsObserver`: long past any election timeout it is still unattached in its
    epoch, has sent no Vote, and its Fetches, none answered, went to c2, c3, c2 in turn."""
    c1, sent = _observer()
    patience = c1._fetch_patience_us()
    for i in range(3):  # each Fetch (sent at the clock's 0) timed out at the next poll
        c1._poll_observer(i * (patience + 1))
    assert (c1.quorum_state(), c1.quorum_epoch) == ("unattached", 5)
    assert [(d, k) for d, k, _b in sent] == [("c2", "QuorumFetch"), ("c3", "QuorumFetch"),
                                            ("c2", "QuorumFetch")]
    assert not any(b.voter for _d, _k, b in sent)
    c1.raft_tick()
    assert c1.role == "follower" and not [k for _d, k, _b in sent if k == "Vote"]


def test_an_observer_follows_the_leader_a_fetch_answer_names():
    """`maybeHandleCommonResponse`: FENCED_LEADER_EPOCH naming epoch 6 and leader c3 makes it
    c3's follower, fetching from c3 at once; BROKER_NOT_AVAILABLE from c3 sends the next Fetch
    to the other voter at once."""
    c1, sent = _observer()
    c1._fetch("c2")
    c1.on_quorum_fetch_response(_msg("c2", QuorumFetchResponse(
        6, "c3", E.FENCED_LEADER_EPOCH, (), -1, None, 0)))
    assert (c1.quorum_state(), c1.quorum_epoch, c1.leader) == ("follower", 6, "c3")
    assert sent[-1][0] == "c3" and sent[-1][2].epoch == 6
    c1.on_quorum_fetch_response(_msg("c3", QuorumFetchResponse(
        6, None, E.BROKER_NOT_AVAILABLE, (), -1, None, 0)))
    assert sent[-1][0] == "c2" and c1.leader == "c3"


def test_an_observer_votes_from_3_8():
    """An unattached observer asked for its vote: INCONSISTENT_VOTER_SET at 3.7 (no epoch
    taken); granted at 3.8, having voted in the candidate's epoch."""
    for profile, error, state in (("3.7", E.INCONSISTENT_VOTER_SET, (5, None)),
                                  ("3.8", E.NONE, (6, "c2"))):
        c1, sent = _observer(profile)
        c1.on_vote(_msg("c2", Vote(6, "c2", 5, 1, False)))
        assert sent[-1][2].error == error and (c1.quorum_epoch, c1.voted_for) == state


def test_an_observer_shutdown_completes_at_once():
    """`maybeCompleteShutdown`: an observer stops at its next poll, leader known or not; a
    voter that knows no leader waits."""
    c1, _sent = _observer()
    stopped = []
    c1.world = SimpleNamespace(crash=stopped.append)
    c1.begin_raft_shutdown(5000)
    assert stopped == ["c1"]
    c1.voters = ["c1", "c2", "c3"]
    stopped.clear()
    c1.begin_raft_shutdown(5000)
    assert stopped == []


LEADER = """name = "probe"
[protocol]
profile = "3.7"
[cluster]
mode = "kraft"
brokers = 1
controllers = 3
[probe]
kafka_test = "unit"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
voters = ["c1", "c2"]
quorum_state = "leader"
epoch = 5
[[probe.steps]]
deliver = "QuorumFetch"
from = "c3"
wait_ms = 10
body = { epoch = 5, fetch_offset = 1, last_fetched_epoch = 5, max_wait_ms = 0 }
expect = { "answer.error" = "NONE", high_watermark = "none" }
[[probe.steps]]
deliver = "QuorumFetch"
from = "c2"
wait_ms = 10
body = { epoch = 5, fetch_offset = 1, last_fetched_epoch = 5, max_wait_ms = 0 }
expect = { "answer.error" = "NONE", high_watermark = 1 }
"""


def test_a_leader_counts_only_the_voters_fetches():
    """`LeaderState.updateReplicaState`: an observer's Fetch (c3, outside the voter set) is
    answered but moves no high watermark; the voter c2's at the same offset commits the
    leader's LeaderChange."""
    checks = probe_checks(LEADER, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_replica_is_caught_up_as_of_the_fetch_that_reached_the_leaders_end():
    """`ReplicaState.updateFollowerState`: caught up now when it fetches from the leader's end;
    when behind it, caught up as of its previous Fetch if it reached the leader's end as that
    Fetch found it; never caught up before that."""
    from sim.kafka.rules.raft_requests import replica_fetch_state
    state = replica_fetch_state((-1, -1, -1, -1), 0, 3, 100)
    assert state == (0, 100, -1, 3)  # an observer far behind: never caught up
    state = replica_fetch_state(state, 3, 5, 200)  # reached 3, the end its last Fetch found
    assert state == (3, 200, 100, 5)
    assert replica_fetch_state(state, 5, 5, 300) == (5, 300, 300, 5)
    assert replica_fetch_state(state, 2, 5, 150)[1] == 200  # the fetch time never moves back
