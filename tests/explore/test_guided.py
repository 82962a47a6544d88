"""Coverage-guided explore: the signals beyond the request matrix, the corpus and its
weights, the mutations, the story as the base, and coverage over time."""

from __future__ import annotations

import json
import os
import random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from epochsim.cli import main
from epochsim.explore.coverage import RunFold
from epochsim.explore.guided import guided_cases, loader_check
from epochsim.explore.mutate import allowed_edits, mutate, peers
from epochsim.explore.novelty import Corpus, SignalFold, bucket, features, focus_words
from epochsim.explore.report import over_time_line
from epochsim.explore.search import explore
from epochsim.explore.shrink import units_of
from epochsim.explore.strategies import Case, FaultSpace
from scenarios.schema import load_scenario
from sim.core.faults import FaultStep
from tests.conftest import ROOT

BASE = load_scenario(os.path.join(ROOT, "scenarios", "selftest", "no_stop_replica_epoch_check.toml"))
KIP570 = os.path.join(ROOT, "scenarios", "kip570-stop-replica-reorder-legacy.toml")


def fold(events):
    signals = SignalFold()
    for ev in events:
        signals.step(ev)
    return signals.signals


# -- signals and features ------------------------------------------------------------------

def test_signals_name_which_kind_overtook_which_and_what_was_held():
    events = [
        {"kind": "send", "mid": 1, "msg": "StopReplica", "node": "c1", "dst": "b3"},
        {"kind": "hold", "mid": 1, "rule": 0},
        {"kind": "send", "mid": 2, "msg": "LeaderAndIsr", "node": "c1", "dst": "b3"},
        {"kind": "deliver", "mid": 2, "src": "c1", "node": "b3"},
        {"kind": "deliver", "mid": 1, "src": "c1", "node": "b3"},
    ]
    assert fold(events) == {"held StopReplica", "overtook StopReplica<LeaderAndIsr"}
    in_order = [events[0], events[2], events[4], events[3]]
    assert fold(in_order) == set()


def test_signals_relate_two_brokers_epochs_and_see_two_leaders():
    def state(node, role, epoch):
        return {"kind": "replica_state", "node": node, "tp": "t-0", "role": role,
                "leader_epoch": epoch, "leader": 1}
    got = fold([state("b1", "leader", 1), state("b2", "follower", 0), state("b2", "leader", 2)])
    assert got == {"epochs follower older vs leader", "epochs leader newer vs leader",
                   "two leaders of one partition"}
    crashed = fold([state("b1", "leader", 1), {"kind": "crash", "node": "b1"},
                    state("b2", "leader", 2)])
    assert crashed == set()


def test_features_count_cells_in_classes_as_fuzzers_count_edges():
    assert [bucket(n) for n in (1, 2, 3, 5, 9, 200)] == [1, 2, 2, 4, 8, 128]
    run = RunFold()
    run.cells.update({"Fetch/equal/leader": 3})
    run.situations.update({"leader election": 1})
    feats = features(run, SignalFold())
    assert feats == {"cell Fetch/equal/leader", "cell Fetch/equal/leader x2",
                     "situation leader election"}


# -- the corpus ------------------------------------------------------------------------------

def test_the_corpus_keeps_a_case_only_for_something_new_and_records_the_curve():
    corpus = Corpus()
    assert corpus.add("a", frozenset({"x", "y"}), 1, 5)
    assert not corpus.add("b", frozenset({"x"}), 2, 5)
    assert corpus.add("c", frozenset({"z"}), 3, 6)
    corpus.finish(7)
    assert [case for case, _f in corpus.entries] == ["a", "c"]
    assert corpus.over_time == [(1, 5, 2), (3, 6, 3), (7, 6, 3)]
    corpus.last(frozenset({"w"}), 8, 7)  # a failing run: on the curve, not in the corpus
    assert corpus.over_time[-1] == (8, 7, 4) and "w" not in corpus.hits


def test_the_corpus_favours_rare_features_and_most_those_near_the_target():
    corpus = Corpus(focus_words(("StopReplica/older/*",)))
    assert corpus.focus == ("StopReplica",)
    corpus.add("common", frozenset({"cell Fetch/equal/leader"}), 1, 1)
    for run in range(2, 6):
        corpus.add("again", frozenset({"cell Fetch/equal/leader"}), run, 1)
    corpus.add("rare", frozenset({"cell Fetch/equal/leader", "signal held LeaderAndIsr"}), 6, 1)
    corpus.add("near", frozenset({"cell Fetch/equal/leader", "signal held StopReplica"}), 7, 1)
    common, rare, near = corpus.weights()
    assert common < rare < near
    assert focus_words(("situation:reordered Fetch",)) == ("reordered Fetch",)


