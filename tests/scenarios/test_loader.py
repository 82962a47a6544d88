"""The scenario loader: defaults, round-trip through TOML, reading files, the docs' lists."""

import os
import random
from pathlib import Path

import pytest

from scenarios.schema import (
    ALL_INVARIANTS,
    ScenarioError,
    default_invariants,
    load_scenario,
    parse_scenario,
)
from scenarios.writer import scenario_to_toml
from sim.core.faults import FaultStep, materialise_mix
from sim.core.latency import LatencyDist
from tests.scenarios.texts import FULL, MINIMAL


def test_minimal_scenario_resolves_every_default():
    sc = parse_scenario(MINIMAL, "dir/minimal.toml")
    assert (sc.name, sc.path, sc.description, sc.expect, sc.seed) == (
        "minimal", "dir/minimal.toml", "", "pass", 1)
    assert sc.invariants == default_invariants("zk") and sc.steps == [] and sc.mixes == []
    o = sc.options.to_json()  # as the trace header records them
    assert o["run"] == {"duration_ms": 30000, "max_events": 5_000_000, "settle_ms": 5000}
    assert o["protocol"]["profile"] == "proposed" and o["protocol"]["mutant"] == ""
    assert o["protocol"]["produce_epoch_check"] is True
    assert o["cluster"] == {
        "brokers": 3, "controllers": 2, "min_insync_replicas": 1,
        "unclean_leader_election": False, "controller_failover_delay_ms": 2000,
        # Kafka's since 2.5 (KIP-537): the defaults follow the release (test_release_defaults)
        "zk_session_timeout_ms": 18000, "broker_session_timeout_ms": 18000,
        "broker_registration_ms": 0, "replica_lag_time_max_ms": 30000, "replica_fetch_wait_max_ms": 500,
            "max_incremental_fetch_session_cache_slots": 1000,
            "min_incremental_fetch_session_eviction_ms": 120000,
        "controller_request_retry_ms": 3000, "request_service_us": 50,
            "replica_high_watermark_checkpoint_interval_ms": 5000,
        "producer_id_expiration_check_interval_ms": 600000, "log_dirs": 1,
        "auto_leader_rebalance": True, "leader_imbalance_check_interval_ms": 300_000,
        "leader_imbalance_per_broker_percentage": 10,
        # left to their release default: a broker on another profile takes its own release's
        "defaulted": ["replica_lag_time_max_ms", "unclean_leader_election",
                      "broker_session_timeout_ms"]}
    assert o["topics"] == [{"name": "t", "partitions": 1, "replication_factor": 3,
                            "message_format": 2, "retention_ms": 0, "segment_ms": 10000,
                            "assignment": [[1, 2, 3]]}]
    assert o["producers"] == [] and o["consumers"] == []
    assert o["network"] == {"latency": {"dist": "constant", "ms": 1.0}, "jitter_ms": 0,
                            "drop": 0.0, "duplicate": 0.0, "partition": "stall", "links": []}


def test_full_scenario_resolves_clients_network_steps_and_mixes():
    sc = parse_scenario(FULL, "full.toml")
    o = sc.options
    assert o.protocol.leader_discovery == "refresh_no_backoff"
    assert o.protocol.mutant == "no_produce_epoch_check" and o.profile == "2.6"
    assert o.topics[1].assignment == ((1, 2),)
    p1, legacy = o.producers
    assert (p1.name, p1.acks, p1.enable_idempotence) == ("p1", "all", "required")
    assert (legacy.acks, legacy.enable_idempotence, legacy.stop_ms) == (1, "off", 9000)
    assert p1.max_in_flight == 5 and p1.leader_discovery == ""
    assert p1.batch_size == 16384 and p1.record_bytes == 100 and p1.records_per_sec == 250.5
    assert o.consumers[0].name == "k1" and o.consumers[0].auto_offset_reset == "latest"  # Kafka's default
    link = o.network.links[0]
    assert link.latency == LatencyDist("constant", 40.0) and link.drop == 0.01
    assert [s.at_us for s in sc.steps] == sorted(s.at_us for s in sc.steps)
    assert sc.steps[1] == FaultStep(3_000_000, "rule", None, {
        "rule": "hold", "kind": "StopReplica", "release_kind": "LeaderAndIsr", "dst": "b2"})
    assert sc.steps[2].target == "leader:t-1"  # same time as the rule: file order kept
    assert next(s for s in sc.steps if s.action == "move_leader").params == {"to": "next"}
    assert sc.mixes[0] == {"action": "crash", "every_ms": 1500, "targets": ["b1", "controller"],
                           "duration_ms": [200, 800], "undo": "restart", "start_ms": 0,
                           "end_ms": 16000, "params": {}}
    assert sc.mixes[1]["undo"] == "lapse"  # a rule mix's rules lapse one by one


