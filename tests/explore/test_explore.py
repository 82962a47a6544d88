"""Counterexample search and shrinking: explore finds and shrinks a planted bug, the
counterexample replays, the same seed gives the same bytes, shrink minimises a stored run,
and the pieces (plain words, delta debugging, schedule round trip) behave."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from epochsim.cli import main
from epochsim.explore.coverage import Coverage, summary
from epochsim.explore.shrink import ddmin, minimise, units_of
from epochsim.explore.strategies import ALL_KINDS, KINDS, Case, FaultSpace, cases, parse_kinds
from epochsim.explore.words import describe, story
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from scenarios.writer import scenario_to_toml
from sim.core.faults import FaultStep
from tests.conftest import ROOT

# The quickest planted bug to find: a lagging broker's metadata takes the client back.
FAST = os.path.join(ROOT, "scenarios", "selftest", "client_accepts_stale_metadata.toml")
FAST_INVARIANT = "client_leader_epoch_regression"


def explore_cli(out, *extra):
    return main(["explore", FAST, "--budget", "60", "--seed", "3", "--out", str(out),
                 "--no-plot", *extra])


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore") / "a"
    code = explore_cli(out)
    return code, out


# -- explore end to end ------------------------------------------------------------------

def test_explore_finds_and_shrinks_a_planted_bug(explored):
    code, out = explored
    assert code == 1
    report = json.loads((out / "explore.json").read_text())
    assert report["found"] and report["invariant"] == FAST_INVARIANT
    assert 0 < len(report["counterexample"]["steps"]) <= 8
    assert report["runs_to_first_failure"] <= report["runs_generated"] <= 60
    assert report["coverage"]["runs_folded"] >= 1
    assert report["replay"]["violated"] and FAST_INVARIANT in report["replay"]["violated"]


def test_counterexample_replays_to_the_same_violation(explored):
    _code, out = explored
    sc = load_scenario(str(out / "counterexample.toml"))
    assert sc.expect == f"violation:{FAST_INVARIANT}" and not sc.mixes
    verdict = run_scenario(sc, sc.seed)
    assert FAST_INVARIANT in verdict["violated"] and verdict["expectation_met"]
    stored = json.loads((out / "verdict.json").read_text())
    assert stored["trace_digest"] == verdict["trace_digest"]
    assert (out / "trace.jsonl").exists()


def test_same_seed_gives_byte_identical_counterexample(explored, tmp_path):
    _code, out = explored
    assert explore_cli(tmp_path / "b") == 1
    assert (tmp_path / "b" / "counterexample.toml").read_bytes() == \
        (out / "counterexample.toml").read_bytes()


def test_explore_prints_the_story_and_coverage(tmp_path, capsys):
    assert explore_cli(tmp_path / "c") == 1
    printed = capsys.readouterr().out
    assert "COUNTEREXAMPLE: client_leader_epoch_regression" in printed
    assert "  t=" in printed and "coverage over" in printed
    assert "relevant to client_leader_epoch_regression" in printed


def test_explore_without_a_counterexample_says_what_it_never_reached(tmp_path, capsys):
    text = open(FAST, encoding="utf-8").read().replace(
        'mutant = "client_accepts_stale_metadata"', 'mutant = ""')
    path = tmp_path / "clean.toml"
    path.write_text(text)
    code = main(["explore", str(path), "--budget", "3", "--seed", "1", "--out",
                 str(tmp_path / "o"), "--no-plot", "--max-faults", "1"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "no counterexample" in printed and "3 runs" in printed
    report = json.loads((tmp_path / "o" / "explore.json").read_text())
    assert report["found"] is False and report["coverage"]["relevant"] is not None
    assert report["fault_kinds"] == list(KINDS)


def test_explore_draws_the_fault_kinds_it_is_given(tmp_path, capsys):
    out = tmp_path / "pl"
    code = main(["explore", os.path.join(ROOT, "scenarios", "kip101-power-loss-divergence-fixed.toml"),
                 "--faults", "power_loss", "--budget", "4", "--seed", "1", "--out", str(out),
                 "--no-plot", "--max-faults", "2"])
    # 1: it found a counterexample; drawn power losses can elect a power-cut last ISR member,
    # which loses acknowledged batches in Kafka before KIP-966 (acked_write_lost)
    assert code in (0, 1) and "faults power_loss" in capsys.readouterr().err
    report = json.loads((out / "explore.json").read_text())
    assert report["fault_kinds"] == ["power_loss"]
    fired = {k.split(" ")[0] for k in report["coverage"]["faults"]}
    assert fired and fired <= {"power_loss", "restart"}


def test_explore_resets_connections_only_when_asked(tmp_path):
    out = tmp_path / "rc"
    code = main(["explore", os.path.join(ROOT, "scenarios", "idem-connection-reset-dedup.toml"),
                 "--faults", "reset_connections", "--budget", "4", "--seed", "1", "--out",
                 str(out), "--no-plot", "--max-faults", "2", "--no-story"])
    assert code == 0
    report = json.loads((out / "explore.json").read_text())
    assert report["fault_kinds"] == ["reset_connections"]
    assert set(report["coverage"]["liveness_judged"]) == {
        "under_replicated_after_heal", "produce_stalled_after_heal", "consume_stalled_after_heal"}
    assert {k.split(" ")[0] for k in report["coverage"]["faults"]} == {"reset_connections"}
    assert "reset_connections" not in KINDS  # a default search never draws it


def test_explore_rejects_an_unknown_target(tmp_path):
    assert main(["explore", FAST, "--target", "no_such_rule", "--out", str(tmp_path / "x")]) == 2


# -- shrink a stored run --------------------------------------------------------------------

NOISY = [FaultStep(300_000, "retention", "t-0", {}),
         FaultStep(500_000, "rule", None, {"rule": "delay", "kind": "UpdateMetadata", "dst": "b3",
                                           "delay_ms": 2000, "duration_ms": 1500}),
         FaultStep(600_000, "crash", "p1"), FaultStep(700_000, "restart", "p1"),
         FaultStep(900_000, "move_leader", "t-0", {"to": "next"}),
         FaultStep(2_300_000, "preferred_election", None)]


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    sc = load_scenario(FAST)
    run_dir = tmp_path_factory.mktemp("run")
    verdict = run_scenario(sc, 5, str(run_dir), schedule=NOISY)
    assert FAST_INVARIANT in verdict["violated"]
    return run_dir


def test_shrink_minimises_a_stored_failing_run(failing_run, tmp_path, capsys):
    out = tmp_path / "shrunk"
    assert main(["shrink", str(failing_run), "--out", str(out), "--no-plot"]) == 1
    sc = load_scenario(str(out / "counterexample.toml"))
    assert len(sc.steps) < len(NOISY) and sc.seed == 5
    assert FAST_INVARIANT in run_scenario(sc, sc.seed)["violated"]
    assert "still breaks with" in capsys.readouterr().out


def test_shrink_accepts_the_trace_file_itself(failing_run, tmp_path):
    out = tmp_path / "shrunk"
    assert main(["shrink", str(failing_run / "trace.jsonl"), "--out", str(out), "--no-plot"]) == 1


@pytest.mark.parametrize("make", ["missing", "empty_dir", "not_a_trace"])
def test_shrink_bad_input_is_a_one_line_usage_error(tmp_path, capsys, make):
    path = tmp_path / "in"
    if make == "empty_dir":
        path.mkdir()
    elif make == "not_a_trace":
        path.write_text("hello\n")
    assert main(["shrink", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err


# -- the pieces ------------------------------------------------------------------------------

@pytest.mark.parametrize("step, words", [
    (FaultStep(3_000_000, "rule", None, {"rule": "hold", "kind": "StopReplica", "dst": "b3",
                                         "release_kind": "LeaderAndIsr", "count": 1}),
     "hold StopReplica to b3 until a later LeaderAndIsr (1 message)"),
    (FaultStep(0, "rule", None, {"rule": "delay", "kind": "LeaderAndIsr", "dst": "b1",
                                 "delay_ms": 2000, "duration_ms": 1000}),
     "delay LeaderAndIsr to b1 by 2000 ms (for 1 s)"),
    (FaultStep(0, "crash", "leader:t-0"), "crash the leader of t-0"),
    (FaultStep(0, "move_leader", "t-0", {"to": "b2"}), "move the leadership of t-0 to b2"),
    (FaultStep(0, "reassign", "t-0", {"replicas": [1, 2]}), "reassign t-0 to replicas [1, 2]"),
    (FaultStep(0, "isolate", "controller"), "isolate the active controller from every other node"),
    (FaultStep(0, "block", "c1", {"dst": "b2"}), "cut the link c1 -> b2"),
])
def test_plain_words(step, words):
    assert describe(step) == words


def test_story_lines_carry_the_time():
    lines = story([FaultStep(3_000_000, "cancel_reassignment", "t-0")])
    assert lines == ["t=3.000s cancel the reassignment of t-0"]


def test_units_pair_each_undo_with_its_fault():
    steps = [FaultStep(0, "crash", "b1"), FaultStep(1, "isolate", "b2"),
             FaultStep(2, "move_leader", "t-0", {"to": "next"}), FaultStep(3, "restart", "b1"),
             FaultStep(4, "heal", "b2")]
    units = [[s.action for _i, s in unit] for unit in units_of(steps)]
    assert units == [["crash", "restart"], ["isolate", "heal"], ["move_leader"]]


def test_units_pair_a_named_heal_with_the_cut_of_its_name():
    """A mix's heal undoes its own cut: paired by name, not with the latest open cut."""
    steps = [FaultStep(0, "isolate", "b1", {"cut": "mix0.0"}),
             FaultStep(1, "isolate", "b2", {"cut": "mix0.2"}),
             FaultStep(2, "heal", "b1", {"cut": "mix0.0"}), FaultStep(3, "heal", "b2", {"cut": "mix0.2"})]
    assert [[i for i, _s in unit] for unit in units_of(steps)] == [[0, 2], [1, 3]]
    steps[2] = FaultStep(2, "heal", None, {"cut": "mix0.0"})  # no target to match by
    assert [[i for i, _s in unit] for unit in units_of(steps)] == [[0, 2], [1, 3]]