# -- mutations -------------------------------------------------------------------------------

SPACE = FaultSpace.of(BASE)
PARENT = Case(1, (
    FaultStep(1_000_000, "isolate", "b2", {"cut": "e0"}),
    FaultStep(1_000_000, "reassign", "t-0", {"replicas": [1, 2]}),
    FaultStep(1_500_000, "heal", "b2", {"cut": "e0"}),
))
FRESH = [FaultStep(0, "block", "c1", {"dst": "b1", "cut": "e0"}),
         FaultStep(300_000, "heal", None, {"cut": "e0"})]


def children(n: int, seed: int = 7) -> list:
    rng = random.Random(seed)
    return [mutate(PARENT, rng, SPACE, FRESH, PARENT, ("StopReplica",)) for _ in range(n)]


def test_mutants_depend_on_the_seed_alone_and_stay_in_the_window():
    kids = children(200)
    assert [k.key() for k in kids] == [k.key() for k in children(200)]
    assert len({k.key() for k in kids}) > 100
    window_us = SPACE.window_ms * 1000
    valid = loader_check(BASE)
    for kid in kids:
        assert all(0 <= s.at_us <= window_us for s in kid.steps)
        assert [s.at_us for s in kid.steps] == sorted(s.at_us for s in kid.steps)
        # a rule lapses by the window's end: nothing is held into the quiet time
        assert all(s.at_us + s.params.get("duration_ms", 0) * 1000 <= window_us
                   for s in kid.steps if s.action == "rule"), kid.steps
        cuts = [s.params["cut"] for s in kid.steps if s.action in ("isolate", "block")]
        assert len(set(cuts)) == len(cuts), "a spliced cut keeps a name of its own"
    assert sum(map(valid, kids)) > 0.9 * len(kids)  # the search draws again when not


def test_mutants_retarget_race_and_revert():
    kids = children(300)
    assert any(s.target == "b1" and s.action == "isolate" for k in kids for s in k.steps)
    races = [k for k in kids if any(s.action == "rule" and s.params["kind"] == "StopReplica"
                                    for s in k.steps)]
    assert races
    for kid in races:  # the race rule is armed before the step it races, at its time
        rule = next(i for i, s in enumerate(kid.steps) if s.action == "rule")
        assert any(s.at_us == kid.steps[rule].at_us for s in kid.steps[rule + 1:])
    reverted = [k for k in kids if sum(s.action == "reassign" for s in k.steps) == 2]
    assert any(s.params["replicas"] == [1, 2, 3] for k in reverted for s in k.steps
               if s.action == "reassign")
    assert peers("b2", SPACE) == SPACE.brokers and peers("t-0", SPACE) == SPACE.tps
    assert len(units_of(PARENT.steps)) == 2


def test_align_makes_two_units_meet_on_one_node():
    """A rule held from one broker and a leadership move to another become one broker's: the
    align edit copies a node one unit names into another unit, never a node of another sort."""
    from epochsim.explore.mutate import _align
    units = [[FaultStep(0, "rule", None, {"rule": "hold", "kind": "LeaderAndIsr", "dst": "b2",
                                          "release_kind": "StopReplica", "duration_ms": 100})],
             [FaultStep(600_000, "move_leader", "t-0", {"to": "b3"})]]
    met = set()
    for seed in range(40):
        out = _align(units, random.Random(seed), SPACE, [], None)
        dst, to = out[0][0].params["dst"], out[1][0].params["to"]
        assert out[1][0].target == "t-0" and {dst, to} <= {"b2", "b3"}
        met.add(dst == to)
    assert met == {True}
    assert _align(units[:1], random.Random(1), SPACE, [], None) == units[:1]


