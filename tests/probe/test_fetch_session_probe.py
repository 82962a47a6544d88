"""A probe's Fetch in a fetch session (KIP-227): its session fields, what it can check of the
node's sessions, and the leader's handling of a full Fetch that names a session."""

from tests.probe.helpers import assert_refused, broker_probe, probe_checks

STATE = """
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1]
log = [{ leader_epoch = 0, record_count = 10 }]
"""


def fetch(session_epoch: int, extra: str = "", parts: str = '{ tp = "t-0", fetch_offset = 10 }',
          expect: str = "") -> str:
    return (f'\n[[probe.steps]]\ndeliver = "Fetch"\nfrom = "k1"\nbody = {{ replica_id = -1, '
            f'session_epoch = {session_epoch}{extra}, partitions = [{parts}] }}\n'
            f'expect = {{ {expect} }}\n')


def session_probe(*steps: str, profile: str = "3.7") -> str:
    return broker_probe("FetchSessionTest.probe", "b1", 1, profile) + STATE + "".join(steps)


def test_a_full_fetch_at_final_epoch_closes_the_session_it_names():
    """`FetchManager.newContext` removes any session a full request names, FINAL_EPOCH's
    too (it then opens none); the model's leader read such a Fetch as session-less and kept
    the session."""
    checks = probe_checks(session_probe(
        fetch(0, expect="session_id = 1, session_count = 1"),
        fetch(-1, ", session_id = 1", expect="session_id = 0, session_count = 0"),
        fetch(1, ", session_id = 1", parts="", expect='error = "FETCH_SESSION_ID_NOT_FOUND"')),
        by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks
    assert checks["1:session_count"] == (0, 0)


def test_an_incremental_fetch_names_the_last_session_its_sender_was_answered_in():
    """Without `session_id`, an incremental Fetch names the last session the node's answers
    to the sender carried, an error answer (which carries none) notwithstanding."""
    checks = probe_checks(session_probe(
        fetch(0, expect="session_id = 1"),
        fetch(7, parts="", expect='error = "INVALID_FETCH_SESSION_EPOCH", session_id = 0'),
        fetch(1, parts="", expect='error = "NONE", session_id = 1, answer_partitions = []'),
        fetch(2, ', forgotten = ["t-0"]', parts="",
              expect="session_id = 0, session_count = 0, session_partitions = []")),
        by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_the_session_caches_each_partition_s_request():
    checks = probe_checks(session_probe(fetch(
        0, parts='{ tp = "t-0", fetch_offset = 10, current_leader_epoch = 0 }',
        expect='"session.fetch_offset:t-0" = 10, "session.current_leader_epoch:t-0" = 0, '
               '"session.last_fetched_epoch:t-0" = -1, session_partitions = ["t-0"]')))
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_profile_without_sessions_refuses_session_fields():
    assert_refused(session_probe(fetch(0), profile="1.0"), "session_epoch")
    assert_refused(session_probe(fetch(-1, ', forgotten = ["t-0"]'), profile="1.0"), "forgotten")


def test_session_checks_name_an_unknown_field_as_such():
    assert_refused(session_probe(fetch(0, expect='"session.high_watermark:t-0" = 1')),
                   "session.high_watermark")


DEPRIORITIZE = "scenarios/conformance/fetch-session-deprioritizes-partitions-with-records-3.7.toml"


def test_an_incremental_answer_moves_what_it_carried_to_the_end_as_the_release_does():
    """KAFKA-12330 (3.0): only a partition carried with records moves to the end of its
    session's order; from 1.1 to 2.8 every partition an incremental answer carries did. The
    model kept every session in the order its partitions joined it."""
    from tests.conftest import ROOT
    with open(f"{ROOT}/{DEPRIORITIZE}") as f:
        text = f.read()
    key = "4:session_partitions"
    assert probe_checks(text, by_step=True)[key][1] == ["foo-1", "zar-3", "bar-2"]
    older = text.replace('profile = "3.7"', 'profile = "2.8"')
    assert probe_checks(older, by_step=True)[key][1] == ["zar-3", "foo-1", "bar-2"]