def test_ddmin_finds_a_one_minimal_subset():
    needed = {3, 7}
    kept = ddmin(list(range(10)), lambda units: needed <= set(units))
    assert sorted(kept) == [3, 7]


def test_minimise_drops_noise_and_rounds_times():
    steps = tuple(FaultStep(t, a, "b1") for t, a in
                  [(1_234_567, "crash"), (1_500_000, "restart"), (2_345_678, "retention")])
    case = Case(1, steps)
    runs = []

    def fails(c):
        runs.append(c)
        return any(s.action == "crash" and s.at_us <= 1_300_000 for s in c.steps)

    small = minimise(fails, case)
    assert [s.action for s in small.steps] == ["crash", "restart"]
    assert small.steps[0].at_us == 1_000_000


def test_minimise_tries_the_scenarios_own_seed():
    steps = (FaultStep(1_000_000, "crash", "b1"), FaultStep(2_000_000, "retention", "b1"))
    any_seed = minimise(lambda c: any(s.action == "crash" for s in c.steps), Case(4711, steps),
                        seed=1)
    assert any_seed.seed == 1 and [s.action for s in any_seed.steps] == ["crash"]
    only_its_own = minimise(lambda c: c.seed == 4711 and len(c.steps) > 0, Case(4711, steps),
                            seed=1)
    assert only_its_own.seed == 4711 and len(only_its_own.steps) == 1
    assert minimise(lambda c: bool(c.steps), Case(4711, steps)).seed == 4711  # no seed: kept


