"""One sweep row per run, its Arrow schema, and the chunk-keyed Parquet writer.

Contract:
- `verdict_row(verdict, cell, params, grid_keys, wall_ms)` flattens a `run_scenario` verdict:
  cell id, params (JSON and one `p_<key>` column each), seed, trace digest, expectation,
  violated invariants, the first violation, one `inv_<name>` boolean per known invariant (null
  when the run did not check it), every scalar metric as `m_<name>` (float64; dict metrics as
  `m_<name>_json`), `m_judged_<rule>` per after-heal liveness rule (1.0 when it judged
  something, 0.0 when it held vacuously, null when unchecked), run events, end time, stop
  reason and wall time;
- `table_for(rows, grid)` builds the Arrow table with a schema that depends only on the grid
  and the invariant list, so every chunk file of a sweep has the same columns;
- `write_chunk(out, chunk, table)` writes OUT/<chunk.relpath()> atomically (temp file in the
  same directory, then os.replace): a chunk file either holds all its rows or does not exist,
  and writing it again (a retried task, a resumed sweep) replaces it, never adds to it.
The scenario name is not a column in the files: it is the Hive partition directory
(`scenario=<name>`), which Spark and `pyarrow.dataset(..., partitioning="hive")` turn back
into a column.
"""

from __future__ import annotations

import json
import os

from epochsim.sweep.cells import param_column
from invariants.recovery import AFTER_HEAL
from sim.core.files import atomic_write, is_temp_name

FIXED_COLUMNS = ("cell", "params_json", "seed", "chunk", "trace_digest", "expect",
                 "expectation_met", "violated", "n_violations", "first_invariant", "first_t_us",
                 "first_message", "events", "end_us", "stopped_by", "wall_ms", "harness_version")


def all_invariants() -> list[str]:
    from scenarios.schema import ALL_INVARIANTS

    return list(ALL_INVARIANTS)


def verdict_row(verdict: dict, cell: str, params: dict, chunk_id: str, wall_ms: float) -> dict:
    """The row of one run (see the module contract)."""
    violations = verdict["violations"]
    first = min(violations, key=lambda v: (v["t_us"], v["seqs"])) if violations else None
    row = {"cell": cell, "params_json": json.dumps(params, sort_keys=True),
           "seed": verdict["seed"], "chunk": chunk_id, "trace_digest": verdict["trace_digest"],
           "expect": verdict["expect"], "expectation_met": verdict["expectation_met"],
           "violated": list(verdict["violated"]), "n_violations": len(violations),
           "first_invariant": first["invariant"] if first else None,
           "first_t_us": first["t_us"] if first else None,
           "first_message": first["message"] if first else None,
           "events": verdict["run"]["events"], "end_us": verdict["run"]["end_us"],
           "stopped_by": verdict["run"]["stopped_by"], "wall_ms": round(wall_ms, 3),
           "harness_version": verdict["harness_version"]}
    for key, value in params.items():
        row[param_column(key)] = value
    checked = set(verdict["invariants"])
    violated = set(verdict["violated"])
    for name in all_invariants():
        row[f"inv_{name}"] = (name in violated) if name in checked else None
    for name, value in verdict["metrics"].items():
        if isinstance(value, dict | list):
            row[f"m_{name}_json"] = json.dumps(value, sort_keys=True)
        else:
            row[f"m_{name}"] = None if value is None else float(value)
    # whether each after-heal rule judged something (1.0) or held vacuously (0.0); a cell's
    # mean is the share of its runs that tested the rule (null: the run did not check it)
    judged = verdict["metrics"].get("liveness_judged", {})
    for rule in AFTER_HEAL:
        row[f"m_judged_{rule}"] = float(judged[rule] > 0) if rule in judged else None
    return row


def _param_type(values: list):
    """One Arrow type for a grid key's values: bool, int64, float64, string, or JSON text."""
    import pyarrow as pa

    if all(isinstance(v, bool) for v in values):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return pa.float64()
    if all(isinstance(v, str) for v in values):
        return pa.string()
    return None  # mixed or structured: stored as JSON text


def table_for(rows: list[dict], grid: dict):
    """The Arrow table of a chunk's rows (see the module contract)."""
    import pyarrow as pa

    fields = [pa.field("cell", pa.string()), pa.field("params_json", pa.string())]
    params = {}
    for key, values in grid.items():
        typ = _param_type(values)
        params[param_column(key)] = typ is None
        fields.append(pa.field(param_column(key), typ or pa.string()))
    fields += [pa.field("seed", pa.int64()), pa.field("chunk", pa.string()),
               pa.field("trace_digest", pa.string()), pa.field("expect", pa.string()),
               pa.field("expectation_met", pa.bool_()),
               pa.field("violated", pa.list_(pa.string())), pa.field("n_violations", pa.int32()),
               pa.field("first_invariant", pa.string()), pa.field("first_t_us", pa.int64()),
               pa.field("first_message", pa.string())]
    fields += [pa.field(f"inv_{name}", pa.bool_()) for name in all_invariants()]
    metric_cols = sorted({k for r in rows for k in r if k.startswith("m_")})
    fields += [pa.field(k, pa.string() if k.endswith("_json") else pa.float64())
               for k in metric_cols]
    fields += [pa.field("events", pa.int64()), pa.field("end_us", pa.int64()),
               pa.field("stopped_by", pa.string()), pa.field("wall_ms", pa.float64()),
               pa.field("harness_version", pa.string())]
    schema = pa.schema(fields)
    for col, as_json in params.items():
        if as_json:
            rows = [{**r, col: json.dumps(r[col], sort_keys=True)} for r in rows]
    return pa.Table.from_pylist(rows, schema=schema)


def write_chunk(out: str, relpath: str, table) -> str:
    """Write `table` to OUT/relpath atomically; returns the final path."""
    import pyarrow.parquet as pq

    final = os.path.join(out, relpath)
    folder = os.path.dirname(final)
    os.makedirs(folder, exist_ok=True)
    # A leading dot keeps a half-written file out of every Parquet reader's listing.
    with atomic_write(final, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
    return final


def done_chunks(out: str, expected: dict[str, int]) -> tuple[set[str], list[str]]:
    """(done, damaged) among the chunk files `expected` names (relative path -> runs).

    A chunk is done when its file exists and its Parquet footer holds exactly its runs' rows.
    Chunks are written atomically, so a damaged file (unreadable, cut short, edited) was broken
    after the sweep wrote it; its runs are pending again, and the caller says so."""
    import pyarrow.parquet as pq

    done, damaged = set(), []
    for rel, runs in expected.items():
        path = os.path.join(out, rel)
        if not os.path.isfile(path):
            continue
        try:
            rows = pq.read_metadata(path).num_rows
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            damaged.append(f"{rel} ({str(exc).splitlines()[0][:80]})")
            continue
        if rows == runs:
            done.add(rel)
        else:
            damaged.append(f"{rel} ({rows} rows, not {runs})")
    return done, damaged


def remove_temp_files(out: str) -> int:
    """Delete half-written temp files a killed sweep left behind; returns how many."""
    removed = 0
    for folder, _dirs, files in os.walk(os.path.join(out, "rows")):
        for name in files:
            if is_temp_name(name):
                os.remove(os.path.join(folder, name))
                removed += 1
    return removed
