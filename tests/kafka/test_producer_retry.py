"""The producer's retry decisions (ref §2.5, §3.2): which errors refresh metadata, and what a
batch fails with when its retries are spent."""

from __future__ import annotations

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
    producer.spec = {**producer.spec, **spec}
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
