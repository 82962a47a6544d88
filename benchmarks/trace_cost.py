"""Benchmark (not a test): what recording the standard failover run's trace costs by itself.

Runs `benchmarks/scenarios/failover-standard.toml` once, keeping its events, then times, in
this one process, only what the trace does with them after the model has made them: each
event's JSON text as `Trace.emit` writes it (`sim.core.trace.json_text`), the SHA-256 digest
fed as `Trace.write_pending` feeds it (in batches of `HASH_BATCH` lines), and the bytes
written to a real file. No model, no simpy, no invariants.

The control-plane issue asks for the whole run at >= 100x real time, which leaves 60 s / 100
= 0.6 s of wall time for everything. This prints the trace's own cost beside that budget, so
anyone can check on their machine whether a complete trace alone fits in it.

    python -m benchmarks.trace_cost [--repeat 5] [--seed 1]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time

from benchmarks.bench_failover import SCENARIO
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.core.trace import HASH_BATCH, json_text


def record(events: list[dict], path: str) -> tuple[float, int]:
    """Encode, hash and write `events` as the trace does: (wall s, bytes)."""
    digest = hashlib.sha256()
    written = 0
    started = time.perf_counter()
    with open(path, "wb", buffering=1 << 20) as sink:
        pending: list[str] = []
        for ev in events:
            pending.append(json_text(ev) + "\n")
            if len(pending) >= HASH_BATCH:
                data = "".join(pending).encode()
                pending.clear()
                digest.update(data)
                written += sink.write(data)
        data = "".join(pending).encode()
        digest.update(data)
        written += sink.write(data)
    digest.hexdigest()
    return time.perf_counter() - started, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    simulated_s = scenario.options.run.duration_ms / 1000
    events = run_scenario(scenario, args.seed, keep_events=True)["_events"]
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            wall, size = record(events, os.path.join(tmp, "trace.jsonl"))
            walls.append(wall)
    walls.sort()
    budget = simulated_s / 100
    print(f"failover-standard seed {args.seed}: {len(events)} events, {size / 1e6:.1f} MB, "
          f"{args.repeat} repeats")
    print(f"encode + SHA-256 + write: best {walls[0]:.3f} s, median {walls[len(walls) // 2]:.3f} s")
    print(f"the whole run's budget at 100x real time: {budget:.3f} s; the trace alone takes "
          f"{walls[0] / budget:.0%} of it at best")


if __name__ == "__main__":
    main()
