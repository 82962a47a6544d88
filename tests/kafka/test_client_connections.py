"""Client connection rules (`NetworkClient` and `Metadata`, ref §3.1-3.2): a timed-out
Metadata request, and a consumer's out-of-range reset."""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.messages import FetchPartitionData
from tests.kafka import build_cluster

SCENARIO = """
name = "connections"
expect = "pass"
[[topics]]
name = "t"
[[producers]]
topic = "t"
[[consumers]]
topic = "t"
"""


def _clients():
    cluster, _ = build_cluster(SCENARIO)
    producer, consumer = cluster.clients
    return cluster, producer, consumer


def test_a_timed_out_metadata_request_closes_its_connection_and_backs_off():
    cluster, producer, _ = _clients()
    cluster.kernel.until_us = 1_000_000
    cluster.run()  # running, then stopped: the next Metadata request stays unanswered
    producer.request_update(immediate=True)
    corr, node = producer.meta_inflight, producer.meta_node
    assert corr is not None
    resets = []
    producer.reset_connection = resets.append
    now = producer.now_us
    producer.on_timer("meta_timeout", corr)
    assert resets == [f"b{node}"]
    assert producer.reconnect_at[node] > now  # the node waits out reconnect.backoff.ms
    assert producer.last_refresh_us == now  # failedUpdate: the next attempt backs off
    assert producer.meta_inflight is None and producer.need_update


def test_consumer_out_of_range_resets_to_the_log_start_from_either_side():
    _, _, consumer = _clients()
    for position in (3, 500):  # below the log start, and above the log end
        consumer.position["t-0"] = position
        data = FetchPartitionData("t-0", E.OFFSET_OUT_OF_RANGE, high_watermark=200,
                                  log_start_offset=10, log_end_offset=250)
        consumer._on_fetch_error(1, data, (), 0)
        assert consumer.position["t-0"] == 10
