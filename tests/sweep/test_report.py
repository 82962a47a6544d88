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
    from tests.reports import KIP570, run_to_dir
    doc = sweep_doc({"protocol.produce_epoch_check": [False, True]})
    kept = tmp_path / "traces" / "s-x" / "seed-3"
    run_to_dir(KIP570, str(kept))
    doc["failing"][0]["trace_dir"] = "elsewhere/out/traces/s-x/seed-3"
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    html = render_sweep_section(str(tmp_path))
    assert '<a href="traces/s-x/seed-3/report.html">run page</a>' in html
    assert (kept / "report.html").is_file()
    doc["failing"][0]["trace_dir"] = "elsewhere/out/traces/s-y/seed-3"  # not on this disk
    (tmp_path / "sweep.json").write_text(json.dumps(doc), encoding="utf-8")
    assert "(gone)" in render_sweep_section(str(tmp_path))
