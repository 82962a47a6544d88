"""Benchmark (not a test): simulated time vs wall time for the standard failover scenario.

Runs `benchmarks/scenarios/failover-standard.toml` (3 brokers, 12 partitions x 3 replicas, two
acks=all producers, 60 s simulated, a controller failover and broker restarts) several times in
this one process, with the trace streamed to a real file as `epochsim run` does, and reports
the speed-up over real time (simulated seconds per wall second) and events per second. The
goal of the control-plane issue is >= 100x on one core.

    python -m benchmarks.bench_failover [--repeat 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario

SCENARIO = os.path.join(os.path.dirname(__file__), "scenarios", "failover-standard.toml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    simulated_s = scenario.options["run"]["duration_ms"] / 1000
    rows = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            verdict = run_scenario(scenario, args.seed, tmp)
            wall = time.perf_counter() - started
            size = os.path.getsize(os.path.join(tmp, "trace.jsonl"))
        rows.append((wall, verdict["run"]["events"], size, verdict))
    best = min(rows, key=lambda r: r[0])
    wall, events, size, verdict = best
    print(f"failover-standard seed {args.seed}: {simulated_s:.0f} s simulated, {events} kernel events, "
          f"trace {size / 1e6:.1f} MB, {verdict['metrics']['acked']} batches acked, "
          f"violations {len(verdict['violations'])}")
    print("run   wall_s   speedup_x   events_per_s")
    for i, (w, ev, _, _) in enumerate(rows, 1):
        print(f"{i:>3} {w:8.3f} {simulated_s / w:11.1f} {ev / w:14.0f}")
    walls = sorted(r[0] for r in rows)
    print(f"best: {simulated_s / wall:.1f}x real time, median {simulated_s / walls[len(walls) // 2]:.1f}x "
          "(goal >= 100x)")


if __name__ == "__main__":
    main()
