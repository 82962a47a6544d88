"""A KRaft voter under test: one Raft voter of a quorum of 2+ controllers, set unattached,
voted, follower, candidate or leader; the quorum's Vote, BeginQuorumEpoch and Fetch delivered
by hand, its answers, quorum state and log judged; bad probes refused when the scenario
loads."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks

VOTER = """
[protocol]
profile = "3.7"
[cluster]
mode = "kraft"
brokers = 1
controllers = {controllers}
[probe]
kafka_test = "KafkaRaftClientTest.testHandleValidVoteRequestAsFollower"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
{state}
[[probe.steps]]
deliver = "{deliver}"
from = "{src}"
wait_ms = {wait_ms}
body = {{ {body} }}
expect = {{ {expect} }}
"""
# a message every voter ignores: a VoteResponse of an epoch older than any state's
NOTHING = dict(deliver="VoteResponse", body="epoch = 0, granted = false")


def _text(state='quorum_state = "unattached"', deliver="Vote", src="c2", wait_ms=100,
          body="epoch = 1, last_epoch = 0, last_offset = 0", expect="", controllers=3):
    return VOTER.format(controllers=controllers, state=state, deliver=deliver, src=src,
                        wait_ms=wait_ms, body=body, expect=expect)


def _model(text: str, by_step: bool = False) -> dict:
    """check -> the model's value, for a probe whose expectations are placeholders."""
    return {key: model for key, (_kafka, model) in probe_checks(text, by_step).items()}


ALL_STATE = ('quorum_state = 0, quorum_epoch = 0, quorum_leader = 0, voted_for = 0, '
             'log_end_offset = 0, log_epochs = 0, high_watermark = 0')


@pytest.mark.parametrize("state,want", [
    ('quorum_state = "unattached"', ["unattached", 0, "none", "none", 0, [], "none"]),  # no HW given: none known
    ('quorum_state = "unattached"\nepoch = 4\nlog = [[2, 1], [4, 2]]\nhigh_watermark = 1',
     ["unattached", 4, "none", "none", 3, [[2, 1], [4, 2]], 1]),
    ('quorum_state = "voted"\nvoted_for = "c3"\nepoch = 3',
     ["voted", 3, "none", "c3", 0, [], "none"]),
    ('quorum_state = "follower"\nleader = "c2"\nlog = [[1, 2]]',
     ["follower", 1, "c2", "none", 2, [[1, 2]], "none"]),
    ('quorum_state = "candidate"\nepoch = 2\nlog = [[1, 1]]',
     ["candidate", 2, "none", "c1", 1, [[1, 1]], "none"]),
    # a new leader: its LeaderChange after the log, no high watermark until it commits
    ('quorum_state = "leader"\nepoch = 3\nlog = [[1, 2]]\nhigh_watermark = 2',
     ["leader", 3, "c1", "c1", 3, [[1, 2], [3, 1]], "none"]),
])
def test_each_quorum_state_builds_as_it_says(state, want):
    model = _model(_text(state=state, expect=ALL_STATE, **NOTHING))
    assert [model[k] for k in ("quorum_state", "quorum_epoch", "quorum_leader", "voted_for",
                               "log_end_offset", "log_epochs", "high_watermark")] == want


def test_a_candidate_sent_its_votes_before_the_first_step():
    model = _model(_text(state='quorum_state = "candidate"\nepoch = 2',
                         expect='sent_to = 0, "sent_count:Vote" = 0', **NOTHING))
    assert model == {"sent_to": ["Vote>c2", "Vote>c3"], "sent_count:Vote": 2}


def test_a_leader_sent_nothing_a_step_sees():
    model = _model(_text(state='quorum_state = "leader"', expect="sent = 0", **NOTHING))
    assert model == {"sent": []}


def test_a_follower_fetches_from_its_leader():
    model = _model(_text(state='quorum_state = "follower"\nleader = "c3"\nepoch = 2',
                         expect='sent_to = 0', **NOTHING))
    assert model == {"sent_to": ["QuorumFetch>c3"]}


def test_an_unattached_voter_grants_an_up_to_date_candidate():
    checks = probe_checks(_text(expect='"answer.granted" = true, "answer.epoch" = 1, '
                                       '"answer.error" = "NONE", quorum_state = "voted", '
                                       'voted_for = "c2", quorum_epoch = 1'))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_candidate_behind_the_voters_log_is_refused():
    model = _model(_text(state="log = [[1, 2]]\nepoch = 1",
                         body="epoch = 2, last_epoch = 1, last_offset = 1",
                         expect='"answer.granted" = 0, quorum_state = 0, quorum_epoch = 0'))
    assert model == {"answer.granted": False, "quorum_state": "unattached", "quorum_epoch": 2}


def test_a_wrong_expectation_is_a_disagreement():
    checks = probe_checks(_text(expect='"answer.granted" = false, quorum_state = "leader"'))
    assert checks == {"answer.granted": (False, True), "quorum_state": ("leader", "voted")}


