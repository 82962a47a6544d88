"""Client connection rules (`NetworkClient` and `Metadata`, ref §3.1-3.2): a timed-out
Metadata request, and an acks=0 producer after a leader move."""

from __future__ import annotations

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
    producer.close_connection_with = resets.append
    now = producer.now_us
    producer.on_timer("meta_timeout", corr)
    assert resets == [f"b{node}"]
    assert producer.reconnect_at[node] > now  # the node waits out reconnect.backoff.ms
    assert producer.last_refresh_us == now  # failedUpdate: the next attempt backs off
    assert producer.meta_inflight is None and producer.need_update


ACKS_0_MOVE = """
name = "acks0-move"
expect = "pass"
seed = 1
[run]
duration_ms = 3000
settle_ms = 1000
[protocol]
profile = "3.7"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
name = "p1"
topic = "t"
acks = 0
enable_idempotence = "off"
records_per_sec = 500
linger_ms = 20
[[faults]]
at_ms = 1000
action = "move_leader"
target = "t-0"
"""


def test_an_acks_0_producer_finds_a_moved_leader_because_the_old_one_hangs_up():
    """An acks=0 Produce gets no answer, so a broker that rejects one closes the connection
    (`KafkaApis.handleProduceRequest`), and the client refreshes its metadata on every
    disconnect (`NetworkClient`); before, the producer wrote into the old leader until
    metadata.max.age.ms (5 minutes) passed."""
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    events = run_scenario(parse_scenario(ACKS_0_MOVE, "acks0.toml"), 1, keep_events=True)["_events"]
    hang_up = next(e for e in events if e["kind"] == "disconnect" and e["node"] == "p1")
    assert hang_up["peer"] == "b1" and 1_000_000 < hang_up["t"] < 1_100_000, hang_up
    late = [e for e in events if e["kind"] == "append" and e["t"] > 1_200_000]
    assert late and {e["node"] for e in late} == {"b2"}, {e["node"] for e in late}
