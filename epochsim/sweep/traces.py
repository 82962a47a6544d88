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
from collections import defaultdict

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
        mismatch_file = os.path.join(root, MISMATCHES)
        if os.path.isfile(mismatch_file):
            with open(mismatch_file, encoding="utf-8") as fh:
                self.mismatches = [json.loads(line) for line in fh if line.strip()]
        for cell_dir in sorted(os.listdir(root)):
            if not os.path.isdir(os.path.join(root, cell_dir)):
                continue
            for run_dir in sorted(os.listdir(os.path.join(root, cell_dir))):
                path = os.path.join(root, cell_dir, run_dir, "verdict.json")
                if not os.path.isfile(path):
                    continue  # a replay cut short by a kill: redone if still wanted
                with open(path, encoding="utf-8") as fh:
                    verdict = json.load(fh)
                scenario, _, cell = cell_dir.rpartition("-")
                self._count(scenario, cell, verdict["violated"])

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

    def replay(self, scenario: str, cell: str, seed: int, digest: str) -> None:
        from epochsim.common import load
        from epochsim.runner import run_scenario

        cell_file = os.path.join(self.out, "cells", f"{scenario}-{cell}.toml")
        verdict = run_scenario(load(cell_file), seed, self.run_dir(scenario, cell, seed))
        if verdict["trace_digest"] != digest:
            found = {"scenario": scenario, "cell": cell, "seed": seed, "worker_digest": digest,
                     "replay_digest": verdict["trace_digest"]}
            self.mismatches.append(found)
            # on disk at once, so a --resume after a kill still reports it
            with open(os.path.join(self.out, "traces", MISMATCHES), "a", encoding="utf-8") as fh:
                fh.write(json.dumps(found, sort_keys=True) + "\n")