def test_minimise_drops_a_fault_whose_undo_is_needed_for_another_reason():
    """The restart at 5.5 s is needed (it revives b1, halted meanwhile in the real case), so
    its unit stays; the second power loss of b1 in that unit did nothing and goes alone."""
    steps = tuple(FaultStep(t, a, "b1") for t, a in
                  [(5_200_000, "power_loss"), (5_200_000, "power_loss"), (5_200_000, "restart"),
                   (5_500_000, "restart")])
    assert [[i for i, _s in unit] for unit in units_of(steps)] == [[0, 3], [1, 2]]

    def fails(c):
        return [s.at_us for s in c.steps if s.action == "restart"] == [5_200_000, 5_500_000] \
            and any(s.action == "power_loss" for s in c.steps)

    small = minimise(fails, Case(1, steps))
    assert [(s.at_us, s.action) for s in small.steps] == [
        (5_000_000, "power_loss"), (5_200_000, "restart"), (5_500_000, "restart")]


SPACE_SCENARIO = load_scenario(os.path.join(ROOT, "scenarios", "selftest",
                                            "stop_replica_equal_epoch_flipped.toml"))


def generated(seed: int, examples: int, **space):
    """Run the test on `examples` cases drawn (generation only) from SPACE_SCENARIO's fault
    space with `space` (e.g. kinds=...), from hypothesis seed `seed`."""
    def wrap(test):
        return hypothesis_seed(seed)(settings(
            max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
            suppress_health_check=list(HealthCheck))(given(cases(FaultSpace.of(SPACE_SCENARIO, **space)))(test)))
    return wrap


def round_trips(case) -> None:
    text = scenario_to_toml(SPACE_SCENARIO, list(case.steps))
    assert list(parse_scenario(text).steps) == list(case.steps)


@generated(11, 60)
def test_generated_schedules_round_trip_through_the_scenario_file(case):
    round_trips(case)


@generated(12, 40, kinds=ALL_KINDS)
def test_schedules_with_the_opt_in_kinds_round_trip_too(case):
    round_trips(case)


@generated(13, 40, kinds=("power_loss",))
def test_a_space_of_one_kind_draws_only_that_kind_and_its_undo(case):
    assert case.steps and {s.action for s in case.steps} <= {"power_loss", "restart"}
    assert all(s.params["unflushed_ms"] > 0 for s in case.steps if s.action == "power_loss")


