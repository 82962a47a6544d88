"""Explore's opt-in `elect_leaders` kind: the admin's ElectLeaders (KIP-460), PREFERRED or
UNCLEAN, as a search draws it when asked (`--faults +elect_leaders`), and a drawn case replays
to the same trace once written back as a scenario."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, Phase, find, given, settings

from epochsim.cli import main
from epochsim.explore.episodes import episode
from epochsim.explore.strategies import KINDS, OPT_IN_KINDS, FaultSpace, cases, parse_kinds
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from scenarios.writer import scenario_to_toml
from tests.conftest import ROOT

SMOKE = os.path.join(ROOT, "scenarios", "smoke.toml")
SPACE = FaultSpace.of(load_scenario(SMOKE), kinds=parse_kinds("+elect_leaders"))


def _space(profile: str, kinds: str = "+elect_leaders") -> FaultSpace:
    return FaultSpace.of(load_scenario(SMOKE, {"protocol.profile": profile}),
                         kinds=parse_kinds(kinds))


def test_elect_leaders_is_drawn_only_when_asked():
    assert "elect_leaders" in OPT_IN_KINDS and "elect_leaders" not in KINDS
    assert "elect_leaders" in SPACE.kinds
    assert "elect_leaders" not in FaultSpace.of(load_scenario(SMOKE)).kinds


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(episode("elect_leaders", SPACE, 500))
def test_an_elect_leaders_episode_is_one_election_of_either_type(steps):
    (step,) = steps
    assert step.action == "elect_leaders" and step.at_us == 500_000
    assert step.target in (None,) + SPACE.tps
    assert step.params["election_type"] in ("preferred", "unclean")


def test_only_the_election_types_the_release_takes_are_drawn():
    """ElectPreferredLeaders (2.2-2.3) takes PREFERRED only; before 2.2 there is no request,
    so the kind is left out, and a search of it alone is refused (`elect_leaders_refused`)."""
    assert _space("2.3").election_types == ("preferred",)
    assert _space("2.4").election_types == ("preferred", "unclean")
    assert "elect_leaders" not in _space("2.1").kinds
    try:
        _space("2.1", "elect_leaders")
    except ValueError as exc:
        assert "of this release" in str(exc)
    else:
        raise AssertionError("a search of elect_leaders alone on 2.1 was not refused")


def test_a_drawn_unclean_election_replays_exactly():
    """A case with an UNCLEAN ElectLeaders after a crash, written back as a scenario (as a
    counterexample is), loads, and runs to the same trace as the search's run of it."""
    def unclean_after_crash(case):
        actions = [(s.action, s.params.get("election_type")) for s in case.steps]
        return ("crash", None) in actions and ("elect_leaders", "unclean") in actions
    # the two kinds alone, and derandomized: the search for such a case is the same every run
    space = FaultSpace.of(load_scenario(SMOKE), kinds=parse_kinds("crash,elect_leaders"))
    case = find(cases(space), unclean_after_crash,
                settings=settings(database=None, phases=[Phase.generate], max_examples=500,
                                  derandomize=True, deadline=None,
                                  suppress_health_check=list(HealthCheck)))
    sc = load_scenario(SMOKE)
    searched = run_scenario(sc, case.seed, schedule=list(case.steps))
    text = scenario_to_toml(sc, list(case.steps))
    written = parse_scenario(text, "replay.toml")
    replayed = run_scenario(written, case.seed, keep_events=True)
    assert replayed["trace_digest"] == searched["trace_digest"]
    faults = [e for e in replayed["_events"] if e["kind"] == "fault"
              and e.get("action") == "elect_leaders"]
    assert faults


def test_explore_draws_elect_leaders_when_asked(tmp_path):
    out = tmp_path / "el"
    code = main(["explore", SMOKE, "--faults", "elect_leaders,crash", "--budget", "6",
                 "--seed", "1", "--out", str(out), "--no-plot", "--max-faults", "3",
                 "--target", "any"])
    assert code in (0, 1)
    report = json.loads((out / "explore.json").read_text())
    assert report["fault_kinds"] == ["crash", "elect_leaders"]
    fired = {k.split(" ")[0] for k in report["coverage"]["faults"]}
    assert "elect_leaders" in fired and fired <= {"crash", "restart", "elect_leaders"}
