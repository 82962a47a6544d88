"""Benchmark (not a test): simulated time vs wall time for the standard failover scenario.

Runs `benchmarks/scenarios/failover-standard.toml` (3 brokers, 12 partitions x 3 replicas, two
acks=all producers, 60 s simulated, a controller failover and broker restarts) several times in
this one process, with the trace streamed to a real file as `epochsim run` does, and reports
the speed-up over real time (simulated seconds per wall second) and events per second. The
goal of the control-plane issue is >= 100x on one core.

`--breakdown` also times, in each repeat, the same run without the online invariants, and the
model alone (no invariants, no trace file, and the trace's JSON encoding replaced by a stub),
so the share of each layer is measured in one process rather than estimated by a profiler.
Every variant must run the same simulation (the benchmark compares their kernel event counts);
the model-alone variant cannot give the same digest, as it encodes nothing. A last variant runs
`floor_model`: the same steady traffic with no protocol, no simpy, no trace and no invariants,
a lower bound on what any model of this traffic costs in this interpreter.

    python -m benchmarks.bench_failover [--repeat 3] [--seed 1] [--breakdown]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from unittest import mock

from benchmarks.floor_model import run_floor
from epochsim.runner import header_for, run_scenario, schedule_for
from scenarios.schema import load_scenario
from sim.core import trace as trace_module
from sim.core.trace import Trace
from sim.kafka.cluster import Cluster

SCENARIO = os.path.join(os.path.dirname(__file__), "scenarios", "failover-standard.toml")


def full_run(scenario, seed: int) -> tuple[float, int, int]:
    """What `epochsim run` does: (wall s, kernel events, trace bytes)."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        verdict = run_scenario(scenario, seed, tmp)
        wall = time.perf_counter() - started
        size = os.path.getsize(os.path.join(tmp, "trace.jsonl"))
    return wall, verdict["run"]["events"], size


def _cluster_run(scenario, seed: int, sink) -> tuple[float, int]:
    """Run the cluster with no invariants, the trace going to `sink` (None: memory only);
    (wall s, kernel events), the trace flushed within the timed span."""
    schedule = schedule_for(scenario, seed)
    trace = Trace(header_for(scenario, seed, schedule), sink)
    cluster = Cluster(scenario.options, schedule, seed, trace)
    started = time.perf_counter()
    outcome = cluster.run()
    trace.flush()
    return time.perf_counter() - started, outcome.events


def model_alone(scenario, seed: int) -> tuple[float, int, int]:
    """The cluster run with the trace in memory, no invariants, and the trace's JSON encoding
    replaced by a stub: what the model itself costs (wall s, kernel events, 0)."""
    with mock.patch.object(trace_module, "json_text", lambda _obj: "{}"):
        wall, events = _cluster_run(scenario, seed, None)
    return wall, events, 0


def file_no_invariants(scenario, seed: int) -> tuple[float, int, int]:
    """The trace streamed to a real file, no invariants: (wall s, kernel events, bytes)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.jsonl")
        with open(path, "w", encoding="utf-8", buffering=1 << 20) as sink:
            wall, events = _cluster_run(scenario, seed, sink)
        return wall, events, os.path.getsize(path)


def floor(scenario, seed: int) -> tuple[float, None, int]:
    """`floor_model.run_floor` on the scenario's options: (wall s, None, 0). It runs its own
    event loop, so it has no kernel event count to compare."""
    started = time.perf_counter()
    run_floor(scenario.options, seed)
    return time.perf_counter() - started, None, 0


VARIANTS = {
    "full (trace file + invariants)": full_run,
    "trace file, no invariants": file_no_invariants,
    "model alone (no trace, no invariants)": model_alone,
    "floor: same traffic, no protocol": floor,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the run without invariants, the model alone, and the "
                             "floor (benchmarks/floor_model.py)")
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    simulated_s = scenario.options["run"]["duration_ms"] / 1000
    names = list(VARIANTS) if args.breakdown else list(VARIANTS)[:1]
    walls: dict[str, list[float]] = {name: [] for name in names}
    seen, trace_mb = set(), 0.0
    for _ in range(args.repeat):
        for name in names:  # interleaved, so a burst of load hits every variant alike
            wall, events, size = VARIANTS[name](scenario, args.seed)
            walls[name].append(wall)
            if events is not None:
                seen.add(events)
            if size:
                trace_mb = size / 1e6
    if len(seen) != 1:
        raise SystemExit(f"the variants ran different simulations (kernel events {sorted(seen)})")
    print(f"failover-standard seed {args.seed}: {simulated_s:.0f} s simulated, {seen.pop()} kernel "
          f"events, trace {trace_mb:.1f} MB, {args.repeat} repeats")
    print(f"{'variant':<40} {'best_s':>8} {'median_s':>9} {'best_x':>8} {'median_x':>9}")
    for name in names:
        ws = sorted(walls[name])
        best, median = ws[0], ws[len(ws) // 2]
        print(f"{name:<40} {best:8.3f} {median:9.3f} {simulated_s / best:8.1f} "
              f"{simulated_s / median:9.1f}")
    print("goal: >= 100x real time for the full run")


if __name__ == "__main__":
    main()
