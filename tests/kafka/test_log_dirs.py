"""Failed log directories in whole runs: the broker stops serving what they held
(`ReplicaManager.handleLogDirFailure`), the controller moves leadership off them
(`KafkaController.onBrokerLogDirFailure`, `onReplicasBecomeOffline`), a StopReplica whose
deletion fails answers KAFKA_STORAGE_ERROR (`ReplicaManager.stopReplicas`), and a restart brings
the directory back."""

from __future__ import annotations

import functools

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from sim.kafka import errors as E
from tests.conftest import scenario_path


@functools.lru_cache(maxsize=None)
def _shipped(name: str, overrides: tuple = ()) -> list:
    verdict = run_scenario(load_scenario(scenario_path(name), dict(overrides)), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def _first(events, kind: str, **fields):
    return next(e for e in events if e["kind"] == kind
                and all(e.get(k) == v for k, v in fields.items()))


def _all(events, kind: str, **fields) -> list:
    return [e for e in events if e["kind"] == kind
            and all(e.get(k) == v for k, v in fields.items())]


def test_partitions_of_a_failed_dir_go_offline_and_their_leadership_moves():
    events = _shipped("log-dir-failure-leader-moves")
    failed = _first(events, "log_dir_failure", node="b1")
    assert (failed["dir"], failed["tps"], failed["halt"]) == (0, ["t-0"], False)
    offline = _first(events, "replicas_offline")
    assert (offline["broker"], offline["tps"]) == (1, ["t-0"]) and offline["t"] > failed["t"]
    moved = _first(events, "partition_state", reason="elect:log_dir_failure")
    assert (moved["tp"], moved["leader"], moved["isr"]) == ("t-0", 2, [2, 3])
    # b1 answers KAFKA_STORAGE_ERROR for t-0 (the StopReplica of OfflineReplica included)...
    assert _first(events, "stop_replica", node="b1", tp="t-0")["result"] == "offline"
    refused = [e for e in events if e["kind"] == "send" and e["node"] == "b1"
               and e["msg"] == "ProduceResponse" and ["t-0", E.KAFKA_STORAGE_ERROR] in e["errs"]]
    assert refused
    # ...and the producer, taking it as InvalidMetadata, writes t-0 to b2 from then on
    retried = _first(events, "produce_error", error=E.KAFKA_STORAGE_ERROR)
    assert retried["action"] == "retry"
    assert any(b["tp"] == "t-0" for e in _all(events, "append", node="b2")
               if e["t"] > retried["t"] for b in e["batches"])
    # b1 keeps following t-1 from its other directory
    assert any(row[0] == "t-1" for e in _all(events, "replicate", node="b1")
               if failed["t"] < e["t"] < 9_000_000 for row in e["batches"])


def test_a_restart_brings_the_dir_back_empty_and_the_replica_catches_up():
    events = _shipped("log-dir-failure-leader-moves")
    gone = _first(events, "log_deleted", node="b1", tp="t-0")
    assert gone["reason"] == "disk_replaced" and gone["t"] == 10_000_000
    created = _first(events, "log_created", node="b1", tp="t-0")  # at the start
    again = [e for e in _all(events, "log_created", node="b1", tp="t-0") if e["t"] > gone["t"]]
    assert created["t"] < gone["t"] and again
    final = [e for e in _all(events, "partition_state", tp="t-0")][-1]
    assert final["isr"] == [1, 2, 3] and final["leader"] == 2


def test_with_data_kept_the_restart_finds_the_log():
    events = _shipped("log-dir-failure-leader-moves", (("faults.0.data", "kept"),))
    assert not _all(events, "log_deleted", node="b1")
    assert [e["t"] for e in _all(events, "log_created", node="b1", tp="t-0")] == [1000]


def test_a_new_log_goes_to_the_dir_with_the_fewest_logs():
    """t-0 and t-1 reach b1 in one LeaderAndIsr: t-0 goes to dir 0, t-1 to dir 1; so a
    failure of dir 1 takes t-1 alone."""
    events = _shipped("log-dir-failure-leader-moves", (("faults.0.dir", 1),))
    assert _first(events, "log_dir_failure", node="b1")["tps"] == ["t-1"]


SINGLE_DIR = """
name = "single-dir"
expect = "pass"
seed = 1
[run]
duration_ms = 16000
settle_ms = 4000
[protocol]
profile = "3.7"
[cluster]
broker_session_timeout_ms = 6000  # noticed and restarted within the run (3.7's default: 18 s)
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 10
[[faults]]
at_ms = 2000
action = "log_dir_failure"
target = "b1"
[[faults]]
at_ms = 10000
action = "restart"
target = "b1"
"""


def test_a_broker_that_loses_its_only_dir_halts():
    """`LogManager.handleLogDirFailure`: no live directory left, `Exit.halt`: a crash, so the
    controller learns of it only when b1's ZooKeeper session expires, and a `restart` brings
    the broker and its (new, empty) disk back."""
    verdict = run_scenario(parse_scenario(SINGLE_DIR, "single-dir.toml"), 1, keep_events=True)
    events = verdict["_events"]
    assert verdict["violated"] == [], verdict["violated"]
    failed = _first(events, "log_dir_failure")
    assert (failed["node"], failed["tps"], failed["halt"]) == ("b1", ["t-0"], True)
    crashed = _first(events, "crash", node="b1")
    assert crashed["seq"] == failed["seq"] + 1
    assert not _all(events, "replicas_offline")
    elected = _first(events, "partition_state", reason="elect:broker_failure")
    assert 7_500_000 <= elected["t"] < 10_000_000  # broker_session_timeout_ms after its last renewal
    assert _first(events, "log_deleted", node="b1")["reason"] == "disk_replaced"


def test_before_kip_112_a_failed_dir_halts_the_broker_whatever_it_has_left():
    """0.11 (`survives_log_dir_failure` off): b1 still has dir 1, yet halts."""
    events = _shipped("log-dir-failure-leader-moves", (("protocol.profile", "0.11"),))
    failed = _first(events, "log_dir_failure", node="b1")
    assert (failed["tps"], failed["halt"]) == (["t-0"], True)
    assert _first(events, "crash", node="b1")["seq"] == failed["seq"] + 1
    assert not _all(events, "replicas_offline")


def test_a_stop_replica_whose_delete_fails_answers_kafka_storage_error():
    events = _shipped("log-dir-failure-on-delete")
    stop = _first(events, "stop_replica", node="b2", delete=True)
    assert (stop["result"], stop["error"]) == ("storage_error", E.KAFKA_STORAGE_ERROR)
    failed = _first(events, "log_dir_failure", node="b2")
    assert failed["seq"] > stop["seq"] and (failed["dir"], failed["halt"]) == (0, False)
    # the deletion waits for b2: creating t again fails until b2 is back and deletes its log
    refused = _first(events, "fault_outcome", step=2)
    assert refused["outcome"] == "TOPIC_ALREADY_EXISTS: topic t is marked for deletion"
    restarted = _first(events, "restart", node="b2")
    done = _first(events, "topic_deletion_completed", topic="t")
    assert done["t"] > restarted["t"]
    # b2 went on serving u from its other directory all along
    assert any(e["t"] < restarted["t"] - 1_000_000 for e in _all(events, "append", node="b2")
               if e["t"] > failed["t"])


PARKED = """
name = "parked"
expect = "pass"
seed = 1
[run]
duration_ms = 8000
settle_ms = 2000
[protocol]
profile = "3.7"
[cluster]
brokers = 3
log_dirs = 2
[[topics]]
name = "t"
partitions = 2
replication_factor = 3
assignment = [[1, 2, 3], [1, 3, 2]]
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 400
linger_ms = 10
[[faults]]          # the followers' Fetches reach b1 late: its acks=all writes wait
at_ms = 2900
action = "rule"
rule = "delay"
kind = "Fetch"
dst = "b1"
delay_ms = 200
duration_ms = 100
[[faults]]
at_ms = 3000
action = "log_dir_failure"
target = "b1"
dir = 0
"""


def test_a_parked_write_completes_with_kafka_storage_error_when_its_other_partition_moves():
    """`DelayedProduce.tryComplete` looks at every partition of the request: once t-1's HW
    covers its batch, the request completes, t-0 (offline since 3 s) with KAFKA_STORAGE_ERROR,
    long before the 30 s request timeout."""
    verdict = run_scenario(parse_scenario(PARKED, "parked.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    events = verdict["_events"]
    answers = [e for e in events if e["kind"] == "send" and e["node"] == "b1"
               and e["msg"] == "ProduceResponse" and 3_000_000 < e["t"] < 3_500_000]
    assert any(e["errs"] == [["t-0", E.KAFKA_STORAGE_ERROR]] for e in answers), answers
    assert not any(e["kind"] == "produce_error" and e["error"] == E.REQUEST_TIMED_OUT
                   for e in events)


def test_a_dir_never_replaced_is_a_fault_not_healed():
    """Without a restart b1's replica of t-0 stays offline, and t-0 under-replicated, as in
    Kafka until the disk is replaced: the liveness rules judge t-1 and the other brokers only."""
    text = open(scenario_path("log-dir-failure-leader-moves")).read()
    text = text[:text.index('[[faults]]\nat_ms = 9000')]
    verdict = run_scenario(parse_scenario(text, "never-replaced.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    final = [e for e in verdict["_events"] if e["kind"] == "partition_state"
             and e["tp"] == "t-0"][-1]
    assert final["isr"] == [2, 3]
    assert verdict["liveness"]["under_replicated_after_heal"] == "judged 1 partition"
    assert verdict["liveness"]["stray_replica"] == "judged 2 live brokers"


def test_the_notification_waits_until_zookeeper_is_reachable():
    """`propagateLogDirEvent` writes to ZooKeeper: a broker cut off from "zk" writes it once
    the cut heals (at its next heartbeat), and only then does the controller move the leader."""
    text = open(scenario_path("log-dir-failure-leader-moves")).read()
    text = text[:text.index('[[faults]]\nat_ms = 9000')] + """
[[faults]]
at_ms = 2000
action = "block"
target = "b1"
dst = "zk"
[[faults]]
at_ms = 4000
action = "heal"
"""
    verdict = run_scenario(parse_scenario(text, "zk-cut.toml"), 1, keep_events=True)
    events = verdict["_events"]
    offline = _first(events, "replicas_offline")
    assert 4_000_000 < offline["t"] < 4_700_000, offline
    assert _first(events, "partition_state", reason="elect:log_dir_failure")["t"] == offline["t"]
