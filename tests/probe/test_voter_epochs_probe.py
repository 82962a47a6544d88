"""A KRaft voter under test takes BeginQuorumEpoch and EndQuorumEpoch and their answers, a
malformed Fetch, the client's resign(epoch) and shutdown(timeoutMs), and starts resigned."""

from __future__ import annotations

from tests.probe.test_voter_probe import NOTHING, _model, _text


def test_a_voter_starts_resigned_and_sends_end_quorum_epoch_naming_no_successor():
    model = _model(_text(state='quorum_state = "resigned"\nepoch = 4\nlog = [[4, 2]]',
                         expect='quorum_state = 0, quorum_leader = 0, log_end_offset = 0, '
                                'sent_to = 0, "end_epoch_sent.preferred_successors" = 0',
                         **NOTHING))
    assert model == {"quorum_state": "resigned", "quorum_leader": "c1", "log_end_offset": 2,
                     "sent_to": ["EndQuorumEpoch>c2", "EndQuorumEpoch>c3"],
                     "end_epoch_sent.preferred_successors": []}


def test_an_end_quorum_epoch_and_its_answer_are_delivered():
    model = _model(_text(state='quorum_state = "follower"\nleader = "c2"\nepoch = 2',
                         deliver="EndQuorumEpoch", body='epoch = 2, preferred_successors = '
                         '["c1"]', expect='"answer.error" = 0, "answer.leader" = 0'))
    assert model == {"answer.error": "NONE", "answer.leader": "c2"}
    model = _model(_text(state='quorum_state = "resigned"\nepoch = 2', wait_ms=10,
                         deliver="EndQuorumEpochResponse", body="epoch = 2, leader = \"c1\"",
                         expect='"sent_count:EndQuorumEpoch" = 0'))
    assert model == {"sent_count:EndQuorumEpoch": 2}  # the first ones, before the answer


def test_a_begin_quorum_epoch_is_answered():
    model = _model(_text(deliver="BeginQuorumEpoch", body='epoch = 3, leader = "none"',
                         expect='"answer.error" = 0, quorum_state = 0'))
    assert model == {"answer.error": "INVALID_REQUEST", "quorum_state": "unattached"}


def test_a_fetch_with_a_negative_max_wait_is_refused():
    model = _model(_text(state='quorum_state = "leader"', deliver="QuorumFetch",
                         body="epoch = 1, fetch_offset = 0, last_fetched_epoch = 0, "
                              "max_wait_ms = -1", expect='"answer.error" = 0'))
    assert model == {"answer.error": "INVALID_REQUEST"}


def test_the_clients_resign_and_shutdown_act_on_the_voter():
    model = _model(_text(state='quorum_state = "leader"', deliver="Resign", src="operator",
                         body="epoch = 1", expect='quorum_state = 0, "sent_count:EndQuorumEpoch" '
                         '= 0'))
    assert model == {"quorum_state": "resigned", "sent_count:EndQuorumEpoch": 2}
    model = _model(_text(state='quorum_state = "follower"\nleader = "c2"',
                         deliver="RaftShutdown", src="", body="", expect="alive = 0"))
    assert model == {"alive": False}
