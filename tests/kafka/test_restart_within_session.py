"""A crashed ZooKeeper-mode broker restarted while ZooKeeper still holds its previous session
cannot register (NODEEXISTS on /brokers/ids/<id>) and shuts down at once, as Kafka's
`KafkaServer.startup` does; a restart after the session expired, or after a clean shutdown
(which closes the session), registers. A short session is renewed often enough not to expire
between two renewals."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

BASE = """
name = "restart-within-session"
expect = "pass"
seed = 1
[run]
duration_ms = 8000
settle_ms = 2000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
{mode}broker_session_timeout_ms = {session_ms}
[[topics]]
name = "t"
replication_factor = 3
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 100
{faults}
"""


def _fault(at_ms: int, action: str, target: str = "b2") -> str:
    return f'[[faults]]\nat_ms = {at_ms}\naction = "{action}"\ntarget = "{target}"\n'


def _events(faults: str, profile: str = "3.7", session_ms: int = 2000,
            kraft: bool = False) -> list[dict]:
    text = BASE.format(profile=profile, session_ms=session_ms, faults=faults,
                       mode='mode = "kraft"\n' if kraft else "")
    verdict = run_scenario(parse_scenario(text, "r.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def _of(events: list[dict], kind: str, node: str = "b2") -> list[dict]:
    return [e for e in events if e["kind"] == kind and e["node"] == node]


def _isr_writes(events: list[dict]) -> list[tuple]:
    return [(e["t"], e["isr"]) for e in events if e["kind"] == "partition_state"
            and e["node"].startswith("c")]


def test_a_restart_within_the_session_fails_and_the_broker_stays_down():
    """b2 crashes at 1.05 s, just after a renewal at 1 s; its session lives until 3 s, so the
    restart at 2 s fails and b2 shuts down again; the controller learns of the crash when the
    session expires, and only the restart at 4 s brings b2 back into the ISR."""
    events = _events(_fault(1050, "crash") + _fault(2000, "restart") + _fault(4000, "restart"))
    [failed] = _of(events, "broker_start_failed")
    assert (failed["t"], failed["error"]) == (2_000_000, "NODEEXISTS")
    assert failed["expires_in_us"] == 1_000_000  # renewed at 1 s, a 2 s session
    assert [e["t"] for e in _of(events, "crash")] == [1_050_000, 2_000_000]
    outcomes = [e["outcome"] for e in events if e["kind"] == "fault_outcome"]
    assert outcomes == ["failed to start: NODEEXISTS, its old ZooKeeper session holds its "
                        "registration"]
    # b2 is not written out of the ISR before its session ends, nor back before 4 s
    writes = _isr_writes(events)
    shrink = next(t for t, isr in writes if 2 not in isr)
    assert 3_000_000 < shrink <= 3_100_000
    assert all(2 not in isr for t, isr in writes if shrink <= t < 4_000_000)
    assert any(2 in isr for t, isr in writes if t > 4_000_000)


def test_a_restart_after_a_clean_shutdown_registers_at_once():
    """A controlled shutdown closes the session (`zkClient.close()`), so the znode is gone and
    a restart 0.6 s later registers, well within what the session's timeout would be."""
    events = _events(_fault(1000, "controlled_shutdown") + _fault(1600, "restart"),
                     session_ms=6000)
    assert _of(events, "broker_start_failed") == []
    assert [e["t"] for e in _of(events, "restart")] == [1_600_000]
    assert any(2 in isr for t, isr in _isr_writes(events) if t > 1_600_000)


def test_a_kraft_broker_is_not_refused_by_zookeeper():
    """KRaft has no znode: a broker restarted within its session is refused
    DUPLICATE_BROKER_REGISTRATION and tries again, still running."""
    events = _events(_fault(1050, "crash") + _fault(2000, "restart"), kraft=True)
    assert _of(events, "broker_start_failed") == []
    assert [e["t"] for e in _of(events, "crash")] == [1_050_000]


def test_a_short_session_is_renewed_before_it_expires():
    """With a 300 ms session the broker is heard from every 100 ms (a third of it, as
    ZooKeeper's client pings), so no session of a healthy broker expires."""
    events = _events("", session_ms=300)
    assert [e for e in events if e["kind"] == "broker_registered"] == []
