"""Mode A: aiokafka's real producer inside the simulation, on the simulated network, judged by
the invariants, and replayed byte for byte from its seed in fresh processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import epochsim
from invariants.shapes import event_problem
from scenarios.schema import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[3]
MOVE = ROOT / "scenarios" / "real" / "aiokafka-idempotent-leader-move.toml"
REGRESSION = ROOT / "scenarios" / "real" / "aiokafka-stale-metadata-regression.toml"


def test_idempotent_producer_through_a_leader_move():
    run = epochsim.run(epochsim.load(MOVE), seed=1)
    assert run.expectation_met, run.violations
    events = list(run.events())
    acked = Counter(e["tp"] for e in events if e["kind"] == "ack")
    assert acked["t-0"] > 50 and acked["t-1"] > 50
    frames = [e for e in events if e["kind"] == "send" and e["msg"] in ("WireRequest",
                                                                         "WireResponse")]
    # every frame each way is in the trace, with its hash and what it said
    assert Counter(e["msg"] for e in frames)["WireResponse"] > 100
    assert all(len(e["hash"]) == 16 and e["bytes"] > 0 for e in frames)
    asked = {(e["api"], e["v"]) for e in frames if e["msg"] == "WireRequest"}
    assert asked == {("ApiVersions", 0), ("Metadata", 5), ("InitProducerId", 0), ("Produce", 7)}
    # the move reached the library: the old leader refused it, and it wrote on at b2
    refused = [e for e in events if e["kind"] == "produce_error" and e["tp"] == "t-0"]
    assert refused and {e["error"] for e in refused} == {6}
    appends = [b for e in events if e["kind"] == "append" for b in e["batches"]]
    assert {(e["tp"], e["leader_epoch"]) for e in appends} >= {("t-0", 0), ("t-0", 1)}
    assert all(b["pid"] == 2000 for b in appends)  # its InitProducerId answer
    # every event has its documented shape
    assert [p for e in events if (p := event_problem(e))] == []


def _digests(paths: list[Path], seed: int, hash_seed: str) -> subprocess.Popen:
    code = ("import epochsim, sys; "
            f"print(*[epochsim.run(epochsim.load(p), seed={seed}).trace_digest "
            "for p in sys.argv[1:]])")
    env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code, *map(str, paths)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_seed_replays_in_fresh_processes_under_any_hash_seed():
    # the producer alone, and with aiokafka's consumer (which walks a set of partitions)
    paths = [MOVE, ROOT / "scenarios" / "real" / "aiokafka-consumer-leader-move.toml"]
    runs = [_digests(paths, 3, "1"), _digests(paths, 3, "2")]
    here = epochsim.load(MOVE)
    other = epochsim.run(here, seed=4).trace_digest
    mine = epochsim.run(here, seed=3).trace_digest
    out = []
    for p in runs:
        stdout, stderr = p.communicate(timeout=180)
        assert p.returncode == 0, stderr
        out.append(stdout.split())
    # the same seed: one trace in two fresh processes (hash seeds 1 and 2) and in this one
    assert out[0] == out[1] and out[0][0] == mine
    assert other != mine


def test_aiokafka_goes_back_to_a_stale_leader_where_the_model_client_does_not():
    run = epochsim.run(epochsim.load(REGRESSION), seed=1)
    assert run.expectation_met
    assert {v.invariant for v in run.violations} == {"client_leader_epoch_regression"}
    events = list(run.events())
    back = [e for e in events if e["kind"] == "client_epoch" and e["tp"] == "t-0"
            and e.get("previous_epoch", -1) > e["leader_epoch"]]
    assert back and all(e["leader"] == 1 and e["from"] in ("b1", "b3") for e in back)
    # Produce v7 carries no KIP-951 hint: the library learns only from Metadata
    assert all(e["source"] == "metadata" for e in events if e["kind"] == "client_epoch")
    model_text = REGRESSION.read_text().replace('client = "aiokafka"', 'client = "model"')
    model = epochsim.run(parse_scenario(model_text, "model-client.toml"), seed=1)
    assert model.violations == []


def test_a_scenario_names_a_client_the_harness_runs():
    text = MOVE.read_text()
    with pytest.raises(ScenarioError, match=r"producers\[0\]\.client"):
        parse_scenario(text.replace('client = "aiokafka"', 'client = "librdkafka"'), "x.toml")
    with pytest.raises(ScenarioError, match=r"producers\[0\]\.enable_idempotence.*KIP-185"):
        parse_scenario(text.replace('"required"', '"requested"'), "x.toml")
    assert parse_scenario(text, "x.toml").options.producers[0].client == "aiokafka"


DOWN_AT_START = """
name = "aiokafka-no-broker-at-start"
expect = "pass"
invariants = ["acked_write_lost", "duplicate_append", "out_of_order_append"]
[run]
duration_ms = 3000
settle_ms = 500
[cluster]
brokers = 1
# b1's first session expires 1 s after it registered at 0: a restart before would fail
broker_session_timeout_ms = 1000
[[topics]]
name = "t"
partitions = 1
replication_factor = 1
[[producers]]
name = "p1"
client = "aiokafka"
topic = "t"
records_per_sec = 50
start_ms = 10
[[faults]]
at_ms = 0
action = "crash"
target = "b1"
[[faults]]
at_ms = 1500
action = "restart"
target = "b1"
"""


def test_a_client_that_finds_no_broker_says_so_and_starts_again():
    run = epochsim.run(parse_scenario(DOWN_AT_START, "down.toml"), seed=1)
    events = list(run.events())
    errors = [e for e in events if e["kind"] == "client_error"]
    assert errors and errors[0]["action"] == "restart" and errors[0]["t"] < 1_500_000
    acks = [e for e in events if e["kind"] == "ack"]
    assert acks and acks[0]["t"] > 1_500_000  # once b1 is back, the next start() writes


MUTANT = ROOT / "scenarios" / "real" / "aiokafka-no-dedup-cache-mutant.toml"


def test_a_planted_broker_bug_is_found_through_aiokafka():
    run = epochsim.run(epochsim.load(MUTANT), seed=1)
    assert run.expectation_met
    dup = [v for v in run.violations if v.invariant == "duplicate_append"]
    assert dup and "p1#t-" in dup[0].message  # a batch the library sent twice, same bytes
    clean = epochsim.run(epochsim.load(MUTANT, overrides={"protocol.mutant": ""}), seed=1)
    assert clean.violations == []


CONSUMER = ROOT / "scenarios" / "real" / "aiokafka-consumer-leader-move.toml"


def test_aiokafka_s_consumer_reads_what_was_acknowledged_in_order():
    run = epochsim.run(epochsim.load(CONSUMER), seed=2)
    assert run.expectation_met, run.violations
    events = list(run.events())
    acked = {(e["tp"], e["bid"]) for e in events if e["kind"] == "ack"}
    read = [(e["tp"], base, bid) for e in events if e["kind"] == "consume"
            for base, bid in e["read"]]
    assert {(tp, bid) for tp, _base, bid in read} >= acked - _last_in_flight(events)
    for tp in ("t-0", "t-1"):
        offsets = [base for t, base, _bid in read if t == tp]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    asked = {(e["api"], e["v"]) for e in events
             if e["kind"] == "send" and e["node"] == "k1" and e["msg"] == "WireRequest"}
    assert ("Fetch", 11) in asked and any(api == "ListOffsets" for api, _v in asked)
    assert [p for e in events if (p := event_problem(e))] == []


def _last_in_flight(events) -> set:
    """Batches acknowledged in the last 300 ms: the consumer may not have fetched them yet."""
    end = max(e["t"] for e in events)
    return {(e["tp"], e["bid"]) for e in events if e["kind"] == "ack" and e["t"] > end - 300_000}


def test_a_crashed_client_is_silent_until_it_restarts_from_nothing():
    text = MOVE.read_text().replace('[[faults]]', '''[[faults]]
at_ms = 2000
action = "crash"
target = "p1"

[[faults]]
at_ms = 2500
action = "restart"
target = "p1"

[[faults]]''', 1)
    run = epochsim.run(parse_scenario(text, "crash.toml"), seed=1)
    events = list(run.events())
    sent = [e["t"] for e in events if e["kind"] == "send" and e["node"] == "p1"]
    assert not [t for t in sent if 2_000_000 < t < 2_500_000]
    assert [t for t in sent if t >= 2_500_000]  # the new incarnation talks again
    pids = {b["pid"] for e in events if e["kind"] == "append" for b in e["batches"]}
    assert pids == {2000, 2001}  # a new InitProducerId after the restart
    assert not [v for v in run.violations if v.invariant != "produce_stalled_after_heal"]
