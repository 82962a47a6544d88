"""Per-run time and memory budgets: they stop a run as run.max_events does, and change nothing
in a run they do not stop. (Small budgets, so that they bite at once.)"""

from __future__ import annotations

import json
import os

import pytest

from epochsim import budget
from epochsim.cli import main
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.core.kernel import Kernel


@pytest.mark.parametrize("flag, value, reason, words", [
    ("--time-budget", "0.000001", "time_budget", "the time budget (1e-06 s of wall-clock time"),
    ("--memory-budget", "1", "memory_budget", "the memory budget (1 MiB resident)")])
def test_a_budget_stops_the_run_and_its_pass_is_not_met(capsys, scenario, tmp_path, flag,
                                                        value, reason, words):
    out = tmp_path / "o"
    assert main(["run", str(scenario), "--out", str(out), "--no-plot", flag, value]) == 0
    printed = capsys.readouterr().out
    assert f"stopped by {reason}" in printed
    assert f"expectation 'pass': NOT met: stopped at {words}" in printed, printed
    assert f"raise it with {flag}" in printed
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["run"]["stopped_by"] == reason and not verdict["expectation_met"]
    last = json.loads((out / "trace.jsonl").read_text().splitlines()[-1])
    assert last["kind"] == "end" and last["stopped_by"] == reason and last["settled"] is False
    assert main(["check", str(out)]) == 0  # a whole trace of a run cut short
    assert "stray_replica: not judged: the run was cut off before its end" in capsys.readouterr().out


def test_a_run_within_its_budget_is_the_same_run(scenario):
    sc = load_scenario(str(scenario))
    roomy = run_scenario(sc, 3, budget=budget.Budget(time_s=3600, memory_mb=1 << 20))
    default = run_scenario(sc, 3)
    assert roomy["trace_digest"] == default["trace_digest"]
    assert roomy["run"] == default["run"] and roomy["run"]["stopped_by"] == "until"


def test_the_kernel_watch_only_observes():
    def count(watch) -> tuple:
        kernel = Kernel(until_us=10**9)
        seen = []
        kernel.watch = watch

        def tick(n):
            seen.append((kernel.now_us, n))
            if n < 20_000:
                kernel.call_later(7, tick, n + 1)

        kernel.call_later(0, tick, 0)
        outcome = kernel.run()
        return outcome, seen

    calls = []
    assert count(None) == count(lambda: calls.append(1))
    assert len(calls) > 1  # it was asked, every few thousand callbacks
    stopped, seen = count(lambda: "time_budget")
    assert stopped.stopped_by == "time_budget" and stopped.events == len(seen)


def test_a_budget_flag_holds_for_its_command_only(capsys, scenario, tmp_path):
    os.environ.pop(budget.ENV_TIME, None)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--no-plot",
                 "--time-budget", "5"]) == 0
    assert budget.ENV_TIME not in os.environ
    assert budget.current() == budget.Budget()


def test_suite_workers_inherit_the_budget(capsys, scenario, tmp_path):
    code = main(["suite", str(scenario), "--jobs", "2", "--out", str(tmp_path / "o"),
                 "--memory-budget", "1"])
    assert code == 1  # the pass it expects is not met
    doc = json.loads((tmp_path / "o" / "suite.json").read_text())
    assert {r["stopped_by"] for r in doc["runs"]} == {"memory_budget"}
    assert "cut short by the memory budget" in capsys.readouterr().out


@pytest.mark.parametrize("flag, value", [("--time-budget", "0"), ("--time-budget", "nan"),
                                         ("--time-budget", "inf"), ("--memory-budget", "-5"),
                                         ("--memory-budget", "1.5")])
def test_a_budget_must_be_a_positive_amount(capsys, scenario, flag, value):
    assert main(["run", str(scenario), flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"argument {flag}" in err, err
