"""The traces a sweep keeps: a few failing runs per (scenario, cell, invariant), replayed.

Contract: `TraceKeeper(out, budget)` decides, as chunk results arrive, which failing runs get a
trace: a run is kept while any invariant it broke has fewer than `budget` kept traces in its
(scenario, cell). Workers never write traces (rows only); the driver replays a kept run from
its cell file OUT/cells/<scenario>-<cell>.toml exactly as `epochsim run` does, into
OUT/traces/<scenario>-<cell>/seed-<N>/ (trace.jsonl, verdict.json). So disk use is bounded by
cells x invariants x budget however many seeds run, and every kept trace is also a check that
the row replays: a digest that differs from the worker's is recorded as a replay mismatch
(a determinism bug: workers run under PYTHONHASHSEED=0, the driver under a random one).
Which failing seeds get traces depends on the order chunks finish; the counts never exceed
the budget, also across `--resume` (existing traces are counted at start).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

from sim.core.files import write_text

MISMATCHES = "replay_mismatches.jsonl"


class TraceKeeper:
    def __init__(self, out: str, budget: int):
        self.out, self.budget = out, budget
        self.kept: dict[tuple[str, str, str], int] = defaultdict(int)
        self.mismatches: list[dict] = []
        self.count = 0
        self._load_existing()

    def _load_existing(self) -> None:
        root = os.path.join(self.out, "traces")
        if not os.path.isdir(root):
            return
        self.mismatches = _read_mismatches(os.path.join(root, MISMATCHES))
        for cell_dir in sorted(os.listdir(root)):
            if not os.path.isdir(os.path.join(root, cell_dir)):
                continue
            scenario, _, cell = cell_dir.rpartition("-")
            for run_dir in sorted(os.listdir(os.path.join(root, cell_dir))):
                path = os.path.join(root, cell_dir, run_dir, "verdict.json")
                if not os.path.isfile(path):
                    continue  # a replay cut short by a kill: redone if still wanted
                violated = _violated(path)
                seed = run_dir.removeprefix("seed-")
                if violated is None and seed.isascii() and seed.isdigit():
                    print(f"note: {path} is empty or damaged; its run is replayed again",
                          file=sys.stderr)
                    violated = self.replay(scenario, cell, int(seed), None)["violated"]
                if violated is not None:
                    self._count(scenario, cell, violated)

    def _count(self, scenario: str, cell: str, violated: list[str]) -> None:
        self.count += 1
        for inv in violated:
            self.kept[(scenario, cell, inv)] += 1

    def wanted(self, scenario: str, cell: str, violated: list[str]) -> bool:
        return any(self.kept[(scenario, cell, inv)] < self.budget for inv in violated)

    def consider(self, scenario: str, cell: str, failing: list) -> int:
        """Replay the failing runs (seed, violated, digest) still wanted; returns how many."""
        kept = 0
        for seed, violated, digest in failing:
            if self.budget and self.wanted(scenario, cell, violated):
                self.replay(scenario, cell, seed, digest)
                self._count(scenario, cell, violated)
                kept += 1
        return kept

    def run_dir(self, scenario: str, cell: str, seed: int) -> str:
        return os.path.join(self.out, "traces", f"{scenario}-{cell}", f"seed-{seed}")

    def replay(self, scenario: str, cell: str, seed: int, digest: str | None) -> dict:
        """Replay one run into its trace directory; a digest other than the worker's `digest`
        (None: not known, as for a damaged kept run) is a replay mismatch. Returns the verdict."""
        from epochsim.common import load
        from epochsim.runner import run_scenario

        cell_file = os.path.join(self.out, "cells", f"{scenario}-{cell}.toml")
        verdict = run_scenario(load(cell_file), seed, self.run_dir(scenario, cell, seed))
        if digest is not None and verdict["trace_digest"] != digest:
            found = {"scenario": scenario, "cell": cell, "seed": seed, "worker_digest": digest,
                     "replay_digest": verdict["trace_digest"]}
            self.mismatches.append(found)
            # on disk at once, so a --resume after a kill still reports it
            write_text(os.path.join(self.out, "traces", MISMATCHES),
                       "".join(json.dumps(m, sort_keys=True) + "\n" for m in self.mismatches))
        return verdict


def _violated(path: str) -> list[str] | None:
    """The invariants a kept run's verdict.json says it broke; None when the file is empty,
    not JSON or not a verdict (a kill while an older version wrote it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            verdict = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    violated = verdict.get("violated") if isinstance(verdict, dict) else None
    if isinstance(violated, list) and all(isinstance(v, str) for v in violated):
        return violated
    return None


def _read_mismatches(path: str) -> list[dict]:
    """The replay mismatches recorded so far (a damaged line is left out)."""
    if not os.path.isfile(path):
        return []
    found = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                item = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(item, dict):
                found.append(item)
    return found
