"""The active KRaft controller's registrations and sessions, through probes of c1: the broker
epoch is the offset of the registration's first record (KIP-966's shutdown changes come
before the RegisterBrokerRecord), unfencing waits for the record's own offset, a registration
of the registered incarnation by release (KAFKA-16757, KAFKA-16952), an expired heartbeat
(KAFKA-15019), and the stale-broker check's timing (`nextCheckTimeNs`)."""

from __future__ import annotations

from tests.probe.helpers import kraft_controller_probe, probe_checks

STEP = '[[probe.steps]]\ndeliver = "{kind}"\nfrom = "{frm}"\nwait_ms = {wait}\nbody = {body}\n' \
       'expect = {expect}\n'
WAIT = '[[probe.steps]]\nwait_ms = {wait}\nexpect = {expect}\n'


def _run(profile: str, state: str, *steps: str, brokers: int = 3, session_ms: int = 0) -> dict:
    head = kraft_controller_probe("ClusterControlManagerTest.probe", brokers, profile)
    if session_ms:
        head = head.replace("controllers = 1\n",
                            f"controllers = 1\nbroker_session_timeout_ms = {session_ms}\n")
    return probe_checks('name = "p"\n' + head + "[probe.state]\n" + state + "".join(steps),
                        by_step=True)


def _model(checks: dict) -> dict:
    return {key: model for key, (_kafka, model) in checks.items()}


ELR_STATE = """records = [
  { type = "RegisterBrokerRecord", broker = 1, incarnation = 1 },
  { type = "RegisterBrokerRecord", broker = 2, incarnation = 1 },
  { type = "RegisterBrokerRecord", broker = 3, incarnation = 1, fenced = true },
  { type = "TopicRecord", name = "foo" },
  { type = "PartitionRecord", tp = "foo-0", replicas = [1, 2, 3], leader = 1, isr = [1, 2, 3] },
]
"""


def test_an_unclean_restart_takes_the_epoch_of_the_first_record_it_writes():
    """4.1 (ELR): b3 restarts uncleanly; `handleBrokerUncleanShutdown`'s PartitionChangeRecord
    (offset 6) comes before the RegisterBrokerRecord (7), and the epoch is 6
    (`offsetControl.nextWriteOffset()` as the registration began). Unfencing needs offset 7."""
    got = _model(_run("4.1", ELR_STATE, STEP.format(
        kind="BrokerRegistration", frm="b3", wait=100, body="{ incarnation = 2 }",
        expect='{ "records" = [], "answer.broker_epoch" = 0, "register_offset:3" = 0 }'),
        STEP.format(kind="BrokerHeartbeat", frm="b3", wait=100,
                    body="{ broker_epoch = 6, metadata_offset = 6 }",
                    expect='{ "fenced:3" = false, "answer.is_caught_up" = false }'),
        STEP.format(kind="BrokerHeartbeat", frm="b3", wait=100,
                    body="{ broker_epoch = 6, metadata_offset = 7 }",
                    expect='{ "fenced:3" = false, "answer.is_caught_up" = false }')))
    assert got["0:records"] == ["PartitionChangeRecord", "RegisterBrokerRecord"]
    assert (got["0:answer.broker_epoch"], got["0:register_offset:3"]) == (6, 7)
    assert (got["1:fenced:3"], got["1:answer.is_caught_up"]) == (True, False)
    assert (got["2:fenced:3"], got["2:answer.is_caught_up"]) == (False, True)


REREGISTER = (STEP.format(kind="BrokerHeartbeat", frm="b1", wait=100,
                          body="{ broker_epoch = 1, metadata_offset = 100 }", expect="{}"),
              STEP.format(kind="BrokerRegistration", frm="b1", wait=100, body="{ incarnation = 1 }",
                          expect='{ "answer.broker_epoch" = 0, "fenced:1" = false }'))


def test_the_same_incarnation_registering_again_by_release():
    answers = {}
    for profile in ("3.7", "3.8", "3.9", "4.1"):
        got = _model(_run(profile, ELR_STATE, *REREGISTER))
        answers[profile] = (got["1:answer.broker_epoch"], got["1:fenced:1"])
    assert answers == {"3.7": (6, True), "3.8": (6, False), "3.9": (1, False), "4.1": (1, False)}


def test_an_expired_heartbeat_renews_the_session_from_3_6_only():
    state = 'records = [{ type = "RegisterBrokerRecord", broker = 1 }]\n'
    steps = (WAIT.format(wait=600, expect="{}"),
             STEP.format(kind="BrokerHeartbeat", frm="b1", wait=500,
                         body="{ broker_epoch = 1, metadata_offset = 7, expired = true }",
                         expect='{ "error" = "NONE", "fenced:1" = false, "records" = [] }'))
    for profile, fenced in (("3.5", True), ("3.6", False)):
        got = _model(_run(profile, state, *steps, brokers=1, session_ms=1000))
        assert got["1:error"] == "REQUEST_TIMED_OUT"
        # the expired heartbeat writes nothing; before 3.6 the session runs out at 1 s
        assert got["1:records"] == (["BrokerRegistrationChangeRecord"] if fenced else [])
        assert got["1:fenced:1"] is fenced, profile


def test_a_silent_broker_is_fenced_as_its_session_ends_not_at_the_next_tick():
    """Session 1 s; b1 last heard from at 1 ms (its heartbeat arrives 1 ms after its step
    begins): unfenced at 1001 ms, fenced at 1001 ms and 1 us (the 50 ms raft tick that used to
    run the check would have left it until 1050 ms)."""
    state = 'records = [{ type = "RegisterBrokerRecord", broker = 1 }]\n'
    got = _model(_run("3.7", state, STEP.format(
        kind="BrokerHeartbeat", frm="b1", wait=1000, body="{ broker_epoch = 1 }",
        expect='{ "fenced:1" = false }'), WAIT.format(wait=1, expect='{ "fenced:1" = false }'),
        WAIT.format(wait=1, expect='{ "fenced:1" = false }'), brokers=1, session_ms=1000))
    assert (got["0:fenced:1"], got["1:fenced:1"], got["2:fenced:1"]) == (False, False, True)


def test_the_timing_check_fails_on_a_check_left_to_the_next_tick(monkeypatch):
    """The planted bug: the check waits for the next 50 ms tick, as the model's did."""
    from sim.kafka.rules import kraft_sessions

    def at_next_tick(contacts, session_us):
        at = kraft_sessions_next(contacts, session_us)
        return None if at is None else -(-at // 50_000) * 50_000

    kraft_sessions_next = kraft_sessions.next_check_us
    monkeypatch.setattr(kraft_sessions, "next_check_us", at_next_tick)
    state = 'records = [{ type = "RegisterBrokerRecord", broker = 1 }]\n'
    got = _model(_run("3.7", state, STEP.format(
        kind="BrokerHeartbeat", frm="b1", wait=1000, body="{ broker_epoch = 1 }",
        expect='{ "fenced:1" = false }'), WAIT.format(wait=2, expect='{ "fenced:1" = false }'),
        brokers=1, session_ms=1000))
    assert got["1:fenced:1"] is False  # Kafka's is True: the case above would disagree
