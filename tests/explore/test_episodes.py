"""Explore's episodes: each fault action's draw (sim.kafka.faults) as a hypothesis strategy."""

import os

from hypothesis import HealthCheck, given, settings

from epochsim.explore.episodes import KIND_NAMES, episode
from epochsim.explore.strategies import ALL_KINDS, FaultSpace
from scenarios.schema import load_scenario
from sim.kafka.faults import ACTIONS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = FaultSpace.of(load_scenario(os.path.join(ROOT, "scenarios", "smoke.toml")))


def test_every_kind_has_an_episode():
    assert set(ALL_KINDS) == KIND_NAMES


def test_an_episode_is_labelled_by_its_draw_function():
    """Hypothesis' generation copies choices between spans of one label, so each draw
    function keeps a label of its own, as an `@st.composite` per function had: the five rule
    kinds share one draw function (and label), crash and isolate do not."""
    labels = {kind: episode(kind, SPACE, 0).label for kind in ALL_KINDS}
    assert len({labels[f"rule:{a}"] for a in ("delay", "hold", "reorder", "drop", "duplicate")}) == 1
    assert labels["crash"] != labels["isolate"] != labels["control_race"]
    assert len(set(labels.values())) == len(ALL_KINDS) - 4


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(episode("control_race", SPACE, 500))
def test_episodes_draw_known_actions_inside_the_window(steps):
    for step in steps:
        assert step.action in ACTIONS
        assert 0 <= step.at_us <= SPACE.window_ms * 1000


KRAFT_SPACE = FaultSpace.of(load_scenario(os.path.join(ROOT, "scenarios", "kraft-smoke.toml")))


def test_a_kraft_space_leaves_out_the_kinds_that_only_touch_zookeeper_mode_requests():
    from epochsim.explore.strategies import ZK_ONLY_KINDS
    assert KRAFT_SPACE.kraft and not SPACE.kraft
    assert not set(ZK_ONLY_KINDS) & set(KRAFT_SPACE.kinds)
    assert set(ZK_ONLY_KINDS) <= set(SPACE.kinds)


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(episode("rule:drop", KRAFT_SPACE, 500))
def test_a_kraft_space_draws_rules_on_the_messages_a_kraft_run_sends(steps):
    from sim.kafka.faults.rules import KRAFT_WEIGHTED_KINDS, ROUTES
    for step in steps:
        kind = step.params["kind"]
        assert kind in KRAFT_WEIGHTED_KINDS
        senders, receivers = (KRAFT_SPACE.group(g) for g in ROUTES[kind])
        assert step.params.get("src", senders[0]) in senders
        assert step.params.get("dst", receivers[0]) in receivers


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(episode("control_race", SPACE, 500))
def test_a_control_race_holds_from_its_change_past_the_change_s_reversal(steps):
    """KIP-570's race needs the StopReplica a change sent still held when the LeaderAndIsr of
    its reversal arrives: the hold starts with the change and lasts past the reversal (or to
    the window's end), and the change is reversed later."""
    hold, change, reversal = steps
    assert hold.action == "rule" and hold.params["rule"] == "hold"
    assert change.at_us == hold.at_us < reversal.at_us
    assert (change.action, reversal.action) in {
        ("move_leader", "preferred_election"), ("reassign", "reassign"),
        ("reassign", "cancel_reassignment"), ("controlled_shutdown", "restart")}
    end_us = hold.at_us + hold.params["duration_ms"] * 1000
    assert end_us > reversal.at_us or end_us == SPACE.window_ms * 1000
    if (change.action, reversal.action) == ("reassign", "reassign"):
        assert reversal.params["replicas"] == list(dict(SPACE.assignment)[change.target])


def test_a_crashed_zookeeper_mode_broker_comes_back_after_its_session():
    """smoke's brokers keep a 6 s ZooKeeper session, longer than any drawn downtime (at most
    3 s): every restart would fail (NODEEXISTS), so the episode restarts the broker its drawn
    time after the session has expired. A client, a KRaft broker, and a broker whose session
    is shorter than some draws (both paths then stay in the search) come back as drawn."""
    from dataclasses import replace
    assert SPACE.broker_session_ms == 6000 and KRAFT_SPACE.broker_session_ms == 0
    assert SPACE.window_ms == 14000
    assert SPACE.restart_at(1000, 2000, "b1") == 9000
    assert SPACE.restart_at(1000, 2000, "leader:orders-0") == 9000
    assert SPACE.restart_at(7000, 2000, "b1") == 14000  # by the settle window
    assert SPACE.restart_at(1000, 2000, "p1") == 3000
    assert KRAFT_SPACE.restart_at(1000, 2000, "b1") == 3000
    assert replace(SPACE, broker_session_ms=1500).restart_at(1000, 1000, "b1") == 2000


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(episode("crash", SPACE, 500))
def test_a_crash_episode_restarts_a_broker_only_once_its_session_is_gone(steps):
    crash, restart = steps
    if crash.target in SPACE.brokers or crash.target in SPACE.roles():
        gap_ms = (restart.at_us - crash.at_us) // 1000
        assert gap_ms > SPACE.broker_session_ms or restart.at_us == SPACE.window_ms * 1000
