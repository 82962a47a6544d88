"""One sweep from spec to sweep.json: plan, output directory, chunks on Spark, aggregates.

Contract: `run_sweep(spec_path, out, ...)` validates the spec, every cell and OUT
(`check_out`) before starting Spark, and writes nothing to OUT until Spark has started (a
master that cannot start it leaves OUT as it was); then it creates OUT (`create_out`: the
plan), writes each cell's scenario to OUT/cells, runs every chunk not already on disk, keeps a
bounded set of failing traces, then aggregates with Spark SQL into OUT/sweep.json and returns
that document; before the runs it prints a note for each release-dependent default the
cells differ in beyond their grid keys (`epochsim.sweep.drift`). Exactly once: a chunk's rows are one file
named by the chunk, replaced atomically, and `--resume` runs only chunks without a file, so a
killed sweep resumed to completion holds exactly one row per (scenario, cell, seed).
Ctrl-C propagates as KeyboardInterrupt after the finished chunks are on disk.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import partial

from epochsim.common import check_writable
from epochsim.errors import UsageError, path_problem
from epochsim.progress import is_terminal, phase
from epochsim.sweep.cells import expand, fingerprint, plan_chunks
from epochsim.sweep.drift import default_drift
from epochsim.sweep.progress import Progress
from epochsim.sweep.rows import done_chunks, remove_temp_files, table_for, write_chunk
from epochsim.sweep.spec import load_spec
from epochsim.sweep.traces import TraceKeeper
from sim.core.files import write_text

PLAN_FILE = "plan.json"


def prepare_out(out: str, resume: bool, plan: dict) -> None:
    """A new or empty OUT starts a sweep; a non-empty one only with --resume of the same plan."""
    if not check_out(out, resume, plan):
        create_out(out, plan)


def check_out(out: str, resume: bool, plan: dict) -> bool:
    """Refuse an OUT the sweep may not use, writing nothing; True when it resumes a sweep
    there (same plan), False when it is to be created (`create_out`)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a directory; choose another --out")
    try:
        entries = os.listdir(out) if os.path.isdir(out) else []
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot read it ({exc.strerror}); choose another --out") from None
    plan_path = os.path.join(out, PLAN_FILE)
    if entries and not resume:
        raise UsageError(f"--out {out}: not empty; pass --resume to continue the sweep there, "
                         "or choose a new --out (a sweep never overwrites earlier results)")
    if entries and not os.path.isfile(plan_path):
        raise UsageError(f"--out {out}: holds files that are not a sweep ({sorted(entries)[0]}, "
                         "...); choose an empty or new directory")
    if entries:
        try:
            with open(plan_path, encoding="utf-8") as fh:
                previous = json.load(fh)
        except (OSError, ValueError, RecursionError):  # unreadable, not UTF-8, not JSON
            previous = None
        if not isinstance(previous, dict):
            raise UsageError(f"{plan_path}: not the plan a sweep writes (unreadable or edited); "
                             "start the sweep in a new --out")
        if previous.get("fingerprint") != plan["fingerprint"]:
            raise UsageError(f"--out {out}: was started with a different spec, scenarios, "
                             "--seeds, --jobs-per-task or harness version; resume with the "
                             "same ones, or choose a new --out")
        check_writable(out)
        return True
    if os.path.isdir(out):
        check_writable(out)
    return False


