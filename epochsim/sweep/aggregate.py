"""The aggregate job: Spark SQL over OUT/rows, written to OUT/sweep.json.

Contract: `aggregate(spark, out, ...)` reads every chunk file under OUT/rows (Hive partitions
give the `scenario` column back) and computes with Spark SQL:
- `violation_rates`: per (scenario, cell, invariant checked): runs, violating runs, the rate and
  its Wilson 95% score interval (sound at rate 0 or 1 and at small n, unlike the normal one);
- `cell_metrics`: per (scenario, cell): runs, expectation-met and any-violation rates, the mean
  of every metric, and for latency metrics the median, 90th percentile and maximum of the
  per-run values (e.g. the median over runs of each run's p99), with a 95% interval for that
  median (`median_interval_sql`) where the cell has at least `MIN_RUNS_MEDIAN_CI` runs;
- `failing`: per (scenario, cell, invariant) the lowest `failing_per_group` violating seeds,
  each with the repro line that replays it from OUT/cells and its kept trace, if any;
- `totals`: rows, distinct runs (equal when every run was recorded exactly once), runs with a
  violation, expectation misses, simulated events.
`wilson` is the same interval in Python, for tests and reports. Nothing here writes files.
"""

from __future__ import annotations

import math
import os

Z95 = 1.959963984540054


