"""A failing run read back from disk: its scenario, seed, schedule and broken invariant.

Contract: `load_run(path)` accepts a run directory (holding `trace.jsonl`, maybe
`verdict.json`) or a trace file, reads the trace header written by `runner.header_for`
(options, seed, schedule as `FaultStep.to_json()` rows, invariants, expect), and rebuilds the
scenario as a scripted one (its mixes are already in the recorded schedule), validated by a
round trip through `scenario_to_toml` and the loader. It returns a `RecordedRun`; the first
violated invariant comes from `verdict.json` when present (None otherwise). Bad input raises
`UsageError` with a one-line message naming the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from epochsim.errors import UsageError
from reports.rundata import resolve_trace
from scenarios.schema import Scenario, ScenarioError, parse_scenario
from scenarios.writer import scripted_toml
from sim.core.faults import FaultStep
from sim.core.trace import TraceError, read_trace


@dataclass(frozen=True)
class RecordedRun:
    trace_path: str
    scenario: Scenario
    seed: int
    steps: tuple
    first_violated: str | None  # from verdict.json


def _paths(path: str) -> tuple[str, str | None]:
    """(trace path, verdict path or None) for a run directory or a trace file."""
    if os.path.basename(path) == "verdict.json" and os.path.isfile(path):
        # read as a trace, it was "not JSON", which a user who knows the file is JSON cannot act on
        run_dir = os.path.dirname(path) or "."
        raise UsageError(f"{path}: is a run's verdict, and shrink needs the run; pass its run "
                         f"directory ({run_dir}) or {os.path.join(run_dir, 'trace.jsonl')}")
    try:
        trace = resolve_trace(path)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    if not os.path.isfile(trace):
        raise UsageError(f"{path}: no such file or directory; pass a run directory or trace.jsonl")
    verdict = os.path.join(os.path.dirname(trace) or ".", "verdict.json")
    return trace, verdict if os.path.isfile(verdict) else None


def _scenario(header: dict, trace: str) -> tuple[Scenario, tuple]:
    try:
        steps = tuple(FaultStep.from_json(s) for s in header["schedule"])
        top = {"name": str(header["scenario"]), "description": "",
               "expect": header.get("expect", "pass"), "seed": int(header["seed"])}
        text = scripted_toml(top, list(header["invariants"]), header["options"], list(steps))
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise UsageError(f"{trace}: the trace header lacks a usable scenario "
                         f"({type(exc).__name__}: {exc}); pass a trace written by epochsim "
                         "run or suite") from None
    try:
        parsed = parse_scenario(text, trace)
    except ScenarioError as exc:
        raise UsageError(f"{trace}: the recorded scenario does not load: {exc.key}: "
                         f"{exc.problem}") from None
    return parsed, tuple(parsed.steps)


def _first_violated(verdict_path: str | None) -> str | None:
    if verdict_path is None:
        return None
    try:
        with open(verdict_path, encoding="utf-8") as fh:
            verdict = json.load(fh)
        violations = verdict.get("violations") or []
        return violations[0]["invariant"] if violations else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        raise UsageError(f"{verdict_path}: not a verdict written by epochsim; remove it to "
                         "find the violation by re-running") from None


def load_run(path: str) -> RecordedRun:
    trace, verdict = _paths(path)
    try:
        header, _events = read_trace(trace)
    except TraceError as exc:
        raise UsageError(str(exc)) from None
    scenario, steps = _scenario(header, trace)
    first = _first_violated(verdict)
    if first is not None and first not in scenario.invariants:
        raise UsageError(f"{verdict}: names {first}, an invariant the run did not check; "
                         "was it edited? remove it, or pass --target")
    return RecordedRun(trace, scenario, scenario.seed, steps, first)