def test_a_granted_vote_response_makes_a_candidate_leader():
    model = _model(_text(state='quorum_state = "candidate"\nepoch = 2\nlog = [[1, 1]]',
                         deliver="VoteResponse", body="epoch = 2, granted = true",
                         expect='quorum_state = 0, quorum_leader = 0, sent_to = 0, '
                                'log_epochs = 0, answered = 0'))
    assert model == {"quorum_state": "leader", "quorum_leader": "c1", "answered": False,
                     "sent_to": ["Vote>c2", "Vote>c3", "BeginQuorumEpoch>c2",
                                 "BeginQuorumEpoch>c3"], "log_epochs": [[1, 1], [2, 1]]}


def test_begin_quorum_epoch_makes_a_voter_follow_the_sender():
    model = _model(_text(state='quorum_state = "voted"\nvoted_for = "c2"\nepoch = 2',
                         deliver="BeginQuorumEpoch", body="epoch = 3",
                         expect="quorum_state = 0, quorum_leader = 0, quorum_epoch = 0"))
    assert model == {"quorum_state": "follower", "quorum_leader": "c2", "quorum_epoch": 3}


def test_begin_quorum_epoch_may_name_another_leader():
    model = _model(_text(deliver="BeginQuorumEpoch", body='epoch = 3, leader = "c3"',
                         expect="quorum_leader = 0"))
    assert model == {"quorum_leader": "c3"}


def test_a_leader_answers_a_voters_fetch_and_counts_it_for_its_high_watermark():
    model = _model(_text(state='quorum_state = "leader"\nepoch = 2\nlog = [[1, 2]]',
                         deliver="QuorumFetch", body="epoch = 2, fetch_offset = 1, "
                         "last_fetched_epoch = 1",
                         expect='"answer.records" = 0, "answer.leader" = 0, "answer.epoch" = 0, '
                                '"answer.error" = 0, "answer.high_watermark" = 0, '
                                '"answer.diverging_epoch" = 0, high_watermark = 0',
                         controllers=2))
    # c2 holds offset 0 only: no record of epoch 2 is on a majority yet
    assert model == {"answer.records": [[1, 1], [2, 1]], "answer.leader": "c1",
                     "answer.epoch": 2, "answer.error": "NONE", "answer.high_watermark": -1,
                     "answer.diverging_epoch": "none", "high_watermark": "none"}


def test_a_fetch_past_the_epoch_start_commits_it():
    model = _model(_text(state='quorum_state = "leader"\nepoch = 2\nlog = [[1, 2]]',
                         deliver="QuorumFetch", wait_ms=600,
                         body="epoch = 2, fetch_offset = 3, last_fetched_epoch = 2",
                         expect='high_watermark = 0, "answer.high_watermark" = 0',
                         controllers=2))
    assert model == {"high_watermark": 3, "answer.high_watermark": 3}


def test_an_observers_fetch_does_not_count_for_the_high_watermark():
    model = _model(_text(state='quorum_state = "leader"\nepoch = 2', deliver="QuorumFetch",
                         src="b1", wait_ms=600, body="epoch = 2, fetch_offset = 1, "
                         "last_fetched_epoch = 2", expect='high_watermark = 0, answered = 0',
                         controllers=2))
    assert model == {"high_watermark": "none", "answered": True}


def test_a_fetch_response_extends_a_followers_log():
    model = _model(_text(state='quorum_state = "follower"\nleader = "c2"\nepoch = 3\n'
                               'log = [[1, 1]]', deliver="QuorumFetchResponse",
                         body="epoch = 3, records = [[1, 1], [3, 2]], high_watermark = 2",
                         expect="log_epochs = 0, high_watermark = 0"))
    assert model == {"log_epochs": [[1, 2], [3, 2]], "high_watermark": 2}


def test_a_diverging_fetch_response_truncates_a_follower():
    model = _model(_text(state='quorum_state = "follower"\nleader = "c2"\nepoch = 5\n'
                               'log = [[3, 3]]', deliver="QuorumFetchResponse",
                         body="epoch = 5, diverging_epoch = [3, 2]",
                         expect="log_end_offset = 0"))
    assert model == {"log_end_offset": 2}


@pytest.mark.parametrize("state,key", [
    ('quorum_state = "folower"', "probe.state.quorum_state"),
    ('quorum_state = "follower"', "probe.state.leader"),
    ('quorum_state = "follower"\nleader = "c9"', "probe.state.leader"),
    ('quorum_state = "follower"\nleader = "c1"', "probe.state.leader"),
    ('quorum_state = "voted"', "probe.state.voted_for"),
    ('quorum_state = "unattached"\nleader = "c2"', "probe.state.leader"),
    ('quorum_state = "candidate"\nepoch = 0', "probe.state.epoch"),
    ('epoch = -2', "probe.state.epoch"),
    ('epoch = 3\nlog = [[3, 1], [2, 1]]', "probe.state.log[1]"),
    ('epoch = 2\nlog = [[3, 1]]', "probe.state.log[0]"),
    ('epoch = 2\nlog = [[1, 0]]', "probe.state.log[0]"),
    ('quorum_state = "leader"\nepoch = 2\nlog = [[2, 1]]', "probe.state.log[0]"),
    ('epoch = 2\nlog = [[1, 2]]\nhigh_watermark = 3', "probe.state.high_watermark"),
    ('records = []', "probe.state.records"),
])
def test_impossible_voter_states_are_one_line_errors_naming_the_key(state, key):
    assert_refused(_text(state=state, **NOTHING), key)