def wilson(violations: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for `violations` out of `runs`."""
    if runs == 0:
        return 0.0, 1.0
    p = violations / runs
    denom = 1 + z * z / runs
    centre = p + z * z / (2 * runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs))
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


def _wilson_sql(x: str, n: str) -> tuple[str, str]:
    z2 = Z95 * Z95
    p = f"({x} / {n})"
    centre = f"({p} + {z2!r} / (2 * {n}))"
    half = f"({Z95!r} * sqrt({p} * (1 - {p}) / {n} + {z2!r} / (4 * {n} * {n})))"
    denom = f"(1 + {z2!r} / {n})"
    return (f"greatest(0.0, ({centre} - {half}) / {denom})",
            f"least(1.0, ({centre} + {half}) / {denom})")


def _rows_view(spark, out: str):
    df = spark.read.parquet(os.path.join(out, "rows"))
    df.createOrReplaceTempView("runs")
    return df


def per_cell_sql(columns: list[str]) -> str:
    """One pass over the rows, grouped by cell: metric summaries, and per invariant the runs
    that checked it, the runs that broke it and the Wilson bounds of that rate."""
    invs = [c[len("inv_"):] for c in columns if c.startswith("inv_")]
    metrics = [c for c in columns if c.startswith("m_") and not c.endswith("_json")]
    inner = ["count(*) AS runs", "count(DISTINCT seed) AS distinct_seeds",
             "avg(CAST(expectation_met AS DOUBLE)) AS expectation_met_rate",
             "avg(CAST(size(violated) > 0 AS DOUBLE)) AS any_violation_rate",
             "sum(CAST(size(violated) > 0 AS INT)) AS violating_runs",
             "sum(CAST(NOT expectation_met AS INT)) AS expectation_missed",
             "avg(wall_ms) AS mean_wall_ms", "sum(events) AS events"]
    outer = ["*"]
    for name in invs:
        inner += [f"count(inv_{name}) AS n__{name}",
                  f"coalesce(sum(CAST(inv_{name} AS INT)), 0) AS x__{name}"]
        low, high = _wilson_sql(f"x__{name}", f"n__{name}")
        outer += [f"CASE WHEN n__{name} > 0 THEN {low} END AS lo__{name}",
                  f"CASE WHEN n__{name} > 0 THEN {high} END AS hi__{name}"]
    for col in metrics:
        name = col[2:]
        inner.append(f"avg({col}) AS mean_{name}")
        if "latency" in name:
            # one percentile aggregate for both quantiles: each one sorts the cell's values
            inner += [f"percentile({col}, array(0.5, 0.9)) AS q__{name}",
                      f"max({col}) AS max_{name}"]
            outer += [f"q__{name}[0] AS median_{name}", f"q__{name}[1] AS p90_{name}"]
            inner += [f"count({col}) AS k__{name}", f"sort_array(collect_list({col})) AS s__{name}"]
            outer += median_interval_sql(name)
    return (f"SELECT {', '.join(outer)} FROM (SELECT scenario, cell, {', '.join(inner)} "
            "FROM runs GROUP BY scenario, cell) ORDER BY scenario, cell")


MIN_RUNS_MEDIAN_CI = 6  # with fewer runs, even [min, max] holds the median with < 95% odds


def median_interval_sql(name: str) -> list[str]:
    """Columns ci_low_median_<name> and ci_high_median_<name>: a distribution-free 95%
    interval for the median of a cell's per-run values, the order statistics of ranks
    floor(n/2 - 0.98 sqrt(n)) and ceil(1 + n/2 + 0.98 sqrt(n)) (clamped to 1..n), from
    `k__<name>` (the count) and `s__<name>` (the sorted values); null below
    MIN_RUNS_MEDIAN_CI runs, where the sample does not allow one."""
    n, values = f"k__{name}", f"s__{name}"
    low = f"CAST(GREATEST(1, FLOOR({n} / 2.0 - 0.98 * sqrt({n}))) AS INT)"
    high = f"CAST(LEAST({n}, CEIL(1 + {n} / 2.0 + 0.98 * sqrt({n}))) AS INT)"
    return [f"CASE WHEN {n} >= {MIN_RUNS_MEDIAN_CI} THEN element_at({values}, {low}) END "
            f"AS ci_low_median_{name}",
            f"CASE WHEN {n} >= {MIN_RUNS_MEDIAN_CI} THEN element_at({values}, {high}) END "
            f"AS ci_high_median_{name}"]


def median_interval(values: list[float]) -> tuple[float, float] | None:
    """The same interval as `median_interval_sql`, in Python (for tests and small samples)."""
    xs, n = sorted(values), len(values)
    if n < MIN_RUNS_MEDIAN_CI:
        return None
    low = max(1, math.floor(n / 2 - 0.98 * math.sqrt(n)))
    high = min(n, math.ceil(1 + n / 2 + 0.98 * math.sqrt(n)))
    return xs[low - 1], xs[high - 1]


def split_cell_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """The per-cell query's wide rows as (violation_rates, cell_metrics)."""
    rates, metrics = [], []
    for row in rows:
        plain = {k: v for k, v in row.items() if "__" not in k}
        metrics.append(plain)
        for key in sorted(k for k in row if k.startswith("n__")):
            name, runs = key[3:], row[key]
            if runs:
                x = row[f"x__{name}"]
                rates.append({"scenario": row["scenario"], "cell": row["cell"],
                              "invariant": name, "runs": runs, "violations": x,
                              "rate": x / runs, "ci_low": row[f"lo__{name}"],
                              "ci_high": row[f"hi__{name}"]})
    return rates, metrics


def failing_seeds(spark, limit: int) -> list[dict]:
    sql = f"""
        SELECT scenario, cell, invariant, seed, trace_digest, first_invariant, first_t_us,
               first_message
        FROM (
            SELECT scenario, cell, invariant, seed, trace_digest, first_invariant, first_t_us,
                   first_message,
                   row_number() OVER (PARTITION BY scenario, cell, invariant ORDER BY seed) AS rn
            FROM runs LATERAL VIEW explode(violated) v AS invariant
        ) WHERE rn <= {int(limit)}
        ORDER BY scenario, cell, invariant, seed"""
    return [r.asDict() for r in spark.sql(sql).collect()]


def totals(metrics: list[dict]) -> dict:
    """Sweep totals from the per-cell rows; `runs` counts distinct seeds per cell, so it equals
    `rows` exactly when no run was recorded twice."""
    return {key: int(sum(m[src] or 0 for m in metrics)) for key, src in
            (("rows", "runs"), ("runs", "distinct_seeds"), ("violating_runs", "violating_runs"),
             ("expectation_missed", "expectation_missed"), ("events", "events"))}


def aggregate(spark, out: str, failing_per_group: int = 5) -> dict:
    """The aggregates of the rows under OUT/rows (see the module contract)."""
    df = _rows_view(spark, out)
    cell_rows = [r.asDict() for r in spark.sql(per_cell_sql(df.columns)).collect()]
    rates, metrics = split_cell_rows(cell_rows)
    result = {"totals": totals(metrics), "violation_rates": rates, "cell_metrics": metrics,
              "failing": failing_seeds(spark, failing_per_group)}
    spark.catalog.dropTempView("runs")
    return result


def add_repro(failing: list[dict], out: str, keeper_dir) -> None:
    """Each failing seed's repro line and kept trace directory (None if not kept)."""
    from epochsim.common import repro_line

    for f in failing:
        key = f"{f['scenario']}-{f['cell']}"
        f["repro"] = repro_line(os.path.join(out, "cells", f"{key}.toml"), f["seed"])
        trace = keeper_dir(f["scenario"], f["cell"], f["seed"])
        f["trace_dir"] = trace if os.path.isfile(os.path.join(trace, "trace.jsonl")) else None
