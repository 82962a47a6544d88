"""The Python API (`epochsim.api`, docs/api.md): load, parse, build, run, suite; a Run's
verdict, events and story; bad input raises ScenarioError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import pytest

import epochsim
from epochsim import api
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from tests.conftest import ROOT, scenario_path

FIXED = scenario_path("kip570-stop-replica-reorder-fixed")
PASSING = scenario_path("finding-stray-after-lost-stop-replica-full")  # a short run
VIOLATING = scenario_path("finding-stray-after-lost-stop-replica-zk")  # expects stray_replica


def test_a_run_is_the_runs_of_the_command_line(tmp_path):
    """Same digest as the runner `epochsim run` calls; the events in memory are the lines
    written with `out`, and the header is the trace's first line."""
    reference = run_scenario(load_scenario(PASSING), 1)
    kept = epochsim.run(epochsim.load(PASSING))
    written = epochsim.run(PASSING, seed=1, out=tmp_path / "o")
    assert kept.trace_digest == written.trace_digest == reference["trace_digest"]
    assert kept.expectation_met and kept.violations == [] and kept.story() == []
    lines = (tmp_path / "o" / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    events = list(kept.events())
    assert events == [json.loads(line) for line in lines[1:]] == list(written.events())
    assert [e["seq"] for e in events] == list(range(len(events))) and events[-1]["kind"] == "end"
    assert kept.header() == json.loads(lines[0]) and kept.header()["seed"] == 1
    on_disk = json.loads((tmp_path / "o" / "verdict.json").read_text())
    assert written.verdict == on_disk and written.out == str(tmp_path / "o")


def test_overrides_a_violation_its_witnesses_and_its_story():
    run = epochsim.run(epochsim.load(FIXED, {"protocol.profile": "2.5"}))
    assert run.header()["options"]["protocol"]["profile"] == "2.5"
    assert not run.expectation_met and run.expect == "pass"
    first = run.violations[0]
    assert first.invariant == "stop_replica_out_of_order" and run.violated[0] == first.invariant
    by_seq = {e["seq"]: e for e in run.events()}
    assert by_seq[first.seqs[-1]]["kind"] == "stop_replica"
    story = run.story()
    assert story[0].startswith("1. ")
    assert any("VIOLATION stop_replica_out_of_order" in line for line in story[1:])
    later = run.violations[1]
    assert f"VIOLATION {later.invariant}" in "".join(run.story(later))
    assert run.expectation().startswith("expectation 'pass' NOT met: violated ")


def test_parse_and_build_give_the_scenario_load_gives():
    with open(VIOLATING, "rb") as fh:
        data = tomllib.load(fh)
    loaded = epochsim.load(VIOLATING)
    parsed = epochsim.parse(open(VIOLATING, encoding="utf-8").read(), "x.toml")
    built = epochsim.build(data)
    for sc in (parsed, built):
        assert (sc.name, sc.expect, sc.seed, sc.options, sc.steps, sc.invariants) == \
            (loaded.name, loaded.expect, loaded.seed, loaded.options, loaded.steps,
             loaded.invariants)
    assert built.path == "<code>" and parsed.path == "x.toml"
    changed = epochsim.build(data, overrides={"protocol.full_leader_and_isr": True})
    assert epochsim.run(changed).violations == []  # KIP-516's full LeaderAndIsr removes the stray
    assert data["protocol"]["full_leader_and_isr"] is False  # the caller's dict is left as it was


@pytest.mark.parametrize("call, key, words", [
    (lambda: epochsim.load("no/such.toml"), "file", "file not found"),
    (lambda: epochsim.load(FIXED, {"cluster.brokerz": 3}), "cluster.brokerz", "unknown key"),
    (lambda: epochsim.parse("name = [", "bad.toml"), "line 1", "invalid TOML"),
    (lambda: epochsim.build({"expect": "pass", "cluster": {"brokers": "three"}}),
     "cluster.brokers", ""),
    (lambda: epochsim.build({"expect": "pass", "seed": None}), "data", "TOML cannot hold"),
    (lambda: epochsim.build(["expect", "pass"]), "data", "not a dict"),
    (lambda: epochsim.suite(["no/such/dir"]), "file", "no such file or directory"),
    (lambda: epochsim.scenario_files([os.path.join(ROOT, "docs")]), "file", "no *.toml"),
])
def test_bad_input_raises_scenario_error(call, key, words):
    with pytest.raises(epochsim.ScenarioError) as err:
        call()
    assert err.value.key == key and words in err.value.problem
    assert len(str(err.value).splitlines()) == 1 and err.value.fix


@pytest.mark.parametrize("call", [lambda: epochsim.run(PASSING, seed=-1),
                                  lambda: epochsim.run(PASSING, seed="7"),
                                  lambda: epochsim.suite([PASSING], seeds=0)])
def test_bad_seeds_raise_value_error(call):
    with pytest.raises(ValueError, match="seed"):
        call()


def test_a_suite_runs_each_seed_and_replays_a_trace_on_demand(tmp_path):
    folder = tmp_path / "sc"
    folder.mkdir()
    for name in (PASSING, VIOLATING):
        (folder / os.path.basename(name)).write_text(open(name, encoding="utf-8").read())
    (folder / "nested").mkdir()
    (folder / "nested" / "not-a-scenario.toml").write_text("[sweep]\n")  # not searched
    runs = epochsim.suite([folder], seeds=2)
    assert [(r.scenario.name, r.seed, r.expectation_met) for r in runs] == [
        ("finding-stray-after-lost-stop-replica-full", 1, True),
        ("finding-stray-after-lost-stop-replica-full", 2, True),
        ("finding-stray-after-lost-stop-replica-zk", 1, True),
        ("finding-stray-after-lost-stop-replica-zk", 2, True)]
    alone = epochsim.run(VIOLATING, seed=2)
    assert runs[3].trace_digest == alone.trace_digest
    assert list(runs[3].events()) == list(alone.events()) and runs[3].story() == alone.story()


def test_the_package_offers_the_api_on_first_use_only():
    code = ("import sys, epochsim\n"
            "assert 'epochsim.api' not in sys.modules and 'sim.kafka.cluster' not in sys.modules\n"
            "assert epochsim.run is __import__('epochsim.api').api.run\n"
            "assert 'epochsim.api' in sys.modules\n"
            "try:\n    epochsim.no_such_name\nexcept AttributeError:\n    print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr
    assert set(epochsim.API) == set(api.__all__)
    assert all(getattr(epochsim, name) is getattr(api, name) for name in epochsim.API)


@pytest.mark.parametrize("expect, violated, met, note, line", [
    ("pass", [], True, None, "expectation 'pass' met"),
    ("pass", ["a", "b"], False, None, "expectation 'pass' NOT met: violated a, b"),
    ("pass", [], False, "the run stopped at run.max_events", "expectation 'pass' NOT met: the "
     "run stopped at run.max_events"),
    ("violation:a", [], False, None,
     "expectation 'violation:a' NOT met: a was not violated (no invariant was violated)"),
    ("violation:a", ["b"], False, None,
     "expectation 'violation:a' NOT met: a was not violated (violated only b)"),
    ("agree", [], False, "step 1 error: Kafka 74, model 0",
     "expectation 'agree' NOT met: the model disagrees with Kafka: step 1 error: Kafka 74, "
     "model 0"),
])
def test_the_expectation_in_words(expect, violated, met, note, line):
    from epochsim.outcome import expectation_line
    assert expectation_line(expect, violated, met, note) == line
