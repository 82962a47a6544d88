"""The sweep section of the HTML report, from a hand-made sweep.json (no Spark, no runs)."""

from __future__ import annotations

import base64
import itertools
import json
import re

import pytest

from epochsim.sweep.aggregate import wilson
from epochsim.sweep.cells import cell_id

pytest.importorskip("matplotlib")
from reports.sweep_report import render_sweep_section

PNG = b"\x89PNG\r\n\x1a\n"


def sweep_doc(grid: dict) -> dict:
    """A sweep.json over `grid`: the rate of stale_leader_append grows along the grid."""
    keys = list(grid)
    cells, rates, metrics, failing = [], [], [], []
    for n, combo in enumerate(itertools.product(*grid.values())):
        params = dict(zip(keys, combo))
        cid = cell_id(params)
        x = n % 5
        low, high = wilson(x, 10)
        cells.append({"scenario": "s", "cell": cid, "params": params, "base": "b.toml",
                      "toml": f"cells/s-{cid}.toml"})
        for inv, v in (("stale_leader_append", x), ("acked_write_lost", 0)):
            lo, hi = wilson(v, 10)
            rates.append({"scenario": "s", "cell": cid, "invariant": inv, "runs": 10,
                          "violations": v, "rate": v / 10, "ci_low": lo, "ci_high": hi})
        metrics.append({"scenario": "s", "cell": cid, "runs": 10,
                        "median_produce_latency_p99_ms": 10.0 + n,
                        "p90_produce_latency_p99_ms": 20.0 + n})
        if x:
            failing.append({"scenario": "s", "cell": cid, "invariant": "stale_leader_append",
                            "seed": 3, "first_message": "b1 appended <x> & more",
                            "repro": f"epochsim run out/cells/s-{cid}.toml --seed 3",
                            "trace_dir": None})
    return {"spec": {"name": "t", "description": "d", "grid": grid, "seeds": 10,
                     "first_seed": 1, "scenarios": [{"name": "s", "path": "b.toml"}]},
            "grid_keys": keys, "cells": cells, "violation_rates": rates, "cell_metrics": metrics,
            "failing": failing, "replay_mismatches": [],
            "totals": {"runs": 10 * len(cells), "rows": 10 * len(cells), "violating_runs": 7}}


@pytest.mark.parametrize("grid, images", [
    ({"protocol.produce_epoch_check": [False, True], "mix[0].params.delay_ms": [250, 1000, 4000]}, 3),
    ({"protocol.produce_epoch_check": [False, True]}, 2),
    ({"a.b": [1, 2], "c.d": [1, 2], "e.f": ["x", "y", "z"]}, 3 + 3 + 1),
])
def test_section_draws_heatmaps_or_rate_plots_and_lists_failing_seeds(tmp_path, grid, images):
    (tmp_path / "sweep.json").write_text(json.dumps(sweep_doc(grid)), encoding="utf-8")
    html = render_sweep_section(str(tmp_path))
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(uris) == images
    assert all(base64.b64decode(u).startswith(PNG) for u in uris)
    assert "epochsim run out/cells/s-" in html
    assert "&lt;x&gt; &amp; more" in html and "<x>" not in html
    assert render_sweep_section(str(tmp_path)) == html  # same input, same fragment


def test_a_kept_trace_is_linked_to_its_run_page_found_under_the_sweep(tmp_path):
    """The trace column links the run page (written beside the kept trace), also when the
    sweep ran from another directory, so its recorded path no longer resolves from here."""
    from reports.html import write_report
    from tests.reports import KIP570, run_to_dir
    doc = sweep_doc({"protocol.produce_epoch_check": [False, True]})
    kept = tmp_path / "traces" / "s-x" / "seed-3"
    run_to_dir(KIP570, str(kept))
    doc["failing"][0]["trace_dir"] = "elsewhere/out/traces/s-x/seed-3"
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    html = render_sweep_section(str(tmp_path), write_page=write_report)
    assert '<a href="traces/s-x/seed-3/report.html">run page</a>' in html
    assert (kept / "report.html").is_file()
    doc["failing"][0]["trace_dir"] = "elsewhere/out/traces/s-y/seed-3"  # not on this disk
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    assert "(gone)" in render_sweep_section(str(tmp_path), write_page=write_report)


def connected(ax) -> list:
    """Lines drawn through several points (not an error bar's caps)."""
    return [ln for ln in ax.get_lines()
            if len(ln.get_xdata()) > 1 and ln.get_linestyle() not in ("None", "none", "")]


def test_a_switch_is_drawn_as_bars_and_a_number_as_a_line():
    from matplotlib.container import BarContainer

    from reports.style import drawing
    from reports.sweep_report import SweepData, latency_figure, rate_figure

    switch = SweepData(sweep_doc({"protocol.produce_epoch_check": [False, True]}))
    number = SweepData(sweep_doc({"mix[0].params.delay_ms": [250, 1000, 4000]}))
    with drawing():
        for fig in (latency_figure(switch, "s"),
                    rate_figure(switch, "s", ["stale_leader_append"], {})):
            ax = fig.axes[0]
            assert [c for c in ax.containers if isinstance(c, BarContainer)]
            assert not connected(ax)
            assert ax.get_xlabel() == "protocol.produce_epoch_check"
            assert [t.get_text() for t in ax.get_xticklabels()] == ["false", "true"]
        ax = latency_figure(number, "s").axes[0]
        assert not [c for c in ax.containers if isinstance(c, BarContainer)] and connected(ax)
        assert ax.get_xlabel() == "mix[0].params.delay_ms"


def test_cells_are_named_by_their_values_not_their_ids(tmp_path):
    doc = sweep_doc({"protocol.produce_epoch_check": [False, True]})
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    html = render_sweep_section(str(tmp_path))
    table = html[html.index("<th>protocol.produce_epoch_check</th>"):]
    table = table[:table.index("</table>")]
    assert "<td>false</td>" in table and "<td>true</td>" in table
    assert not [c["cell"] for c in doc["cells"] if c["cell"] in table]


def test_the_p99_interval_is_drawn_where_the_sample_allows_one():
    from reports.style import drawing
    from reports.sweep_report import SweepData, latency_figure

    def bar_spans(with_interval: bool):
        doc = sweep_doc({"mix[0].params.delay_ms": [250, 1000]})
        for m in doc["cell_metrics"]:
            if with_interval:  # aggregate.py writes these only from MIN_RUNS_MEDIAN_CI runs
                m["ci_low_median_produce_latency_p99_ms"] = m["median_produce_latency_p99_ms"] - 2
                m["ci_high_median_produce_latency_p99_ms"] = m["median_produce_latency_p99_ms"] + 5
        with drawing():
            ax = latency_figure(SweepData(doc), "s").axes[0]
            return sorted({round(seg[1][1] - seg[0][1], 6) for c in ax.collections
                           for seg in c.get_segments()})

    assert bar_spans(True) == [7.0]
    assert bar_spans(False) in ([], [0.0])


def test_the_defaults_the_cells_also_differ_in_are_listed(tmp_path):
    doc = sweep_doc({"protocol.profile": ["2.4", "2.5"]})
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    assert "also differ in Kafka's defaults" not in render_sweep_section(str(tmp_path))
    doc["default_drift"] = ['s: cluster.replica_lag_time_max_ms is 10000 for protocol.profile '
                            '= "2.4"; 30000 for protocol.profile = "2.5"']
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    html = render_sweep_section(str(tmp_path))
    assert "also differ in Kafka's defaults per release" in html
    assert "<li>s: cluster.replica_lag_time_max_ms is 10000 for protocol.profile = &quot;2.4&quot;" in html
