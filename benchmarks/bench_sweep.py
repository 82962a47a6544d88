"""Sweep throughput: Spark local[2] vs multiprocessing.Pool(2) vs one process, same workload.

Run: python -m benchmarks.bench_sweep [--seeds N] [--seeds-per-task K] [--in-flight J]
                                      [--spec SPEC] [--repeats R]

The workload is the chunk plan of SPEC (default: the demo sweep, 2 cells) at --seeds seeds per
cell: every mode runs exactly the same chunks through `epochsim.sweep.worker.run_chunk` and
hands each result to the same callback the sweep driver uses (Parquet file per chunk, in a
temporary directory), so the figures compare only how the chunks are farmed out:
- single: one process, chunk after chunk;
- pool:   multiprocessing.Pool(2), imap_unordered over the chunks;
- spark:  `epochsim.sweep.spark_job.ChunkExecutor` on a local[2] session (one single-task job per
          chunk, J in flight). Session start-up is reported on its own: it is paid once per
          sweep, whatever its size.
Each mode runs --repeats times, interleaved (single, pool, spark, single, ...) so a change in
machine load hits all three; the best rate of each is reported. The three modes must agree on
every (cell, seed) -> trace digest, or the benchmark fails.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

from epochsim.sweep.cells import expand, plan_chunks
from epochsim.sweep.rows import table_for, write_chunk
from epochsim.sweep.spec import load_spec
from epochsim.sweep.worker import run_chunk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SPEC = os.path.join(ROOT, "scenarios", "sweeps", "demo.toml")
WORKERS = 2


class Workload:
    def __init__(self, spec_path: str, seeds: int, per_task: int):
        self.spec = load_spec(spec_path, seeds, per_task)
        self.cells = expand(self.spec)
        self.by_key = {c.key: c for c in self.cells}
        self.chunks = plan_chunks(self.spec, self.cells)
        self.runs = sum(c.runs for c in self.chunks)

    def jobs(self) -> list:
        return [(c, self.by_key[f"{c.scenario}-{c.cell}"]) for c in self.chunks]


class Sink:
    """The driver's per-chunk work: one Parquet file per chunk; digests kept to compare modes."""

    def __init__(self, grid: dict):
        self.grid = grid
        self.out = tempfile.mkdtemp(prefix="epochsim-bench-sweep-")
        self.digests: dict = {}

    def __call__(self, result) -> None:
        write_chunk(self.out, result.chunk.relpath(), table_for(result.rows, self.grid))
        for r in result.rows:
            self.digests[(r["cell"], r["seed"])] = r["trace_digest"]

    def close(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)


def _run_job(job):
    return run_chunk(*job)


def run_single(work: Workload, sink: Sink) -> float:
    t0 = time.perf_counter()
    for job in work.jobs():
        sink(_run_job(job))
    return time.perf_counter() - t0


def run_pool(work: Workload, sink: Sink) -> float:
    t0 = time.perf_counter()
    with multiprocessing.Pool(WORKERS) as pool:
        for result in pool.imap_unordered(_run_job, work.jobs()):
            sink(result)
    return time.perf_counter() - t0


def run_spark(work: Workload, sink: Sink, spark, in_flight: int | None) -> float:
    from epochsim.sweep.spark_job import ChunkExecutor

    t0 = time.perf_counter()
    ChunkExecutor(spark, work.cells, in_flight).run(work.chunks, sink)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=DEFAULT_SPEC)
    parser.add_argument("--seeds", type=int, default=300, help="seeds per cell (default 300)")
    parser.add_argument("--seeds-per-task", type=int, default=20)
    parser.add_argument("--in-flight", type=int, default=None,
                        help="Spark jobs in flight (default: task slots + 1)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args(argv)

    from epochsim.sweep.spark_job import start_session

    work = Workload(args.spec, args.seeds, args.seeds_per_task)
    print(f"workload: {work.runs} runs of {len(work.cells)} cells of {args.spec}, "
          f"{len(work.chunks)} chunks of {args.seeds_per_task} seeds; {os.cpu_count()} cores",
          flush=True)
    t0 = time.perf_counter()
    spark, _ = start_session(f"local[{WORKERS}]")
    start_s = time.perf_counter() - t0
    print(f"spark session start: {start_s:.1f} s", flush=True)
    best: dict[str, float] = {}
    digests: dict[str, dict] = {}
    try:
        for rep in range(args.repeats):
            for mode in ("single", "pool", "spark"):
                sink = Sink(work.spec.grid)
                try:
                    if mode == "single":
                        secs = run_single(work, sink)
                    elif mode == "pool":
                        secs = run_pool(work, sink)
                    else:
                        secs = run_spark(work, sink, spark, args.in_flight)
                finally:
                    sink.close()
                rate = work.runs / secs
                print(f"  repeat {rep + 1} {mode:<6} {secs:7.1f} s  {rate:6.2f} runs/s", flush=True)
                best[mode] = max(best.get(mode, 0.0), rate)
                digests.setdefault(mode, sink.digests)
                if sink.digests != digests[mode] or sink.digests != digests["single"]:
                    print(f"FAIL: {mode} rows differ from the single-process rows", file=sys.stderr)
                    return 1
    finally:
        spark.stop()
    report(best, work.runs, start_s)
    return 0


def report(best: dict, runs: int, start_s: float) -> None:
    print(f"\n{'mode':<8}{'runs/s':>9}{'vs single':>11}{'vs pool':>9}")
    for mode in ("single", "pool", "spark"):
        print(f"{mode:<8}{best[mode]:9.2f}{best[mode] / best['single']:10.2f}x"
              f"{best[mode] / best['pool']:8.2f}x")
    spark_e2e = runs / (runs / best["spark"] + start_s)
    print(f"spark including its {start_s:.1f} s session start: {spark_e2e:.2f} runs/s "
          f"({spark_e2e / best['pool']:.2f}x pool)")
    ok_pool = best["spark"] >= 0.9 * best["pool"]
    ok_single = best["spark"] >= 1.7 * best["single"]
    print(f"goals: spark >= 0.9x pool: {'met' if ok_pool else 'NOT met'}; "
          f"spark >= 1.7x single: {'met' if ok_single else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
