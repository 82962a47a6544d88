"""Sequence diagrams: which events they show, and that the pictures are well-formed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from reports.rundata import load_run
from reports.sequence import plot_sequence, select
from tests.reports import KIP570, run_to_dir, write_trace

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def kip570_trace(tmp_path_factory):
    return run_to_dir(KIP570, tmp_path_factory.mktemp("kip570"))


def test_selection_reaches_back_to_the_held_stop_replica(kip570_trace):
    run = load_run(kip570_trace)
    sel = select(run)
    assert {"c1", "b3"} <= set(sel.nodes)
    kinds = [(e["kind"], e.get("msg")) for e in sel.rows]
    assert ("send", "StopReplica") in kinds and ("hold", None) in kinds
    assert "stop_replica" in [k for k, _ in kinds]
    # the StopReplica was sent a second before the window: a gap marks the skipped events
    assert sel.gaps and sel.gaps[0][1] > 40
    assert sel.rows == sorted(sel.rows, key=lambda e: e["seq"])


def test_selection_by_time_and_nodes(kip570_trace):
    run = load_run(kip570_trace)
    sel = select(run, around_ms=0.5, nodes=["c1", "b3"])
    assert sel.nodes == ["c1", "b3"]
    assert all(e["node"] in ("c1", "b3", "nemesis") for e in sel.rows)


def test_png_and_svg_are_written_and_repeatable(kip570_trace, tmp_path):
    with open(plot_sequence(kip570_trace, str(tmp_path / "s.png")), "rb") as fh:
        assert fh.read(8) == PNG_SIGNATURE
    texts = []
    for name in ("a.svg", "b.svg"):
        with open(plot_sequence(kip570_trace, str(tmp_path / name)), encoding="utf-8") as fh:
            texts.append(fh.read())
    ET.fromstring(texts[0])
    assert texts[0] == texts[1]
    assert "[HELD]" in texts[0] and "stop_replica_out_of_order" in texts[0]


def test_dropped_and_held_messages_on_a_hand_built_trace(tmp_path):
    events = [
        {"t": 0, "node": "nemesis", "kind": "fault", "step": 0, "action": "rule",
         "params": {"rule": "drop", "kind": "LeaderAndIsr", "dst": "b2"}},
        {"t": 0, "node": "c1", "kind": "send", "mid": 0, "dst": "b2", "msg": "LeaderAndIsr",
         "controller_epoch": 1, "parts": [["t-0", 1, 4]]},
        {"t": 0, "node": "c1", "kind": "drop", "mid": 0, "reason": "rule:0"},
        {"t": 5, "node": "c1", "kind": "send", "mid": 1, "dst": "b1", "msg": "StopReplica",
         "controller_epoch": 1, "parts": [["t-0", 3, True]]},
        {"t": 5, "node": "c1", "kind": "hold", "mid": 1, "rule": 1},
        {"t": 9, "node": "c1", "kind": "send", "mid": 2, "dst": "b1", "msg": "LeaderAndIsr",
         "controller_epoch": 1, "parts": [["t-0", 1, 4]]},
        {"t": 10, "node": "b1", "kind": "deliver", "mid": 2, "src": "c1"},
        {"t": 11, "node": "b1", "kind": "deliver", "mid": 1, "src": "c1"},
    ]
    trace = write_trace(str(tmp_path / "trace.jsonl"), events)
    # no violation: the window opens at the first fault, on the node it targets and its peers
    assert select(load_run(trace)).nodes == ["c1", "b2"]
    out = plot_sequence(trace, str(tmp_path / "s.svg"), nodes=["c1", "b1", "b2"])
    with open(out, encoding="utf-8") as fh:
        text = fh.read()
    ET.fromstring(text)
    assert "DROPPED: rule:0" in text and "[HELD]" in text