@generated(15, 80, kinds=("isolate", "block", "controller_crash", "rule:delay", "rule:drop"))
def test_cuts_are_named_per_episode_and_no_rule_runs_from_a_node_to_itself(case):
    """Each episode's cut has its own heal by name, so overlapping cuts each last their own
    time; a rule never matches messages from a node to itself (there are none)."""
    cuts = [s.params["cut"] for s in case.steps if s.action in ("isolate", "block")]
    heals = [s.params["cut"] for s in case.steps if s.action == "heal"]
    assert len(set(cuts)) == len(cuts) and sorted(cuts) == sorted(heals)
    rules = [s.params for s in case.steps if s.action == "rule"]
    assert not [p for p in rules if "src" in p and p.get("dst") == p["src"]]
    round_trips(case)


@generated(16, 60, kinds=("rule:reorder", "rule:hold", "rule:delay"))
def test_only_the_controllers_requests_are_reordered_or_held(case):
    """A client's or follower's Kafka connection keeps its order both ways, so the search takes
    only the controller's requests out of order; a delay (order kept) may take any kind."""
    rules = [s.params for s in case.steps if s.action == "rule"]
    assert all(p["kind"] in ("LeaderAndIsr", "StopReplica", "UpdateMetadata")
               for p in rules if p["rule"] in ("reorder", "hold"))


IDEMPOTENT_SCENARIO = load_scenario(os.path.join(ROOT, "scenarios", "selftest", "no_dedup_cache.toml"))


@given(cases(FaultSpace.of(IDEMPOTENT_SCENARIO)))
@settings(max_examples=60, phases=[Phase.generate], database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@hypothesis_seed(14)
def test_a_producer_that_asks_for_idempotence_keeps_acks_all(case):
    """Kafka refuses an explicitly idempotent producer with acks other than all, so the
    search never tries one; it still varies that producer's other settings."""
    assert ("p1", "acks", 1) not in case.workload


def test_the_search_varies_acks_where_kafka_allows_it():
    choices = dict(FaultSpace.of(IDEMPOTENT_SCENARIO).producer_settings)["p1"]
    assert choices["acks"] == ("all",) and len(choices["max_in_flight"]) == 2
    assert dict(FaultSpace.of(SPACE_SCENARIO).producer_settings)["p1"]["acks"] == ("all", 1)


@pytest.mark.parametrize("text,kinds", [
    ("crash, power_loss", ("crash", "power_loss")),
    ("power_loss,crash", ("crash", "power_loss")),  # canonical order: the same search
    ("+power_loss", KINDS + ("power_loss",)),
    ("-retention,-crash", tuple(k for k in KINDS if k not in ("retention", "crash"))),
])
def test_fault_kinds_are_a_list_or_changes_to_the_default(text, kinds):
    assert parse_kinds(text) == kinds


@pytest.mark.parametrize("text,message", [
    ("bogus", "'bogus' is not a fault kind"), ("", "names no fault kind"),
    ("+crash,isolate", "mixes a plain list"), ("-" + ",-".join(KINDS), "leaves no fault kind"),
])
def test_bad_fault_kinds_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_kinds(text)


def test_explore_rejects_a_bad_faults_flag_before_running(tmp_path, capsys):
    assert explore_cli(tmp_path / "x", "--faults", "crash,nope") == 2
    err = capsys.readouterr().err
    assert "'nope' is not a fault kind" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_coverage_folds_request_situations():
    events = [
        {"kind": "replica_state", "node": "b3", "tp": "t-0", "role": "follower",
         "leader_epoch": 3, "leader": 1},
        {"kind": "stop_replica", "node": "b3", "tp": "t-0", "issued_epoch": 2, "local_epoch": 3,
         "result": "applied", "delete": True},
        {"kind": "fault", "step": 0, "action": "rule", "params": {"rule": "hold"}},
    ]
    cov = Coverage()
    cov.add_events(events)
    assert cov.reached("StopReplica/older/follower") == 1
    assert cov.relevance("stop_replica_out_of_order")["runs"] == 1
    assert cov.faults["rule:hold"] == 1



def test_coverage_says_when_a_liveness_rule_never_judged():
    cov = Coverage()
    cov.add_events([], {"under_replicated_after_heal": 3, "produce_stalled_after_heal": 0})
    cov.add_events([], {"under_replicated_after_heal": 0, "produce_stalled_after_heal": 0})
    assert cov.to_json()["liveness_judged"] == {"produce_stalled_after_heal": 0,
                                                "under_replicated_after_heal": 1}
    printed = "\n".join(summary(cov, "produce_stalled_after_heal"))
    assert "under_replicated_after_heal 1 runs" in printed
    assert "NOT JUDGED: produce_stalled_after_heal judged nothing in any run" in printed
    assert "NOT JUDGED" not in "\n".join(summary(cov, "under_replicated_after_heal"))