def create_out(out: str, plan: dict) -> None:
    """Make OUT (checked by `check_out`) and write the plan that a --resume must match."""
    try:
        os.makedirs(out, exist_ok=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise UsageError(f"--out {out}: cannot create it ({path_problem(exc)}); choose another "
                         "--out") from None
    check_writable(out)
    _write_json(os.path.join(out, PLAN_FILE), plan)


def _write_json(path: str, document: dict) -> None:
    write_text(path, json.dumps(document, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(value):
    if hasattr(value, "item"):  # numpy / decimal scalars in Spark rows
        return value.item()
    return str(value)


def write_cells(out: str, cells: list) -> None:
    os.makedirs(os.path.join(out, "cells"), exist_ok=True)
    for cell in cells:
        write_text(os.path.join(out, cell.toml_relpath()), cell.toml)


def _violating_on_disk(out: str, relpaths: list[str]) -> int:
    """Runs with a violation in chunk files already written (for a resumed progress line)."""
    if not relpaths:
        return 0
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    total = 0
    for rel in relpaths:
        col = pq.read_table(os.path.join(out, rel), columns=["n_violations"])["n_violations"]
        total += pc.sum(pc.greater(col, 0).cast("int64")).as_py() or 0
    return total


class Sweep:
    """The state of one invocation: spec, cells, chunk plan, and what is already done."""

    def __init__(self, spec_path: str, out: str, seeds=None, seeds_per_task=None,
                 overrides=None):
        self.spec = load_spec(spec_path, seeds, seeds_per_task, overrides)
        self.cells = expand(self.spec)
        self.chunks = plan_chunks(self.spec, self.cells)
        self.out = out
        self.drift = default_drift(self.cells)
        self.plan = {"fingerprint": fingerprint(self.spec, self.cells),
                     "spec": self.spec.to_json(), "chunks": len(self.chunks),
                     "runs": sum(c.runs for c in self.chunks),
                     "cells": [c.key for c in self.cells]}

    def pending(self) -> tuple[list, list[str]]:
        """The chunks still to run, and the damaged chunk files among them (to say so)."""
        done, damaged = done_chunks(self.out, {c.relpath(): c.runs for c in self.chunks})
        return [c for c in self.chunks if c.relpath() not in done], damaged


def run_sweep(spec_path: str, out: str, *, seeds=None, seeds_per_task=None,
              master: str = "local[*]", resume: bool = False, spark_ui: bool = False,
              spark=None, stream=None, overrides=None) -> dict:
    """Run (or resume) the sweep; see the module contract. Returns the sweep.json document."""
    from epochsim.sweep import spark_job

    say = partial(phase, stream=stream)
    sweep = Sweep(spec_path, out, seeds, seeds_per_task, overrides)  # all checks before Spark
    resuming = check_out(out, resume, sweep.plan)
    if spark is None and is_terminal(stream if stream is not None else sys.stderr):
        say(f"starting Spark ({master})")  # a bad master is still one line in a log
    # Spark starts before OUT is touched: a master that cannot start it leaves OUT as it was,
    # so the same command runs again without --resume once the master is right
    started = spark is None
    if spark is None:
        spark, started = spark_job.start_session(master, spark_ui)
    say(f"{sweep.plan['runs']} runs in {len(sweep.chunks)} chunks over {len(sweep.cells)} cells")
    for line in sweep.drift:
        print(f"note: cells differ beyond the grid, by Kafka's defaults per release: {line} "
              "(write the option in the base scenario to compare the grid keys alone)",
              file=sys.stderr)
    try:
        if not resuming:
            create_out(out, sweep.plan)
        remove_temp_files(out)
        write_cells(out, sweep.cells)
        pending, damaged = sweep.pending()
        for what in damaged:
            print(f"note: chunk file {what} is damaged; its runs will be run again",
                  file=sys.stderr)
        keeper = TraceKeeper(out, sweep.spec.traces_per_invariant)
        progress = _progress(sweep, pending, stream)  # after start-up: the rate is the runs'
        t0 = time.monotonic()
        try:
            _execute(spark, sweep, pending, keeper, progress)
        finally:  # a Ctrl-C ends the bar before the resume hint is printed
            progress.finish()
        run_s = time.monotonic() - t0
        return _finish(spark, sweep, keeper, run_s, len(pending), stream)
    finally:
        if started:
            spark.stop()


def _progress(sweep: Sweep, pending: list, stream) -> Progress:
    waiting = {c.id for c in pending}
    done = [c for c in sweep.chunks if c.id not in waiting]
    violating = _violating_on_disk(sweep.out, [c.relpath() for c in done])
    return Progress(sweep.plan["runs"], sum(c.runs for c in done), violating, stream)


def _execute(spark, sweep: Sweep, pending: list, keeper: TraceKeeper, progress: Progress) -> None:
    from epochsim.sweep.spark_job import ChunkExecutor

    if not pending:
        return

    def on_result(result) -> None:
        write_chunk(sweep.out, result.chunk.relpath(), table_for(result.rows, sweep.spec.grid))
        keeper.consider(result.chunk.scenario, result.chunk.cell, result.failing)
        progress.add(result.chunk.runs, result.violating_runs)

    ChunkExecutor(spark, sweep.cells).run(pending, on_result)


def _finish(spark, sweep: Sweep, keeper: TraceKeeper, run_s: float, chunks_run: int,
            stream=None) -> dict:
    from epochsim.sweep.aggregate import add_repro, aggregate

    t0 = time.monotonic()
    phase("aggregating the rows", stream=stream)
    agg = aggregate(spark, sweep.out, failing_per_group=max(1, sweep.spec.traces_per_invariant))
    add_repro(agg["failing"], sweep.out, keeper.run_dir)
    # grid order (the order people wrote the values in), not cell-id order
    rank = {(c.scenario, c.cell): i for i, c in enumerate(sweep.cells)}
    for key in ("violation_rates", "cell_metrics", "failing"):
        agg[key].sort(key=lambda r: rank.get((r["scenario"], r["cell"]), len(rank)))
    document = {
        "spec": sweep.spec.to_json(),
        "cells": [{"scenario": c.scenario, "cell": c.cell, "params": c.params,
                   "base": c.base_path, "toml": c.toml_relpath()} for c in sweep.cells],
        "grid_keys": list(sweep.spec.grid),
        "default_drift": sweep.drift,
        **agg,
        "planned_runs": sweep.plan["runs"],
        "traces_kept": keeper.count,
        "replay_mismatches": keeper.mismatches,
        "timing": {"chunks_run": chunks_run, "run_s": round(run_s, 3),
                   "aggregate_s": round(time.monotonic() - t0, 3)},
    }
    _write_json(os.path.join(sweep.out, "sweep.json"), document)
    return document
