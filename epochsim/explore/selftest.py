"""The planted-bug matrix: explore each mutant's base scenario, and the correct model.

Contract: `base_path(mutant)` is `scenarios/selftest/<mutant>.toml`. `mutant_task` explores
that base (which plants the mutant) with the mutant's expected invariant as the target,
counting a case only if the same case does not break the invariant without the mutant (so a
model bug the mutant did not plant cannot pass for its detection), and returns a row: found or not, runs to the first failure, shrunk size, wall time, and when not
found, why (the guarded situation was never reached, or it was and held, plus what broke
instead). `clean_bases` turns the bases into correct-model scenarios (mutant removed, expect
"pass"), one per distinct configuration and story; `clean_task` explores one against every invariant.
Tasks take and return plain data, so they can run in worker processes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import scenarios
from epochsim.common import load
from epochsim.errors import UsageError
from sim.kafka.profiles import MUTANTS

SELFTEST_DIR = os.path.join(os.path.dirname(os.path.abspath(scenarios.__file__)), "selftest")


def base_path(mutant: str) -> str:
    return os.path.join(SELFTEST_DIR, f"{mutant}.toml")


def _explore(scenario, budget, seed, target, out, plot, reference=None, shrink_runs=300):
    from epochsim.explore.output import write_counterexample, write_report
    from epochsim.explore.report import explore_report
    from epochsim.explore.search import explore

    started = time.monotonic()
    # the base's scripted faults are every case's base, as `epochsim explore` keeps them
    result = explore(scenario, budget, seed, target, reference=reference, story=True,
                     max_shrink_runs=shrink_runs)
    os.makedirs(out, exist_ok=True)
    report = explore_report(result)
    if result.found:
        write_counterexample(out, scenario, result.case, result.invariant,
                             f"Found by epochsim selftest (search seed {seed})", plot)
    write_report(out, report)
    return result, time.monotonic() - started


def mutant_task(job: tuple) -> dict:
    mutant, budget, seed, out, plot, overrides, shrink_runs = job
    expected = MUTANTS[mutant]
    row = {"mutant": mutant, "expected": expected, "found": False, "runs_to_first": None,
           "steps": None, "time_s": 0.0, "reason": "", "dir": None}
    path = base_path(mutant)
    if not os.path.isfile(path):
        row["reason"] = f"no base scenario scenarios/selftest/{mutant}.toml"
        return row
    try:
        scenario = load(path, overrides)
    except UsageError as exc:
        row["reason"] = str(exc)
        return row
    if scenario.options.protocol.mutant != mutant:
        row["reason"] = f"the base scenario plants {scenario.options.protocol.mutant!r}"
        return row
    result, elapsed = _explore(scenario, budget, seed, expected, os.path.join(out, mutant), plot,
                               reference=without_mutant(scenario), shrink_runs=shrink_runs)
    row.update(found=result.found, time_s=round(elapsed, 1), runs=result.runs,
               seen=dict(sorted(result.seen.items())), dir=os.path.join(out, mutant))
    if result.found:
        row.update(runs_to_first=result.runs_to_first, steps=len(result.case.steps))
    else:
        row["reason"] = not_found_reason(result, expected)
    return row


def not_found_reason(result, expected: str) -> str:
    rel = result.coverage.relevance(expected)
    if rel is not None and not rel["runs"]:
        text = f"never reached: {rel['situation']}"
    elif rel is not None:
        text = f"reached '{rel['situation']}' in {rel['runs']} runs, yet {expected} held"
    else:
        text = f"{expected} held in {result.generated} runs"
    if result.shared:
        text += f"; {result.shared} runs broke it with the correct model too (not counted)"
    others = [f"{name} ({n} runs)" for name, n in sorted(result.seen.items()) if name != expected]
    return text + (f"; broke instead: {', '.join(others)}" if others else "")


def clean_bases(mutants: list[str], overrides: dict | None = None) -> list[tuple[str, list[str]]]:
    """(path of one base, mutants sharing its configuration and story) for each distinct
    correct model: a base's scripted steps are every case's start, so they count too."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for mutant in mutants:
        path = base_path(mutant)
        if not os.path.isfile(path):
            continue
        sc = without_mutant(load(path, overrides))
        key = json.dumps([sc.options.to_json(), sc.invariants,
                          [step.to_json() for step in sc.steps]], sort_keys=True)
        groups.setdefault(key, (path, []))[1].append(mutant)
    return list(groups.values())


def without_mutant(scenario):
    """`scenario` with its planted mutant removed and `expect = "pass"`: the correct model."""
    o = scenario.options
    options = replace(o, protocol=replace(o.protocol, mutant=""))
    return replace(scenario, options=options, expect="pass", name=scenario.name + "-clean")


def clean_task(job: tuple) -> dict:
    path, mutants, budget, seed, out, plot, overrides = job
    scenario = without_mutant(load(path, overrides))
    label = f"clean-{mutants[0]}"
    result, elapsed = _explore(scenario, budget, seed, None, os.path.join(out, label), plot)
    row = {"label": label, "bases": mutants, "clean": not result.found, "runs": result.runs,
           "time_s": round(elapsed, 1), "violated": result.invariant,
           "steps": len(result.case.steps) if result.found else None,
           "dir": os.path.join(out, label)}
    return row
