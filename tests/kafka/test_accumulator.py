"""The producer's accumulator (RecordAccumulator.append): records join a partition's last
batch while the sender has not taken it and it has room (`batch_size` / `record_bytes`), and
fill new batches after that; latency percentiles count each record group from when it joined.
A leader read starts at the batch holding the fetch offset (LogSegment.read)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from invariants.metrics import group_latencies
from scenarios.schema import parse_scenario
from sim.kafka.log import Log
from sim.kafka.messages import Batch

# 1,000 records/s on one partition, 10 per linger.ms; every Produce is lost from 1 s to 2 s,
# so the producer's one in-flight request waits for its timeout and the partition backs up.
SCENARIO = """
name = "accumulator"
expect = "pass"
[run]
duration_ms = 6000
settle_ms = 1000
[cluster]
brokers = 1
[[topics]]
name = "t"
replication_factor = 1
[[producers]]
topic = "t"
records_per_sec = 1000
linger_ms = 10
max_in_flight = 1
request_timeout_ms = 1500
{extra}
[[faults]]
at_ms = 1000
action = "rule"
rule = "drop"
kind = "Produce"
duration_ms = 1000
"""


def run(extra: str = "") -> tuple[dict, list[dict]]:
    verdict = run_scenario(parse_scenario(SCENARIO.format(extra=extra), "a.toml"), 1,
                           keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict, verdict["_events"]


def _kinds(events, kind):
    return [e for e in events if e["kind"] == kind]


def test_a_blocked_partition_grows_its_unsent_batch_up_to_batch_size():
    verdict, events = run("batch_size = 5000\nrecord_bytes = 100")  # 50 records a batch
    grown = _kinds(events, "batch_grown")
    assert grown, "records should join the unsent batch while the request is outstanding"
    acks = _kinds(events, "ack")
    assert max(a["count"] for a in acks) == 50
    assert all(a["count"] <= 50 for a in acks)
    # nothing is lost or counted twice: records opened plus records joined = records acked
    opened = sum(e["count"] for e in _kinds(events, "batch"))
    joined = sum(e["count"] for e in grown)
    failed = {e["bid"] for e in _kinds(events, "produce_failed")}
    assert not failed
    assert opened + joined == sum(a["count"] for a in acks)
    assert verdict["metrics"]["acked_records"] == opened + joined
    assert verdict["metrics"]["acked"] == len(acks) < opened + joined
    # a batch already taken by the sender never grows
    first_sent = {}
    for e in events:
        if e["kind"] == "send" and e["msg"] == "Produce":
            for _tp, bid, _epoch in e["parts"]:
                first_sent.setdefault(bid, e["t"])
    assert all(g["t"] < first_sent[g["bid"]] for g in grown)


def test_without_a_backlog_batches_are_one_linger_each():
    _, events = run("batch_size = 5000\nrecord_bytes = 100\n[[producers]]\nname = \"p2\"\n"
                    "topic = \"t\"\nrecords_per_sec = 1000\nlinger_ms = 10\nstart_ms = 2500")
    p2 = [a for a in _kinds(events, "ack") if a["node"] == "p2"]
    assert p2 and all(a["count"] == 10 for a in p2)
    assert not [g for g in _kinds(events, "batch_grown") if g["bid"].startswith("p2")]


@pytest.mark.parametrize("size,cap", [("batch_size = 0", 1), ("record_bytes = 20000", 1),
                                      ("batch_size = 2000\nrecord_bytes = 100", 20)])
def test_a_batch_holds_at_least_one_record_and_at_most_batch_size(size, cap):
    _, events = run(size)
    counts = [a["count"] for a in _kinds(events, "ack")]
    assert max(counts) == cap


def test_latency_percentiles_count_each_record_group_from_when_it_joined():
    joined = {"p1#3": [1_000, 3_000]}
    ack = {"bid": "p1#3", "t": 10_000, "latency_us": 9_500}
    assert group_latencies(ack, joined) == [9_500, 9_000, 7_000]
    assert "p1#3" not in joined
    assert group_latencies({"bid": "p1#4", "t": 10_000, "latency_us": 20}, joined) == [20]


def test_the_verdict_latency_is_over_record_groups():
    verdict, events = run("batch_size = 5000\nrecord_bytes = 100")
    groups = len(_kinds(events, "ack")) + len(_kinds(events, "batch_grown"))
    latencies = sorted(g for a in _kinds(events, "ack")
                       for g in group_latencies(a, {a["bid"]: [e["t"] for e in events
                                                               if e["kind"] == "batch_grown"
                                                               and e["bid"] == a["bid"]]}))
    assert len(latencies) == groups
    assert verdict["metrics"]["produce_latency_max_ms"] == latencies[-1] / 1000.0


def _log(*counts: int) -> Log:
    log = Log()
    for i, count in enumerate(counts):
        log.append(count, 0, Batch(f"p#{i}", "p", count, 0), 0)
    return log


@pytest.mark.parametrize("offset,bases", [(0, [0, 2, 102]), (1, [0, 2, 102]), (2, [2, 102]),
                                          (50, [2, 102]), (101, [2, 102]), (102, [102]),
                                          (103, [])])
def test_a_read_starts_at_the_batch_holding_the_offset(offset, bases):
    log = _log(2, 100, 1)  # batches at 0-1, 2-101, 102
    assert [e[0] for e in log.read(offset, 10)] == bases
