"""Benchmark (not a test): is the run time of a wide cluster linear in its events?

Runs `benchmarks/scenarios/wide-20x1000.toml` (3 brokers, 20 topics x 1,000 partitions x 3
replicas, one producer) as `epochsim run` does, trace file and invariants included, cut at
each of several event caps (`run.max_events`), in this one process. For each cap it reports
the wall time, the simulated time reached, the trace lines, and the marginal cost: the wall
time per kernel event between this cap and the one before. A run whose work per event does
not grow with the run has a flat marginal cost; a request whose work is proportional to every
partition the broker holds, rather than to what the request names, makes it climb as the
cluster's follower fetches multiply. The last columns are the marginal rate (kernel events per
wall second) and the ratio of each marginal cost to the first, the numbers to watch
(docs/performance.md records them).

    python -m benchmarks.bench_wide [--caps 20000,50000,100000,150000] [--repeat 3] [--seed 1]
    python -m benchmarks.bench_wide --set protocol.fetch_sessions=false --caps 20000,40500,41000

The first ~40,000 events of seed 1 are the set-up (the controller creates 20,000 partitions
and sends their LeaderAndIsr and UpdateMetadata, all within the first simulated millisecond);
the caps after it time the steady state, where follower Fetches dominate. Each cap is a run of
its own from the start; `--repeat N` runs the caps N times, in turn, and keeps each cap's
fastest run (a shared machine slows some runs down, never speeds one up). `--set` edits the
scenario as `epochsim run --set` does: without fetch sessions (KIP-227) every follower Fetch
names, and its leader reads, every partition the follower follows.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from epochsim.budget import Budget
from epochsim.common import parse_sets
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario

SCENARIO = os.path.join(os.path.dirname(__file__), "scenarios", "wide-20x1000.toml")


def timed_run(cap: int, seed: int, sets: list[str] = ()) -> dict:
    """One run cut at `cap` kernel events: wall s, events, simulated s, trace lines (under a
    time budget of a day: the default ten minutes would cut the larger caps short)."""
    scenario = load_scenario(SCENARIO, parse_sets([f"run.max_events={cap}", *sets]))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        verdict = run_scenario(scenario, seed, tmp, budget=Budget(time_s=86_400))
        wall = time.perf_counter() - started
        with open(os.path.join(tmp, "trace.jsonl"), "rb") as fh:
            lines = sum(1 for _ in fh) - 1
    assert verdict["run"]["stopped_by"] == "max_events", verdict["run"]
    return {"cap": cap, "wall_s": wall, "events": verdict["run"]["events"],
            "sim_s": verdict["run"]["end_us"] / 1e6, "lines": lines}


def table(rows: list[dict]) -> list[str]:
    out = [f"{'events':>8} {'wall s':>8} {'sim s':>7} {'trace lines':>11} "
           f"{'ms/event (marginal)':>20} {'events/s':>9} {'x first':>8}"]
    first = None
    for before, row in zip([None, *rows], rows):
        if before is None:
            marginal = row["wall_s"] / row["events"]
        else:
            marginal = (row["wall_s"] - before["wall_s"]) / (row["events"] - before["events"])
        first = first or marginal
        out.append(f"{row['events']:>8,} {row['wall_s']:>8.2f} {row['sim_s']:>7.3f} "
                   f"{row['lines']:>11,} {marginal * 1000:>20.3f} {1 / marginal:>9,.0f} "
                   f"{marginal / first:>8.2f}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caps", default="20000,50000,100000,150000",
                        help="kernel event caps, comma-separated, increasing")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each cap, in turn; the fastest is kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="edit the scenario, as `epochsim run --set` does (repeatable)")
    args = parser.parse_args(argv)
    caps = [int(c) for c in args.caps.split(",")]
    best: dict[int, dict] = {}
    for _ in range(args.repeat):
        for cap in caps:
            row = timed_run(cap, args.seed, args.set)
            print(f"  {cap:,} events: {row['wall_s']:.2f} s", flush=True)
            if cap not in best or row["wall_s"] < best[cap]["wall_s"]:
                best[cap] = row
    rows = [best[cap] for cap in caps]
    edits = f" ({', '.join(args.set)})" if args.set else ""
    print(f"wide-20x1000 seed {args.seed}{edits}: full run (trace file + invariants), one "
          f"process, fastest of {args.repeat}")
    for line in table(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