@pytest.mark.parametrize("change,key", [
    (dict(src="b1"), "probe.steps[0].from"),  # a Vote comes from a voter
    (dict(src="c9"), "probe.steps[0].from"),
    (dict(deliver="QuorumFetch", src="c9",
          body="epoch = 1, fetch_offset = 0, last_fetched_epoch = 0"), "probe.steps[0].from"),
    (dict(deliver="QuorumFetch",
          body="epoch = 1, fetch_offset = 0, last_fetched_epoch = 0, high_watermark = 0"),
     "probe.steps[0].body"),  # Fetch v18 (4.1) carries it, not 3.7's
    (dict(deliver="EndQuorumEpoch", body='epoch = 1, preferred_successors = ["c2", "c8"]'),
     "probe.steps[0].body.preferred_successors[1]"),
    (dict(deliver="Resign", src="c2", body="epoch = 1"), "probe.steps[0].from"),
    (dict(deliver="RaftShutdown", src="operator", body="timeout = 5"),
     "probe.steps[0].body.timeout"),
    (dict(deliver="BeginQuorumEpoch", body='epoch = 1, leader = "c7"'),
     "probe.steps[0].body.leader"),
    (dict(deliver="QuorumFetchResponse", body="epoch = 3, records = [[2, 1], [1, 1]]"),
     "probe.steps[0].body.records[1]"),
    (dict(deliver="QuorumFetchResponse", body="epoch = 1, records = [[2, 1]]"),
     "probe.steps[0].body.records[0]"),
    (dict(body="epoch = 1"), "probe.steps[0].body.last_epoch"),
    (dict(body="epoch = 1, last_epoch = 0, last_offset = 0, pre_vote = true"),
     "probe.steps[0].body"),  # Vote's PreVote (KIP-996) comes with 4.0, not 3.7
    (dict(deliver="VoteResponse", body='epoch = 1, granted = false, leader = "c7"'),
     "probe.steps[0].body.leader"),
    (dict(deliver="LeaderAndIsr"), "probe.steps[0].deliver"),
    (dict(deliver="MetadataFetchResponse"), "probe.steps[0].deliver"),
    (dict(expect='"isr:t-0" = [1]'), "probe.steps[0].expect.isr:t-0"),
    (dict(expect='"answer.granted:t-0" = true'), "probe.steps[0].expect.answer.granted:t-0"),
])
def test_bad_voter_steps_are_one_line_errors_naming_the_key(change, key):
    assert_refused(_text(**change), key)


def test_what_the_voter_asked_is_read_from_its_last_request():
    model = _model(_text(state='quorum_state = "follower"\nleader = "c2"\nepoch = 4\n'
                               'log = [[2, 3]]', controllers=2, expect='"fetch_sent.epoch" = 0, '
                         '"fetch_sent.fetch_offset" = 0, "fetch_sent.last_fetched_epoch" = 0, '
                         '"vote_sent.epoch" = 0', **NOTHING))
    assert model == {"fetch_sent.epoch": 4, "fetch_sent.fetch_offset": 3,
                     "fetch_sent.last_fetched_epoch": 2, "vote_sent.epoch": "none"}
    model = _model(_text(state='quorum_state = "candidate"\nepoch = 3\nlog = [[1, 2]]',
                         expect='"vote_sent.epoch" = 0, "vote_sent.last_epoch" = 0, '
                                '"vote_sent.last_offset" = 0', **NOTHING))
    assert model == {"vote_sent.epoch": 3, "vote_sent.last_epoch": 1, "vote_sent.last_offset": 2}


def test_a_pre_vote_and_its_answers_on_40():
    """4.0 (KIP-996): a pre-vote reaches the voter, which answers without voting; a
    prospective's pre-votes are read as such, and an answer naming a leader is followed."""
    text = _text(controllers=2, body="epoch = 1, last_epoch = 1, last_offset = 0, pre_vote = true",
                 expect='"answer.granted" = 0, voted_for = 0, quorum_state = 0')
    model = _model(text.replace('profile = "3.7"', 'profile = "4.0"'))
    assert model == {"answer.granted": True, "voted_for": "none", "quorum_state": "unattached"}
    text = _text(state='quorum_state = "unattached"\nepoch = 2', controllers=3,
                 deliver="VoteResponse", body='epoch = 2, granted = false, leader = "c3"',
                 expect='quorum_state = 0, quorum_leader = 0, "vote_sent.pre_vote" = 0')
    model = _model(text.replace('profile = "3.7"', 'profile = "4.0"'))
    # an answer (unasked) naming its epoch's leader: it follows c3, asking nothing yet
    assert model == {"quorum_state": "follower", "quorum_leader": "c3",
                     "vote_sent.pre_vote": "none"}
