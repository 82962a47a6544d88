"""KRaft metadata lag in the reports: the fold of the metadata log, the timeline's panels, the
interactive page's plots and the run page's lag table; a ZooKeeper-mode run has none of them."""

from __future__ import annotations

import json
import os
import re

import pytest

from reports import metadata_log, metadata_panel
from reports import style as S
from reports.html import write_report
from reports.interactive import write_interactive
from reports.model import build
from reports.rundata import load_run
from reports.timeline import figure
from tests.reports import KIP570, run_to_dir
from tests.reports.browser import Browser, chromium

# b3 applies every metadata batch 300 ms late from the start; t-0's leadership moves at 5 s
KRAFT_LAG = """
name = "kraft-lag-small"
expect = "pass"
seed = 1
faults = [
  { at_ms = 0, action = "slow_metadata", target = "b3", delay_ms = 300 },
  { at_ms = 5000, action = "move_leader", target = "t-0" },
]
[run]
duration_ms = 8000
settle_ms = 1000
[protocol]
profile = "4.1"
[cluster]
brokers = 3
controllers = 3
min_insync_replicas = 2
[[topics]]
name = "t"
partitions = 2
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
records_per_sec = 100
linger_ms = 20
"""
META = re.compile(r'<script type="application/json" id="epochsim-metadata">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def kraft_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("kraft-lag")
    scenario = out / "kraft-lag-small.toml"
    scenario.write_text(KRAFT_LAG, encoding="utf-8")
    run_to_dir(str(scenario), out / "run")
    return out / "run"


@pytest.fixture(scope="module")
def zk_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("zk")
    run_to_dir(KIP570, out)
    return out


def _ev(t, node, kind, **fields):
    return {"t": t, "node": node, "kind": kind, **fields}


HAND_BUILT = [
    _ev(0, "c1", "quorum_leader", epoch=1, end_offset=0, high_watermark=0),
    _ev(10, "c1", "metadata_commit", epoch=1, high_watermark=2,
        records=[[0, 1, {"kind": "LeaderChange"}], [1, 1, {"kind": "RegisterBrokerRecord"}]]),
    _ev(15, "b1", "metadata_apply", from_offset=0, to_offset=2, expected_offset=0, records=[]),
    _ev(20, "b2", "metadata_apply", from_offset=0, to_offset=1, expected_offset=0, records=[]),
    _ev(30, "c1", "metadata_commit", epoch=1, high_watermark=3,
        records=[[2, 1, {"kind": "TopicRecord"}]]),
    _ev(40, "b2", "crash"),
    _ev(50, "b2", "restart"),
    _ev(60, "c1", "quorum_resigned", epoch=1, reason="lost quorum"),
    _ev(70, "c2", "quorum_leader", epoch=2, end_offset=3, high_watermark=3),
    _ev(80, "b1", "metadata_apply", from_offset=2, to_offset=3, expected_offset=2, records=[]),
]


def test_the_fold_gives_each_broker_its_offset_and_lag():
    log = metadata_log.fold(HAND_BUILT, 100)
    assert log.high_watermark == [(0, 0), (10, 2), (30, 3)]
    assert log.applied == {"b1": [(15, 2), (80, 3)], "b2": [(20, 1), (40, None), (50, 0)]}
    assert log.lag("b1") == [(15, 0), (30, 1), (80, 0)]
    assert log.lag("b2") == [(20, 1), (30, 2), (40, None), (50, 3)]
    assert [(q.voter, q.epoch, q.start_us, q.end_us) for q in log.leaders] == [
        ("c1", 1, 0, 60), ("c2", 2, 70, 100)]
    b1, b2 = log.summary()
    assert (b1["applied_offset"], b1["max_records_behind"], b1["longest_behind_ms"]) == (3, 1, 0.05)
    assert (b1["wait_p50_ms"], b1["wait_max_ms"]) == (0.005, 0.05)  # offsets 0, 1: 5 µs; 2: 50
    assert (b2["applied_offset"], b2["max_records_behind"], b2["wait_max_ms"]) == (0, 3, 0.01)
    assert b2["longest_behind_ms"] == 0.08  # behind from 20 µs to the end, down or not


def test_a_zookeeper_mode_run_has_no_metadata_log_panel_or_table(zk_dir, tmp_path):
    run = load_run(str(zk_dir / "trace.jsonl"))
    model = build(run.events, run.end_us)
    assert not model.metadata_log
    with S.drawing():
        titles = [ax.get_title(loc="left") for ax in figure(run, model=model).axes]
    assert metadata_panel.LOG_TITLE not in titles and metadata_panel.LAG_TITLE not in titles
    page = open(write_interactive(run.trace_path, str(tmp_path / "t.html"), run),
                encoding="utf-8").read()
    assert "epochsim-metadata" not in page and "metadata-lanes" not in page


def test_a_kraft_timeline_shows_each_brokers_applied_offset_and_lag(kraft_dir):
    run = load_run(str(kraft_dir / "trace.jsonl"))
    model = build(run.events, run.end_us)
    log = model.metadata_log
    assert log.brokers() == ["b1", "b2", "b3"]
    assert [q.voter for q in log.leaders] and log.high_watermark[-1][1] > 0
    rows = {r["broker"]: r for r in log.summary()}
    # b3 applies every batch 300 ms late: its records wait at least that long, the others' not
    assert rows["b3"]["wait_p50_ms"] >= 300 > rows["b1"]["wait_max_ms"]
    assert rows["b3"]["longest_behind_ms"] > rows["b1"]["longest_behind_ms"]
    assert max(v for _, v in log.lag("b3") if v) >= 1
    # every broker ends current but for the last NoOpRecords (one every 500 ms; b3's 300 ms
    # late): each has applied what was committed a second before the end
    settled = max(hw for t, hw in log.high_watermark if t <= run.end_us - 1_000_000)
    assert all(settled <= r["applied_offset"] <= log.high_watermark[-1][1]
               for r in rows.values())
    with S.drawing():
        fig = figure(run, model=model)
        axes = {ax.get_title(loc="left"): ax for ax in fig.axes}
        assert metadata_panel.LOG_TITLE in axes and metadata_panel.LAG_TITLE in axes
        labels = axes[metadata_panel.LOG_TITLE].get_legend_handles_labels()[1]
        assert labels == ["committed high watermark", "b1 applied", "b2 applied", "b3 applied"]
        lag_labels = axes[metadata_panel.LAG_TITLE].get_legend_handles_labels()[1]
        assert [x.split(":")[0] for x in lag_labels] == ["b1", "b2", "b3"]


def test_a_kraft_report_and_interactive_page_hold_the_lag(kraft_dir, tmp_path):
    page = open(write_report(str(kraft_dir), str(tmp_path / "report.html")),
                encoding="utf-8").read()
    assert "Metadata lag (KRaft)" in page
    assert all(f"<td>{b}</td>" in page for b in ("b1", "b2", "b3"))
    live = open(tmp_path / "timeline.html", encoding="utf-8").read()
    data = json.loads(META.search(live).group(1))
    log = metadata_log.fold(load_run(str(kraft_dir / "trace.jsonl")).events)
    assert data["applied"]["b3"] == [list(p) for p in log.applied["b3"]]
    assert [row[0] for row in data["summary"]] == ["b1", "b2", "b3"]
    assert 'id="metadata-summary"' in live


@pytest.mark.skipif(chromium() is None, reason="headless Chromium is not installed "
                    "(`make chromium`, or apt-get install -y chromium)")
def test_the_metadata_plots_follow_the_lanes_in_chromium(kraft_dir, tmp_path):
    path = write_interactive(str(kraft_dir / "trace.jsonl"), str(tmp_path / "live.html"))
    log = metadata_log.fold(load_run(str(kraft_dir / "trace.jsonl")).events)
    behind = next(t for t, v in log.lag("b3") if v)  # a time when b3 is behind
    browser = Browser(str(tmp_path / "chromium"))
    try:
        page = browser.open(f"file://{os.path.abspath(path)}")
        page.wait_for("window.epochsimTimeline && epochsimTimeline.readyMs")
        first = page.eval("epochsimMetadata.state()")
        assert first["brokers"] == ["b1", "b2", "b3"] and first["drawn"] == 7  # hw + 2 x 3
        page.eval("epochsimTimeline.setView(4e6, 6e6)")
        moved = page.eval("epochsimMetadata.state()")
        assert (moved["v0"], moved["v1"]) == (4e6, 6e6)
        text = page.eval(f"epochsimMetadata.readAt({behind})")
        assert "b3" in text and "behind" in text.split("b3", 1)[1].split("\u00b7")[0]
        page.screenshot(str(tmp_path / "metadata.png"))
    finally:
        browser.close()
