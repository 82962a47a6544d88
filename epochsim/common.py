"""Helpers shared by CLI commands: loading scenarios, output directories, repro lines."""

from __future__ import annotations

import os
import shlex

from epochsim.errors import UsageError
from scenarios.schema import ScenarioError, load_scenario

OWN_OUTPUTS = {"trace.jsonl", "verdict.json", "timeline.png", "timeline.svg", "sequence.svg",
               "report.html", "counterexample.toml", "explore.json", "suite.json", "sequence.png"}


def load(path: str):
    try:
        return load_scenario(path)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None


def prepare_out_dir(path: str, allowed: set[str] | None = None) -> str:
    """Create `path`, or reuse it when it holds only files epochsim writes; never clobber others."""
    allowed = OWN_OUTPUTS if allowed is None else allowed
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UsageError(f"--out {path}: exists and is not a directory; choose another --out")
        foreign = sorted(f for f in os.listdir(path) if f not in allowed and not f.startswith("."))
        if foreign:
            raise UsageError(f"--out {path}: holds files epochsim did not write ({foreign[0]}, ...); "
                             "choose an empty or new directory")
    os.makedirs(path, exist_ok=True)
    return path


def repro_line(scenario_path: str, seed: int, out: str | None = None) -> str:
    line = f"epochsim run {shlex.quote(scenario_path)} --seed {seed}"
    return line + (f" --out {shlex.quote(out)}" if out else "")


def seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--seed {text!r}: not an integer; pass e.g. --seed 7") from None
    if value < 0:
        raise UsageError(f"--seed {value}: must be >= 0")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"{text!r}: not an integer") from None
    if value <= 0:
        raise UsageError(f"{value}: must be a positive integer")
    return value


def describe_violations(verdict: dict, limit: int = 5) -> list[str]:
    lines = []
    for v in verdict["violations"][:limit]:
        lines.append(f"  VIOLATION {v['invariant']} at {v['t_us'] / 1e6:.6f}s: {v['message']} "
                     f"(events {', '.join(map(str, v['seqs']))})")
    extra = len(verdict["violations"]) - limit
    if extra > 0:
        lines.append(f"  ... and {extra} more")
    return lines
