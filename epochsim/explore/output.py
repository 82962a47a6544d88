"""The counterexample directory: scripted scenario, its replayed trace and verdict, a report.

Contract: `write_counterexample(out_dir, scenario, case, invariant, origin)` writes
`counterexample.toml`, an ordinary scripted scenario (`scenario_to_toml`: the scenario's
cluster, topics, protocol and workload with the case's workload tweaks, the case's steps as
[[faults]], `seed` = the run seed, `expect = "violation:<invariant>"`), checks that it parses,
replays it once with `run_scenario` (whole run, no early stop) into `trace.jsonl` and
`verdict.json`, draws the timeline unless told not to, and returns the replay's verdict. The
TOML text depends only on its inputs, so the same search gives the same bytes.
`write_report` writes `explore.json` (sorted keys).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

from epochsim.explore.oracle import MODEL_ERROR
from epochsim.explore.strategies import apply_workload
from epochsim.explore.words import story
from epochsim.runner import draw_timeline, run_scenario
from scenarios.schema import ScenarioError, parse_scenario
from scenarios.writer import scenario_to_toml
from sim.core.files import atomic_write, write_text

#: what a search writes into its --out: a later search there removes them all first (--force)
SEARCH_FILES = ("counterexample.toml", "trace.jsonl", "verdict.json", "explore.json",
                "timeline.png", "timeline.html", "coverage.png", "report.html")


def counterexample_scenario(scenario, case, invariant: str, origin: str):
    """The scripted Scenario that replays `case` (see the module contract)."""
    expect = "pass" if invariant == MODEL_ERROR else f"violation:{invariant}"
    words = f"{len(case.steps)} fault step{'s' if len(case.steps) != 1 else ''}"
    what = "make the model raise an exception" if invariant == MODEL_ERROR else f"break {invariant}"
    description = f"{origin}: {words} {what} in scenario {scenario.name}."
    return replace(apply_workload(scenario, case.workload), name=f"{scenario.name}-counterexample",
                   description=description, expect=expect, seed=case.seed,
                   steps=list(case.steps), mixes=[])


def write_counterexample(out_dir: str, scenario, case, invariant: str, origin: str,
                         plot: bool = True) -> dict | None:
    """Write the counterexample files; returns the replay's verdict (None if the model raised)."""
    sc = counterexample_scenario(scenario, case, invariant, origin)
    text = scenario_to_toml(sc, list(case.steps))
    path = os.path.join(out_dir, "counterexample.toml")
    write_text(path, text)
    try:
        parsed = parse_scenario(text, path)
    except ScenarioError as exc:  # the generator made a step the loader rejects: our bug
        raise RuntimeError(f"explore wrote a scenario its own loader rejects: {exc}") from None
    try:
        verdict = run_scenario(parsed, parsed.seed, out_dir)
    except Exception:  # noqa: BLE001 - the model_error counterexample raises by definition
        if invariant != MODEL_ERROR:
            raise
        return None
    if plot:
        draw_timeline(out_dir)
    return verdict


def case_json(case) -> dict:
    return {"seed": case.seed, "steps": [s.to_json() for s in case.steps],
            "workload": [list(w) for w in case.workload], "story": story(case.steps)}


def write_report(out_dir: str, report: dict) -> str:
    path = os.path.join(out_dir, "explore.json")
    with atomic_write(path) as fh:
        json.dump(report, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return path


def workload_words(case) -> list[str]:
    return [f"{name}: {key} = {value!r}" for name, key, value in case.workload]
