"""`stop_controller`: a KRaft controller's process stops cleanly (`KafkaRaftClient.shutdown`):
a quorum leader resigns at once with EndQuorumEpoch, its first preferred successor stands
without waiting out an election timeout, and the old leader stops once the new one leads;
in ZooKeeper mode the step does nothing and says so."""

from __future__ import annotations

from pathlib import Path

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from tests.conftest import scenario_path

STOP_US = 6_000_000
TEXT = Path(scenario_path("kraft-controller-clean-stop")).read_text(encoding="utf-8")


def _events(*edits: tuple[str, str]) -> list:
    text = TEXT
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    return run_scenario(parse_scenario(text, "clean-stop.toml"), 1, keep_events=True)["_events"]


def test_the_leader_resigns_and_a_successor_leads_at_once():
    events = _events()
    stopped = next(e["resolved"] for e in events if e["kind"] == "fault" and e["step"] == 0)
    ends = [e for e in events if e["kind"] == "send" and e.get("msg") == "EndQuorumEpoch"
            and e["t"] < 12_000_000]  # (the split at 16 s resigns a leader by check-quorum)
    assert ends and all(e["node"] == stopped and e["t"] == STOP_US for e in ends)
    successor = ends[0]["preferred_successors"][0]
    elected = next(e for e in events if e["kind"] == "quorum_leader" and e["t"] > STOP_US)
    # the first preferred successor stands at once: well inside the 1 s election timeout
    assert elected["node"] == successor and elected["t"] - STOP_US < 200_000
    crash = next(e for e in events if e["kind"] == "crash" and e["node"] == stopped)
    assert elected["t"] < crash["t"] < STOP_US + 5_000_000


def test_a_crash_instead_waits_out_the_election_timeout():
    events = _events(('action = "stop_controller"', 'action = "crash"'))
    elected = next(e for e in events if e["kind"] == "quorum_leader" and e["t"] > STOP_US)
    assert elected["t"] - STOP_US > 500_000


def test_zookeeper_mode_does_nothing_and_says_so():
    events = _events(("controllers = 3", "controllers = 1"), ('profile = "4.1"', 'profile = "3.7"'),
                     ('target = "controller"\n\n[[faults]]\nat_ms = 12000', 'target = "c1"\n\n'
                      '[[faults]]\nat_ms = 12000'))
    outcome = next(e for e in events if e["kind"] == "fault_outcome" and e.get("step") == 0)
    assert "not a KRaft cluster" in outcome["outcome"]
