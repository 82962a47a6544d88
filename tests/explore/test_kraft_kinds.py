"""Explore's KRaft-only fault kinds (opt-in): a clean controller stop, a split quorum, a broker
cut from the quorum, and a broker applying metadata late."""

import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from epochsim.cli import main
from epochsim.explore.episodes import episode
from epochsim.explore.strategies import KINDS, KRAFT_ONLY_KINDS, OPT_IN_KINDS, FaultSpace
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.core.faults import FaultStep
from sim.kafka.faults import ACTIONS
from tests.conftest import ROOT

KRAFT = load_scenario(os.path.join(ROOT, "scenarios", "kraft-smoke.toml"))
ZK = load_scenario(os.path.join(ROOT, "scenarios", "smoke.toml"))
KRAFT_SPACE = FaultSpace.of(KRAFT, kinds=KINDS + KRAFT_ONLY_KINDS)
EXAMPLES = settings(max_examples=25, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def test_kraft_kinds_are_opt_in_and_kept_only_in_a_kraft_space():
    assert set(KRAFT_ONLY_KINDS) <= set(OPT_IN_KINDS) and not set(KRAFT_ONLY_KINDS) & set(KINDS)
    # voter_change needs a dynamic quorum, which this base has not (test_voter_change_kind.py)
    assert set(KRAFT_ONLY_KINDS) - {"voter_change"} <= set(KRAFT_SPACE.kinds)
    assert "voter_change" not in KRAFT_SPACE.kinds
    zk = FaultSpace.of(ZK, kinds=KINDS + KRAFT_ONLY_KINDS)
    assert not set(KRAFT_ONLY_KINDS) & set(zk.kinds) and set(zk.kinds) == set(KINDS)


def test_kraft_kinds_alone_on_a_zookeeper_mode_scenario_are_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="none of these acts on a ZooKeeper-mode cluster"):
        FaultSpace.of(ZK, kinds=("split_quorum",))
    code = main(["explore", os.path.join(ROOT, "scenarios", "smoke.toml"), "--faults",
                 "stop_controller", "-o", str(tmp_path / "x"), "--no-plot"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--faults stop_controller" in err[0]
    assert not (tmp_path / "x").exists()


@EXAMPLES
@given(episode("stop_controller", KRAFT_SPACE, 500))
def test_a_stop_controller_episode_restarts_the_voter_at_least_two_slots_later(steps):
    stop, restart = steps
    assert (stop.action, restart.action) == ("stop_controller", "restart")
    assert stop.target == restart.target
    assert stop.target in ("controller",) + KRAFT_SPACE.controllers
    assert restart.at_us - stop.at_us >= 2 * KRAFT_SPACE.slot_ms * 1000


@EXAMPLES
@given(episode("split_quorum", KRAFT_SPACE, 500), episode("cut_from_quorum", KRAFT_SPACE, 500),
       episode("slow_metadata", KRAFT_SPACE, 500))
def test_kraft_episodes_are_undone_inside_the_window(split, cut, slow):
    assert split[0].target in (None,) + KRAFT_SPACE.controllers
    assert cut[0].target in KRAFT_SPACE.brokers
    for episode_steps, cut_action in ((split, "split_quorum"), (cut, "cut_from_quorum")):
        # healed later, or left cut for good
        assert [s.action for s in episode_steps] in ([cut_action, "heal"], [cut_action])
    assert [s.params["delay_ms"] > 0 for s in slow] == [True, False]
    for step in split + cut + slow:
        assert step.action in ACTIONS and 0 <= step.at_us <= KRAFT_SPACE.window_ms * 1000


def test_a_drawn_clean_stop_acts_on_the_run():
    """The episode's steps, run on kraft-smoke: the active controller resigns and stops, and
    the restart aimed at `controller` brings back the voter the stop hit, not the new leader."""
    steps = (FaultStep(2_000_000, "stop_controller", "controller", {}),
             FaultStep(2_300_000, "restart", "controller", {}))
    events = run_scenario(replace(KRAFT, steps=steps), 1, keep_events=True)["_events"]
    faults = [e for e in events if e["kind"] == "fault"]
    assert [e["action"] for e in faults] == ["stop_controller", "restart"]
    assert not any("outcome" in e for e in faults)
    stopped = faults[0]["resolved"]
    assert faults[1]["resolved"] == stopped
    down = [(e["kind"], e["t"]) for e in events if e["node"] == stopped
            and e["kind"] in ("crash", "restart")]
    assert [k for k, _t in down] == ["crash", "restart"]
    assert 2_000_000 < down[0][1] < 2_300_000  # it stopped once another voter led
