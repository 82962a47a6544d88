"""The same invariants judge a run online and its stored trace offline, identically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from epochsim.runner import header_for, run_scenario, schedule_for
from invariants.registry import Monitor, check_events
from scenarios.schema import load_scenario
from sim.core.trace import digest_of_lines, stored_lines

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize("name, seed", [
    ("kip359-stale-leader-legacy", 1),       # a safety violation, found while running
    ("kafka13972-stray-replica-legacy", 1),  # a liveness violation, found at the end
    ("kip570-stop-replica-reorder-fixed", 1),  # all invariants hold
])
def test_offline_check_of_the_stored_trace_equals_the_online_verdict(name, seed, tmp_path):
    verdict = run_scenario(load_scenario(str(SCENARIOS / f"{name}.toml")), seed, str(tmp_path))
    header, lines = stored_lines(os.path.join(tmp_path, "trace.jsonl"))
    notes: dict = {}
    violations, metrics = check_events(header, [json.loads(line) for line in lines], notes=notes)

    assert [v.to_json() for v in violations] == verdict["violations"]
    assert metrics == verdict["metrics"]
    assert notes == verdict["liveness"]
    assert digest_of_lines(header, lines) == verdict["trace_digest"]
    assert bool(verdict["violations"]) == (verdict["expect"] != "pass")



@pytest.mark.parametrize("name", ["kip359-stale-leader-legacy", "idem-retention-spurious-2.5",
                                  "mix-controller-failover-storm"])
def test_the_monitor_is_shown_every_kind_it_reads(name):
    """The monitor observes only `Monitor.kinds`; fed every event instead, it must judge the
    same, or a kind it reads is missing from that set."""
    scenario = load_scenario(str(SCENARIOS / f"{name}.toml"))
    verdict = run_scenario(scenario, 1, keep_events=True)
    monitor = Monitor(header_for(scenario, 1, schedule_for(scenario, 1)), verdict["invariants"])
    for ev in verdict["_events"]:
        monitor.step(ev)
    violations, metrics = monitor.finish()
    assert [v.to_json() for v in violations] == verdict["violations"]
    assert metrics == verdict["metrics"]
