"""Run one chunk of a sweep: a cell's scenario at a range of seeds, one row per run.

Contract: `run_chunk(chunk, cell)` parses the cell's scenario TOML exactly as `epochsim run`
parses the file OUT/cells/<scenario>-<cell>.toml, runs each seed through
`epochsim.runner.run_scenario` with no output directory (no trace is written, so memory and
disk stay flat however many seeds run), and returns a `ChunkResult` holding the rows. It is
what a Spark task executes; the benchmark's pool and single-process baselines call it too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from epochsim.sweep.cells import Cell, Chunk
from epochsim.sweep.rows import verdict_row

# A Python worker is reused across tasks (spark.python.worker.reuse): parse each cell once.
_PARSED: dict[tuple[str, str], object] = {}
_PARSED_MAX = 64


@dataclass(frozen=True)
class ChunkResult:
    chunk: Chunk
    rows: list
    wall_s: float

    @property
    def violating_runs(self) -> int:
        return sum(1 for r in self.rows if r["violated"])

    @property
    def failing(self) -> list:
        """(seed, violated invariants, trace digest) of each run that broke an invariant."""
        return [(r["seed"], r["violated"], r["trace_digest"]) for r in self.rows if r["violated"]]


def cell_scenario(cell: Cell):
    """The cell's Scenario, parsed from its TOML text under the name its repro file has."""
    from scenarios.schema import parse_scenario

    key = (cell.key, cell.toml)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()  # bounded: a worker's memory stays flat over any number of cells
        _PARSED[key] = parse_scenario(cell.toml, cell.toml_relpath())
    return _PARSED[key]


def run_chunk(chunk: Chunk, cell: Cell) -> ChunkResult:
    from epochsim.runner import run_scenario

    started = time.perf_counter()
    scenario = cell_scenario(cell)
    rows = []
    for seed in range(chunk.lo, chunk.hi):
        t0 = time.perf_counter()
        verdict = run_scenario(scenario, seed)
        wall_ms = (time.perf_counter() - t0) * 1000
        rows.append(verdict_row(verdict, cell.cell, cell.params, chunk.id, wall_ms))
    return ChunkResult(chunk, rows, time.perf_counter() - started)
