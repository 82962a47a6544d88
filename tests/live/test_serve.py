"""`epochsim serve` (Mode B): real client processes against the simulated cluster on loopback.

Each run takes the scenario's 4 simulated seconds of wall time (plus the client's start); the
tests skip only when a client library is not installed."""

from __future__ import annotations

import functools
import importlib.util
import os
import signal
import subprocess
import sys

import pytest

from epochsim.live.moves import leader_move, read_events
from epochsim.live.serve import serve
from scenarios.schema import load_scenario
from tests.conftest import ROOT, scenario_path

needs_librdkafka = pytest.mark.skipif(importlib.util.find_spec("confluent_kafka") is None,
                                      reason="confluent-kafka is not installed")
needs_kafka_python = pytest.mark.skipif(importlib.util.find_spec("kafka") is None,
                                        reason="kafka-python is not installed")


@functools.lru_cache(maxsize=None)
def _served(name: str, out: str) -> tuple[dict, list]:
    verdict = serve(load_scenario(scenario_path(f"live/{name}")), out)
    return verdict, read_events(os.path.join(out, "trace.jsonl"))


def _run(name: str, tmp_path_factory) -> tuple[dict, list]:
    return _served(name, str(tmp_path_factory.mktemp(name)))


def _every_record_once(verdict: dict, records: int = 150) -> None:
    assert verdict["violations"] == [], verdict["violations"]
    live = verdict["live"]
    assert live["anomalies"] == [], live["anomalies"]
    assert [c["exit"] for c in live["clients"]] == [0]
    s = live["summary"]
    assert (s["send"], s["acked_keys"], s["read"], s["unread_partitions"]) == \
        (records, records, records, [])
    assert verdict["expectation_met"]


def _caches_updated_us(events: list, broker: str, after_us: int) -> int:
    """When the first UpdateMetadata the controller sent `broker` at or after `after_us`
    arrived."""
    mids = {e["mid"] for e in events if e.get("kind") == "send" and e.get("msg") == "UpdateMetadata"
            and e["dst"] == broker and e["t"] >= after_us}
    return min(e["t"] for e in events if e.get("kind") == "deliver" and e.get("mid") in mids)


@needs_librdkafka
@needs_kafka_python
def test_librdkafka_follows_a_fresh_hint_without_metadata(tmp_path_factory):
    verdict, events = _run("librdkafka-leader-move-fresh-hint", tmp_path_factory)
    move = leader_move(events, "rd1", "t-0")
    if move["metadata_requests"]:
        # librdkafka applies a hint on its main thread while its broker thread schedules the
        # retry: on a machine starved of CPU the retry can go out first, find the old leader,
        # and ask for metadata. That is wall-clock timing, not the protocol; one more run
        # tells the two apart (a client that ignores hints asks for metadata every time)
        verdict, events = _served("librdkafka-leader-move-fresh-hint",
                                  str(tmp_path_factory.mktemp("fresh-hint-again")))
        move = leader_move(events, "rd1", "t-0")
    _every_record_once(verdict)
    assert move["produce_versions"] == [10]  # KIP-951's Produce
    assert move["errors"] >= 1  # the old leader refused, with its hint
    assert move["recovered_us"] is not None
    assert move["metadata_requests"] == 0
    # b1's and b3's caches were still stale when it wrote to b2
    assert move["recovered_us"] < _caches_updated_us(events, "b1", move["move_us"])


@needs_librdkafka
@needs_kafka_python
def test_librdkafka_with_a_stale_hint_recovers_once_caches_update(tmp_path_factory):
    verdict, events = _run("librdkafka-leader-move-stale-hint", tmp_path_factory)
    _every_record_once(verdict)
    move = leader_move(events, "rd1", "t-0")
    assert move["recovered_us"] is not None
    updated = min(_caches_updated_us(events, b, move["move_us"]) for b in ("b1", "b2", "b3"))
    assert move["recovered_us"] >= updated
    # how it learns the new leader once caches update is the wall clock's choice: a Metadata
    # answer, or the fresh hint of a later refusal (a live run is paced by a loaded machine)
    assert move["errors"] >= 1 and move["first_error_us"] < move["recovered_us"]


@needs_kafka_python
def test_kafka_python_finds_the_new_leader_through_metadata(tmp_path_factory):
    verdict, events = _run("kafka-python-leader-move", tmp_path_factory)
    _every_record_once(verdict)
    move = leader_move(events, "kp1", "t-0")
    assert max(move["produce_versions"]) <= 9  # no KIP-951 hint to follow
    assert move["metadata_requests"] >= 1
    assert move["recovered_us"] is not None
    assert move["metadata_names_new_us"] is not None
    assert move["metadata_names_new_us"] <= move["recovered_us"]


def test_ctrl_c_writes_what_it_has(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "epochsim", "serve",
         scenario_path("live/librdkafka-leader-move-fresh-hint"), "--no-clients",
         "--slowdown", "20", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving b1 127.0.0.1:"), line + proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert "stopped by interrupted" in stdout
    import json
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["run"]["stopped_by"] == "interrupted"
    assert verdict["expectation_met"] is False
    assert (out / "trace.jsonl").read_text().count("\n") > 1
