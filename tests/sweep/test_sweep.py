"""One small sweep on Spark local[2] (one session for the module): rows replay as `epochsim run`,
traces stay bounded, and a resume after losing a chunk ends with exactly one row per run."""

from __future__ import annotations

import io
import json
import os

import pytest

pytest.importorskip("pyspark")
ds = pytest.importorskip("pyarrow.dataset")

from epochsim.cli import main as cli_main  # noqa: E402
from epochsim.common import load  # noqa: E402
from epochsim.runner import run_scenario  # noqa: E402
from epochsim.sweep.driver import run_sweep  # noqa: E402
from tests.sweep import write_spec  # noqa: E402

SPEC = """
name = "t"
scenarios = ["base.toml"]
seeds = 5
seeds_per_task = 2
traces_per_invariant = 2

[grid]
"protocol.produce_epoch_check" = [false, true]
"""


@pytest.fixture(scope="module")
def spark():
    from epochsim.sweep.spark_job import start_session

    session, started = start_session("local[2]")
    yield session
    if started:
        session.stop()


@pytest.fixture(scope="module")
def swept(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    spec = write_spec(folder, SPEC)
    out = str(folder / "out")
    doc = run_sweep(spec, out, spark=spark, stream=io.StringIO())
    return spec, out, doc


def read_rows(out: str):
    table = ds.dataset(os.path.join(out, "rows"), format="parquet", partitioning="hive").to_table()
    return sorted(table.to_pylist(), key=lambda r: (r["cell"], r["seed"]))


def test_one_row_per_run_and_each_replays_as_epochsim_run(swept):
    _spec, out, doc = swept
    rows = read_rows(out)
    assert len(rows) == 10
    assert len({(r["cell"], r["seed"]) for r in rows}) == 10
    assert doc["totals"]["rows"] == doc["totals"]["runs"] == 10
    for row in (rows[0], rows[-1]):
        cell_file = os.path.join(out, "cells", f"{row['scenario']}-{row['cell']}.toml")
        verdict = run_scenario(load(cell_file), row["seed"])
        assert verdict["trace_digest"] == row["trace_digest"]
        assert verdict["violated"] == row["violated"]
        assert row["m_acked"] == verdict["metrics"]["acked"]


def test_aggregates_rates_and_repro_lines(swept):
    _spec, out, doc = swept
    with open(os.path.join(out, "sweep.json"), encoding="utf-8") as fh:
        assert json.load(fh)["totals"] == doc["totals"]
    rates = {(r["cell"], r["invariant"]): r for r in doc["violation_rates"]}
    off, on = (c["cell"] for c in doc["cells"])
    rows = read_rows(out)
    broke = sum(1 for r in rows if r["cell"] == off and "stale_leader_append" in r["violated"])
    assert rates[(off, "stale_leader_append")]["violations"] == broke > 0
    assert rates[(on, "stale_leader_append")]["violations"] == 0
    low, high = rates[(off, "stale_leader_append")]["ci_low"], rates[(off, "stale_leader_append")]["ci_high"]
    assert low <= broke / 5 <= high
    first = doc["failing"][0]
    assert first["repro"] == (f"epochsim run {out}/cells/{first['scenario']}-{first['cell']}.toml "
                              f"--seed {first['seed']}")
    assert doc["replay_mismatches"] == []


def test_traces_are_kept_for_failing_runs_within_budget(swept):
    _spec, out, _doc = swept
    rows = {(r["cell"], r["seed"]): r for r in read_rows(out)}
    root = os.path.join(out, "traces")
    kept = [(d, s) for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
            for s in os.listdir(os.path.join(root, d))]
    assert 0 < len(kept) <= 2
    for cell_dir, seed_dir in kept:
        with open(os.path.join(root, cell_dir, seed_dir, "verdict.json"), encoding="utf-8") as fh:
            verdict = json.load(fh)
        row = rows[(cell_dir.rpartition("-")[2], int(seed_dir.split("-")[1]))]
        assert verdict["trace_digest"] == row["trace_digest"] and row["violated"]


def test_resume_restores_a_lost_chunk_exactly_once(swept, capsys):
    spec, out, _doc = swept
    before = {(r["cell"], r["seed"]): r["trace_digest"] for r in read_rows(out)}
    rows_dir = os.path.join(out, "rows", "scenario=tiny")
    lost = sorted(os.listdir(rows_dir))[0]
    os.remove(os.path.join(rows_dir, lost))
    assert len(read_rows(out)) < 10
    # the CLI reuses the module's Spark session (an active session is never restarted)
    assert cli_main(["sweep", spec, "--out", out, "--resume", "--master", "local[2]"]) == 0
    assert os.path.isfile(os.path.join(rows_dir, lost))
    after = read_rows(out)
    assert len(after) == 10
    assert {(r["cell"], r["seed"]): r["trace_digest"] for r in after} == before
    printed = capsys.readouterr()
    assert "stale_leader_append" in printed.out and "repro" not in printed.err
    assert cli_main(["sweep", spec, "--out", out]) == 2  # never clobbers without --resume


@pytest.mark.parametrize("damage", ["garbage", "cut_short"])
def test_resume_runs_a_damaged_chunk_again_and_says_so(swept, capsys, damage):
    spec, out, _doc = swept
    before = {(r["cell"], r["seed"]): r["trace_digest"] for r in read_rows(out)}
    rows_dir = os.path.join(out, "rows", "scenario=tiny")
    name = sorted(os.listdir(rows_dir))[-1]
    path = os.path.join(rows_dir, name)
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(b"not parquet at all" if damage == "garbage" else data[: len(data) // 2])
    capsys.readouterr()
    assert cli_main(["sweep", spec, "--out", out, "--resume", "--master", "local[2]"]) == 0
    err = capsys.readouterr().err
    assert f"chunk file rows/scenario=tiny/{name}" in err and "run again" in err, err
    assert "Traceback" not in err
    after = read_rows(out)
    assert {(r["cell"], r["seed"]): r["trace_digest"] for r in after} == before and len(after) == 10


def test_each_cell_says_how_often_its_liveness_rules_judged(swept):
    """`m_judged_<rule>` per run; the cell mean is the share of runs that tested the rule,
    printed as `judged U/P/C %`."""
    from epochsim.sweep.table import print_summary
    from invariants.recovery import judged_shares

    _spec, out, doc = swept
    rows = read_rows(out)
    rule = "under_replicated_after_heal"
    for m in doc["cell_metrics"]:
        mine = [r[f"m_judged_{rule}"] for r in rows if r["cell"] == m["cell"]]
        assert set(mine) <= {0.0, 1.0} and m[f"mean_judged_{rule}"] == pytest.approx(
            sum(mine) / len(mine))
    printed = io.StringIO()
    print_summary(doc, out, printed)
    assert "judged U/P/C %" in printed.getvalue()
    assert judged_shares(doc["cell_metrics"][0]) in printed.getvalue()
    assert judged_shares({}) == "-/-/-"


@pytest.mark.parametrize("n", [5, 6, 10, 37])
def test_the_median_interval_in_spark_is_the_python_one(spark, n):
    """The SQL of the p99 interval picks the same order statistics as `median_interval`;
    below MIN_RUNS_MEDIAN_CI runs there is none."""
    from epochsim.sweep.aggregate import median_interval, median_interval_sql

    values = [float((k * 7919) % 101) for k in range(n)]  # shuffled, with ties
    rows = ", ".join(f"({v})" for v in values)
    row = spark.sql(f"SELECT *, {', '.join(median_interval_sql('x'))} FROM (SELECT count(v) "
                    f"AS k__x, sort_array(collect_list(v)) AS s__x FROM VALUES {rows} AS t(v))"
                    ).collect()[0].asDict()
    expected = median_interval(values)
    got = (row["ci_low_median_x"], row["ci_high_median_x"])
    assert got == ((None, None) if expected is None else expected)
    if expected:
        xs = sorted(values)
        assert expected[0] <= xs[n // 2] <= expected[1] and expected[0] < expected[1]


def test_a_profile_grid_says_which_defaults_moved_with_it(spark, tmp_path, capsys):
    spec = write_spec(tmp_path, 'scenarios = ["base.toml"]\nseeds = 1\n'
                      '[grid]\n"protocol.profile" = ["2.4", "2.5"]\n')
    doc = run_sweep(spec, str(tmp_path / "out"), spark=spark, stream=io.StringIO())
    err = capsys.readouterr().err
    assert len(doc["default_drift"]) == 3 and doc["default_drift"][0].startswith(
        "tiny: cluster.zk_session_timeout_ms is 6000")
    notes = [line for line in err.splitlines() if line.startswith("note: cells differ")]
    assert len(notes) == 3 and "write the option in the base scenario" in notes[0]
    with open(os.path.join(str(tmp_path / "out"), "sweep.json"), encoding="utf-8") as fh:
        assert json.load(fh)["default_drift"] == doc["default_drift"]


def test_a_grid_of_switches_alone_moves_no_default(swept):
    assert swept[2]["default_drift"] == []