@given(guided_cases(SPACE, Corpus(), loader_check(BASE)))
@settings(max_examples=20, phases=[Phase.generate], database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@hypothesis_seed(5)
def test_an_empty_corpus_gives_fresh_cases(case):
    assert case.steps


# -- the search ------------------------------------------------------------------------------

def test_the_search_is_the_same_for_the_same_seed_and_grows_a_corpus():
    target = "stop_replica_out_of_order"
    first = explore(BASE, 12, 4, target)
    again = explore(BASE, 12, 4, target)
    assert first.generated == again.generated == 12
    assert first.over_time == again.over_time and first.corpus_size == again.corpus_size
    assert 0 < first.corpus_size < 12
    assert first.over_time[0][0] == 1 and first.over_time[-1][0] == 12
    assert [p[2] for p in first.over_time] == sorted(p[2] for p in first.over_time)


def test_the_story_is_the_base_its_first_run_the_scenario_as_written():
    sc = load_scenario(KIP570)
    kept = explore(sc, 5, 3, "stop_replica_out_of_order", story=True, max_shrink_runs=5)
    assert kept.found and kept.runs_to_first == 1 and kept.story == 3
    assert FaultSpace.of(sc, story=True).story == tuple(sc.steps)
    assert FaultSpace.of(sc).story == ()


def test_the_shrink_budget_ends_hypothesis_shrinking(monkeypatch):
    """Past --shrink-runs the first candidate not run before ends hypothesis' shrinking: it is
    not drawn on (each draw a whole schedule) for nothing."""
    from epochsim.explore import search
    over, real = [], search._Search._over_shrink_budget

    def counted(self, case):
        over.append(real(self, case))
        return over[-1]

    monkeypatch.setattr(search._Search, "_over_shrink_budget", counted)
    base = load_scenario(os.path.join(ROOT, "scenarios", "selftest", "no_dedup_cache.toml"))
    kept = explore(base, 10, 1, "duplicate_append", story=True, max_shrink_runs=2)
    assert kept.found and kept.runs_to_first > 1  # hypothesis found it, and shrank it
    assert over.count(True) == 1


def test_explore_prints_and_draws_coverage_over_time(tmp_path, capsys):
    out = tmp_path / "o"
    code = main(["explore", KIP570, "--budget", "3", "--seed", "1", "--out", str(out),
                 "--no-story", "--target", "stop_replica_out_of_order", "--shrink-runs", "5"])
    printed = capsys.readouterr().out
    report = json.loads((out / "explore.json").read_text())
    assert report["story_steps"] == 0 and report["coverage_over_time"]
    assert "coverage over time (after run: request situations/features): 1: " in printed
    assert code in (0, 1) and (out / "coverage.png").stat().st_size > 0
    assert over_time_line([(1, 4, 9), (7, 6, 20), (12, 6, 20)], 3) == (
        "coverage over time (after run: request situations/features): 1: 4/9, 2: 4/9, "
        "5: 4/9, 10: 6/20, 12: 6/20; 3 cases kept for reaching something new")


def test_mutants_add_only_the_fault_kinds_of_the_search():
    assert "race" not in allowed_edits(("crash", "reassign"))
    assert "revert" in allowed_edits(("crash", "reassign"))
    assert {"race", "revert"} <= set(allowed_edits(("control_race",)))
    space = FaultSpace.of(BASE, kinds=("rule:reorder",))
    rng = random.Random(3)
    kids = [mutate(PARENT, rng, space, FRESH, PARENT, ("StopReplica",)) for _ in range(200)]
    rules = [s.params["rule"] for k in kids for s in k.steps if s.action == "rule"]
    assert rules and set(rules) == {"reorder"}


def test_signals_name_elections_and_see_an_unclean_one():
    def change(leader, isr, reason):
        return {"kind": "partition_state", "tp": "t-0", "leader": leader, "isr": isr,
                "reason": reason}
    got = fold([change(1, [1], "create"), change(-1, [1], "elect:broker_failure"),
                change(2, [2], "elect:broker_failure")])
    assert got == {"election broker_failure", "election found no leader", "unclean election"}


def test_the_coverage_curve_is_the_same_bytes_each_time_and_needs_its_points(tmp_path):
    from reports.coverage_curve import plot_coverage
    from reports.style import ReportError

    report = {"scenario": "s", "search_seed": 1, "runs_to_first_failure": 3, "invariant": "x",
              "coverage": {"cells_total": 54}, "coverage_over_time": [[1, 4, 9], [3, 6, 20]]}
    path = tmp_path / "explore.json"
    path.write_text(json.dumps(report))
    first = plot_coverage(str(path), str(tmp_path / "a.png"))
    second = plot_coverage(str(path), str(tmp_path / "b.png"))
    assert open(first, "rb").read() == open(second, "rb").read()
    path.write_text(json.dumps({"scenario": "s"}))
    try:
        plot_coverage(str(path), str(tmp_path / "c.png"))
    except ReportError as exc:
        assert "no coverage_over_time" in str(exc)
    else:
        raise AssertionError("a report without points was drawn")


def test_generated_cuts_keep_clear_of_the_storys_own_cut_names():
    from epochsim.explore.strategies import cut_name
    story = (FaultStep(0, "isolate", "b1", {"cut": "e0"}), FaultStep(9, "heal", "b1", {"cut": "e0"}),
             FaultStep(9, "isolate", "b2", {"cut": "e0-1"}))
    space = FaultSpace.of(BASE)
    assert cut_name(space, 0) == "e0"
    from dataclasses import replace
    with_story = replace(space, story=story)
    assert [cut_name(with_story, i) for i in (0, 1)] == ["e0-2", "e1"]


def test_a_race_armed_late_in_the_window_lapses_by_its_end():
    """A rule raced against a step near the window's end is cut to the time left, so no
    request stays held into the quiet time that the end-of-run checks judge."""
    window_us = SPACE.window_ms * 1000
    late = Case(1, (FaultStep(window_us - 200_000, "reassign", "t-0", {"replicas": [1, 2]}),))
    rng = random.Random(3)
    kids = [mutate(late, rng, SPACE, FRESH, late, ("StopReplica",)) for _ in range(300)]
    rules = [s for k in kids for s in k.steps if s.action == "rule"]
    assert rules
    assert all(s.at_us + s.params["duration_ms"] * 1000 <= window_us for s in rules)


def test_a_rule_moved_late_in_the_window_lapses_by_its_end():
    """A shift or splice that moves a rule late cuts its duration to the time left, as a
    fresh draw's is, so no message stays held into the quiet time the end-of-run checks
    judge (a false alarm on a correct-model base otherwise)."""
    from epochsim.explore.mutate import _clamp_unit
    window_us = SPACE.window_ms * 1000
    rule = [FaultStep(0, "rule", None, {"rule": "hold", "kind": "LeaderAndIsr",
                                         "release_kind": "StopReplica", "duration_ms": 3000})]
    moved = _clamp_unit(rule, window_us, SPACE)[0]
    assert moved.at_us > 0
    assert moved.at_us + moved.params["duration_ms"] * 1000 <= window_us
    early = _clamp_unit(rule, 0, SPACE)[0]
    assert early.params["duration_ms"] == min(3000, window_us // 1000)


def test_a_parent_with_leads_has_one_followed_after_its_moment_and_one_without_draws_as_before():
    """The `follow` edit: the lead's step, 1 ms-2 s after the moment its chain step was
    reached; a parent without leads gets exactly the mutants it got before leads existed."""
    lead = FaultStep(1_200_000, "move_leader", "t-0", {"to": "b3"})
    rng = random.Random(5)
    kids = [mutate(PARENT, rng, SPACE, FRESH, PARENT, ("StopReplica",), (lead,))
            for _ in range(200)]
    followed = [s for k in kids for s in k.steps if s.action == "move_leader"]
    assert 0.4 * len(kids) < len(followed) < len(kids)  # half the time, now and then dropped
    # (a later edit of the same mutant may move it again)
    offsets = [s.at_us - lead.at_us for s in followed]
    assert sum(o in (1_000, 10_000, 100_000, 500_000, 1_000_000, 2_000_000) for o in offsets) \
        > 0.8 * len(offsets)
    assert sum(s.target == "t-0" and s.params == {"to": "b3"} for s in followed) \
        > 0.8 * len(followed)
    plain = [mutate(PARENT, random.Random(5), SPACE, FRESH, PARENT, ("StopReplica",), ())
             for _ in range(1)]
    assert plain == [mutate(PARENT, random.Random(5), SPACE, FRESH, PARENT, ("StopReplica",))]
    assert children(50) == [mutate(PARENT, r, SPACE, FRESH, PARENT, ("StopReplica",), ())
                            for r in [random.Random(7)] for _ in range(50)]


def test_the_corpus_hands_out_a_parent_with_the_leads_of_its_run():
    corpus = Corpus()
    lead = FaultStep(1_000, "cancel_reassignment", "t-0", {})
    corpus.add("a", frozenset({"x"}), 1, 1, (lead,))
    corpus.add("b", frozenset({"x"}), 2, 1, (lead,))  # nothing new: not kept
    assert corpus.pick(random.Random(1)) == ("a", frozenset({"x"}), (lead,))