def test_round_trip_through_toml():
    sc = parse_scenario(FULL, "full.toml")
    again = parse_scenario(scenario_to_toml(sc), "again.toml")
    assert again.options == sc.options and again.steps == sc.steps
    assert (again.name, again.expect, again.seed, again.invariants) == (
        sc.name, sc.expect, sc.seed, sc.invariants)
    assert again.mixes == []


def test_round_trip_of_materialised_mixes_keeps_microseconds():
    sc = parse_scenario(FULL, "full.toml")
    rng = random.Random(sc.seed)
    until_us = sc.options.run.duration_ms * 1000
    steps = sc.steps + [s for mix in sc.mixes for s in materialise_mix(mix, rng, until_us)]
    steps.sort(key=lambda s: s.at_us)
    assert any(s.at_us % 1000 for s in steps)
    again = parse_scenario(scenario_to_toml(sc, steps), "replay.toml")
    assert again.steps == steps and again.options == sc.options


def test_round_trip_of_awkward_strings():
    text = 'description = "tab\\t quote\\" nl\\n \\u007f é"\n' + MINIMAL
    sc = parse_scenario(text)
    assert parse_scenario(scenario_to_toml(sc)).description == sc.description


def test_docs_example_loads():
    docs = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"
    example = docs.read_text().split("\n## Example")[1].split("```toml\n")[1].split("```")[0]
    sc = parse_scenario(example, "example.toml")
    assert sc.options.protocol.produce_epoch_check is True and len(sc.mixes) == 1


def test_load_scenario_reads_a_file(tmp_path):
    path = tmp_path / "on_disk.toml"
    path.write_text(MINIMAL)
    assert load_scenario(str(path)).name == "on_disk"


def test_missing_file(tmp_path):
    path = str(tmp_path / "absent.toml")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: file: file not found")


def test_directory_is_not_a_scenario(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(tmp_path))
    assert str(info.value).startswith(f"{tmp_path}: file: is a directory")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked.toml"
    path.write_text(MINIMAL)
    path.chmod(0)
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert "not readable" in str(info.value) and "\n" not in str(info.value)


def test_docs_list_every_invariant_switch_and_message_kind_in_order():
    """docs/scenarios.md's lists are the code's: a new invariant, switch or message kind
    must be documented where scenario writers look for it."""
    import re

    from sim.kafka.faults.rules import MESSAGE_KINDS
    from sim.kafka.profiles import switch_names

    text = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()

    def names_in(paragraph_start: str) -> list[str]:
        paragraph = text[text.index(paragraph_start):].split("\n\n")[0]
        return re.findall(r"`([A-Za-z_]+)`", paragraph)

    assert names_in("The invariants are, in order:") == ALL_INVARIANTS
    assert names_in("The switches are")[:len(switch_names())] == switch_names()
    kind_row = next(line for line in text.splitlines() if line.startswith("| `kind` |"))
    assert set(re.findall(r"`([A-Za-z]+)`", kind_row)) - {"kind"} == set(MESSAGE_KINDS)
