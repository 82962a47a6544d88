"""Tests of the reports: timelines, sequence diagrams, stories and HTML pages.

Helpers shared by the test modules: real runs of shipped scenarios written to a directory,
and small hand-built traces.
"""

from __future__ import annotations

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIP570 = os.path.join(ROOT, "scenarios", "kip570-stop-replica-reorder-legacy.toml")


def run_to_dir(scenario_path: str, out_dir: str, seed: int = 1,
               overrides: dict | None = None) -> str:
    """Run a scenario (with `--set`-style `overrides`) into `out_dir` (trace.jsonl +
    verdict.json); returns the trace path."""
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario

    run_scenario(load_scenario(scenario_path, overrides or {}), seed, str(out_dir))
    return os.path.join(str(out_dir), "trace.jsonl")


def write_trace(path: str, events: list[dict], invariants: list[str] | None = None) -> str:
    """A hand-built trace: a header, then `events` numbered with dense seqs."""
    header = {"type": "header", "format": "epochsim-trace/1", "scenario": "hand-built",
              "seed": 0, "options": {"cluster": {"brokers": 3}, "protocol": {"profile": "test"}}, "schedule": [],
              "invariants": invariants or [], "expect": "pass"}
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for seq, ev in enumerate(events):
            fh.write(json.dumps({"seq": seq, **ev}) + "\n")
    return path


def many_partitions_toml(partitions: int = 40) -> str:
    """A short scenario with many partitions and a broker crash, for aggregation tests."""
    return f"""
name = "many-partitions"
expect = "pass"
seed = 2
[run]
duration_ms = 4000
settle_ms = 1000
[cluster]
brokers = 4
[[topics]]
name = "m"
partitions = {partitions}
replication_factor = 3
[[producers]]
name = "p1"
topic = "m"
records_per_sec = 400
linger_ms = 20
[[faults]]
at_ms = 1000
action = "crash"
target = "b2"
[[faults]]
at_ms = 2000
action = "restart"
target = "b2"
"""
