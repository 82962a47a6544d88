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

`--load R1,R2,...` instead runs the full variant at each producer rate (records/s, every
producer): how the speed-up depends on the load, the number of record batches acknowledged
per simulated second being what the model's cost follows.

    python -m benchmarks.bench_failover [--repeat 3] [--seed 1] [--breakdown]
    python -m benchmarks.bench_failover --load 50,200,1000,5000 [--repeat 3]
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
    run_floor(scenario.options.to_json(), seed)
    return time.perf_counter() - started, None, 0


VARIANTS = {
    "full (trace file + invariants)": full_run,
    "trace file, no invariants": file_no_invariants,
    "model alone (no trace, no invariants)": model_alone,
    "floor: same traffic, no protocol": floor,
}


def at_rate(records_per_sec: int):
    """The benchmark scenario with every producer sending `records_per_sec`."""
    from epochsim.common import parse_sets
    count = len(load_scenario(SCENARIO).options.producers)
    sets = [f"producers.{i}.records_per_sec={records_per_sec}" for i in range(count)]
    return load_scenario(SCENARIO, parse_sets(sets))


def load_table(rates: list[int], repeat: int, seed: int) -> None:
    """One row per producer rate: batches acked, kernel events, best and median speed-up of
    the full run. The rates are interleaved within each repeat, as the variants are."""
    scenarios = {rate: at_rate(rate) for rate in rates}
    walls: dict[int, list[float]] = {rate: [] for rate in rates}
    facts: dict[int, tuple[int, int]] = {}
    for _ in range(repeat):
        for rate, scenario in scenarios.items():
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as tmp:
                verdict = run_scenario(scenario, seed, tmp)
            walls[rate].append(time.perf_counter() - started)
            facts[rate] = (verdict["metrics"]["acked"], verdict["run"]["events"])
    simulated_s = next(iter(scenarios.values())).options.run.duration_ms / 1000
    print(f"failover-standard seed {seed}, full run, {repeat} repeats")
    print(f"{'records/s each':>14} {'batches acked':>14} {'kernel events':>14} {'best_x':>8} "
          f"{'median_x':>9}")
    for rate in rates:
        ws = sorted(walls[rate])
        acked, events = facts[rate]
        print(f"{rate:>14} {acked:>14} {events:>14} {simulated_s / ws[0]:8.1f} "
              f"{simulated_s / ws[len(ws) // 2]:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the run without invariants, the model alone, and the "
                             "floor (benchmarks/floor_model.py)")
    parser.add_argument("--load", metavar="R1,R2,...",
                        type=lambda text: [int(r) for r in text.split(",")],
                        help="time the full run at these producer rates (records/s each)")
    args = parser.parse_args()
    if args.load:
        return load_table(args.load, args.repeat, args.seed)
    scenario = load_scenario(SCENARIO)
    simulated_s = scenario.options.run.duration_ms / 1000
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
