"""Explore's opt-in `voter_change` kind: KIP-853's RemoveRaftVoter of a drawn controller, maybe
followed by its AddRaftVoter, drawn only when asked and only on a dynamic quorum; a drawn case
replays to the same trace once written back as a scenario."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, Phase, find, settings

from epochsim.cli import main
from epochsim.explore.strategies import OPT_IN_KINDS, FaultSpace, cases, parse_kinds
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from scenarios.writer import scenario_to_toml
from tests.conftest import ROOT

VOTERS = os.path.join(ROOT, "scenarios", "kraft-voters-remove-add-under-crash.toml")
STATIC = os.path.join(ROOT, "scenarios", "kraft-smoke.toml")


def test_voter_change_is_drawn_only_when_asked_and_only_on_a_dynamic_quorum():
    assert "voter_change" in OPT_IN_KINDS
    assert "voter_change" not in FaultSpace.of(load_scenario(VOTERS)).kinds
    assert "voter_change" in FaultSpace.of(load_scenario(VOTERS),
                                           kinds=parse_kinds("+voter_change")).kinds
    # a static quorum (no cluster.initial_controllers) and a release before 3.9 leave it out
    assert "voter_change" not in FaultSpace.of(load_scenario(STATIC),
                                               kinds=parse_kinds("+voter_change")).kinds
    older = load_scenario(VOTERS, {"protocol.raft_dynamic_voters": False})
    assert "voter_change" not in FaultSpace.of(older, kinds=parse_kinds("+voter_change")).kinds
    with pytest.raises(ValueError, match="initial_controllers"):
        FaultSpace.of(load_scenario(STATIC), kinds=parse_kinds("voter_change"))


def test_a_drawn_voter_change_replays_exactly():
    """A case that removes a voter and adds it back, written back as a scenario, loads and
    runs to the same trace as the search's run of it, and the quorum leader answers both."""
    space = FaultSpace.of(load_scenario(VOTERS), kinds=parse_kinds("voter_change,crash"))
    def removed_and_added_once_led(case):  # the quorum has a leader by 3 s
        return (any(s.action == "remove_voter" and s.at_us >= 3_000_000 for s in case.steps)
                and any(s.action == "add_voter" for s in case.steps))
    case = find(cases(space), removed_and_added_once_led,
                settings=settings(database=None, phases=[Phase.generate], max_examples=300,
                                  derandomize=True, deadline=None,
                                  suppress_health_check=list(HealthCheck)))
    sc = load_scenario(VOTERS)
    searched = run_scenario(sc, case.seed, schedule=list(case.steps))
    written = parse_scenario(scenario_to_toml(sc, list(case.steps)), "replay.toml")
    replayed = run_scenario(written, case.seed, keep_events=True)
    assert replayed["trace_digest"] == searched["trace_digest"]
    changes = [e for e in replayed["_events"] if e["kind"] == "voter_change"]
    assert {e["op"] for e in changes} == {"remove", "add"}  # the quorum leader answered both


def test_explore_draws_voter_change_when_asked(tmp_path):
    out = tmp_path / "vc"
    code = main(["explore", VOTERS, "--faults", "voter_change", "--budget", "4", "--seed", "1",
                 "--out", str(out), "--no-plot", "--max-faults", "2", "--no-story"])
    assert code in (0, 1)
    report = json.loads((out / "explore.json").read_text())
    assert report["fault_kinds"] == ["voter_change"]
    fired = {k.split(" ")[0] for k in report["coverage"]["faults"]}
    assert "remove_voter" in fired and fired <= {"remove_voter", "add_voter"}
