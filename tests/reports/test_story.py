"""Violation stories in words, and the table of events around a violation."""

from __future__ import annotations

import pytest

from reports.rundata import load_run
from reports.story import events_table, numbered, story
from reports.words import describe, describe_fault
from tests.reports import KIP570, run_to_dir, write_trace


@pytest.fixture(scope="module")
def kip570_run(tmp_path_factory):
    return load_run(run_to_dir(KIP570, tmp_path_factory.mktemp("kip570")))


def test_kip570_story_tells_the_reorder(kip570_run):
    lines = story(kip570_run)
    text = "\n".join(lines)
    assert "StopReplica" in text
    assert "issued at leader epoch 2" in text and "leader epoch 3" in text
    assert "hold StopReplica to b3 until a later LeaderAndIsr" in text
    assert "the network released StopReplica(delete) t-0" in text
    verdict_line = next(ln for ln in lines if "VIOLATION" in ln)
    assert verdict_line.startswith("t=4.002s b3 applied StopReplica for t-0 issued at leader "
                                   "epoch 1 (own leader epoch 3)")
    assert verdict_line.endswith("VIOLATION stop_replica_out_of_order")
    # the LeaderAndIsr at epoch 3 comes before the StopReplica that undoes it
    assert text.index("leader epoch 3 (follower of b1)") < text.index("VIOLATION")
    assert 5 <= len(lines) <= 16


def test_story_is_numbered_and_limited(kip570_run):
    assert numbered(["a", "b"]) == ["1. a", "2. b"]
    short = story(kip570_run, limit=4)
    assert any("VIOLATION" in ln for ln in short)
    assert all(("nemesis" in ln or "VIOLATION" in ln or "witness" in ln) for ln in short)


def test_events_table_marks_the_witnesses(kip570_run):
    rows = events_table(kip570_run)
    witnesses = {r["seq"]: r["witness"] for r in rows if r["witness"]}
    first = kip570_run.violations[0]
    assert set(first["seqs"]) <= set(witnesses)
    assert all({"seq", "time", "node", "kind", "text"} <= set(r) for r in rows)
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)
    assert not any(r["kind"] in ("hw", "replicate", "batch") for r in rows)
    assert any("received StopReplica(delete) t-0 c1\u2192b3 (sent 3.000s)" in r["text"]
               for r in rows)


def test_no_violation_no_story(tmp_path):
    trace = write_trace(str(tmp_path / "t.jsonl"), [
        {"t": 0, "node": "c1", "kind": "controller_elected", "controller_epoch": 1}])
    run = load_run(trace)
    assert story(run) == []
    assert [r["kind"] for r in events_table(run)] == ["controller_elected"]


def test_words_for_unknown_and_partial_events():
    assert describe({"seq": 1, "t": 0, "node": "x9", "kind": "mystery", "a": 1}) == \
        "x9 mystery a=1"
    assert describe({"seq": 1, "t": 0, "node": "b1", "kind": "replica_state"}).startswith(
        "b1 replica_state")
    assert describe_fault({"action": "crash", "target": "controller", "resolved": "c1"}) == \
        "crash c1 (controller)"


def test_a_message_waiting_on_a_cut_link_is_told_and_its_loss_too(tmp_path):
    """The StopReplica to b1 waits on the cut link c1 -> b1 and dies with the connection when
    b1 crashes: the events table says both."""
    import os

    from tests.reports import ROOT
    path = os.path.join(ROOT, "scenarios", "finding-stray-after-lost-stop-replica-zk.toml")
    run = load_run(run_to_dir(path, tmp_path))
    texts = [row["text"] for row in events_table(run, before=60, after=60)]
    assert any("StopReplica" in t and "on a cut link" in t for t in texts)
    assert any("StopReplica" in t and "connection_closed" in t for t in texts)


def test_every_fault_action_reads_as_a_sentence():
    """No fault action falls back to the literal `action target key=value` form."""
    from reports.words import fault_sentence
    from sim.kafka.faults import ACTIONS
    required = {"block": {"dst": "b2"}, "partition": {"groups": [["b1"], ["b2"]]},
                "rule": {"rule": "drop", "kind": "Fetch"}, "power_loss": {"unflushed_ms": 100},
                "reassign": {"replicas": [1, 2]}, "create_topic": {"name": "x"},
                "upgrade_format": {"message_format": 1}, "upgrade": {"profile": "2.6"},
                "bump_ibp": {"version": "2.6"}, "elect_leaders": {"election_type": "unclean"}}
    for name in ACTIONS:
        params = required.get(name, {})
        literal = " ".join(x for x in (name, "leader:t-0", *(f"{k}={v}" for k, v in params.items())) if x)
        assert fault_sentence(name, "leader:t-0", params) != literal, name
