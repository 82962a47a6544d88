"""The producer's retry decisions (ref §2.5, §3.2): which errors refresh metadata, and what a
batch fails with when its retries are spent."""

from __future__ import annotations

from dataclasses import replace

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka import errors as E
from sim.kafka.messages import Batch
from sim.kafka.producer import PendingBatch
from tests.kafka import build_cluster

SCENARIO = """
name = "retry"
expect = "pass"
[[topics]]
name = "t"
[[producers]]
topic = "t"
"""


def _producer(**spec):
    cluster, trace = build_cluster(SCENARIO)
    producer = cluster.clients[0]
    producer.spec = replace(producer.spec, **spec)
    updates = []
    producer.request_update = lambda immediate=False: updates.append(immediate)
    return producer, updates, trace


def _pending(producer) -> PendingBatch:
    pb = PendingBatch(Batch("p1#0", "p1", 1, 0), "t-0")
    producer.queues["t-0"].append(pb)
    return pb


def test_only_invalid_metadata_and_lost_connections_refresh_metadata():
    producer, updates, _ = _producer()
    producer._retry_or_fail(_pending(producer), E.REQUEST_TIMED_OUT)  # the broker's own timeout
    assert updates == []
    producer._retry_or_fail(_pending(producer), E.NOT_ENOUGH_REPLICAS)
    assert updates == []
    producer._retry_or_fail(_pending(producer), E.REQUEST_TIMED_OUT, disconnected=True)
    assert len(updates) == 1
    producer._retry_or_fail(_pending(producer), E.NOT_LEADER_OR_FOLLOWER)
    assert len(updates) == 2


def test_spent_retries_fail_with_the_last_error_not_a_delivery_timeout():
    producer, _, trace = _producer(retries=0)
    producer._retry_or_fail(_pending(producer), E.NOT_ENOUGH_REPLICAS)
    failed = [e for e in trace.events if e["kind"] == "produce_failed"]
    assert [e["error"] for e in failed] == [E.NOT_ENOUGH_REPLICAS]


def test_a_batch_failed_for_good_with_an_invalid_metadata_error_still_refreshes_metadata():
    producer, updates, _ = _producer(retries=0)
    pb = _pending(producer)
    producer._retry_or_fail(pb, E.NOT_LEADER_OR_FOLLOWER)  # Sender.completeBatch asks anyway
    assert pb not in producer.queues["t-0"] and updates == [False]


SLOW_ANSWERS = """
name = "inflight-expiry"
expect = "pass"
seed = 1
[run]
duration_ms = 6000
settle_ms = 2000
[protocol]
profile = "3.7"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 20
linger_ms = 1
request_timeout_ms = 1000
delivery_timeout_ms = 1501
[[faults]]          # every answer takes longer than the request timeout for 2 s
at_ms = 1000
action = "rule"
rule = "delay"
kind = "ProduceResponse"
src = "b1"
delay_ms = 1200
duration_ms = 2000
"""


def test_a_batch_in_flight_expires_at_its_delivery_timeout():
    """KIP-91 (`Sender.getExpiredInflightBatches`): a batch whose retry is still in flight fails
    with DELIVERY_TIMEOUT when delivery.timeout.ms passes, not when its answer comes back; the
    late answer is not the application's any more, so no batch is acknowledged or failed later
    than its delivery timeout (plus one linger tick)."""
    events = run_scenario(parse_scenario(SLOW_ANSWERS, "slow.toml"), 1, keep_events=True)["_events"]
    created = {e["bid"]: e["created_us"] for e in events if e["kind"] == "batch"}
    ended = [(e["t"] - created[e["bid"]], e["kind"]) for e in events
             if e["kind"] in ("ack", "produce_failed")]
    assert ("produce_failed" in {kind for _, kind in ended}) and ("ack" in {k for _, k in ended})
    assert max(age for age, _ in ended) <= (1501 + 1) * 1000
    appended = {b["bid"] for e in events if e["kind"] == "append" for b in e["batches"]}
    failed = {e["bid"] for e in events if e["kind"] == "produce_failed"}
    assert failed & appended  # written, yet reported as timed out: the application cannot know
