"""What a live run serves beyond a simulated one, read back by kafka-python's decoder: Produce
v10 with KIP-951's CurrentLeader and NodeEndpoints, Metadata naming the listeners' ports, empty
records for a partition without any; and a simulated run's table left as it was."""

from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsResponse, MetadataResponse
from kafka.protocol.producer import ProduceResponse

from sim.kafka.wire import answers as A
from sim.kafka.wire import answers_read as R
from sim.kafka.wire.codec import encode_response


class _ModelMetadata:
    brokers = (2, 1)
    partitions = (("t-0", 1, 2, 3),)


def test_produce_v10_carries_the_hint_and_the_new_leaders_endpoint():
    endpoints = [{"node_id": 2, "host": "127.0.0.1", "port": 40001, "rack": None}]
    values = A.produce_values({"t-0": (6, -1, -1), "t-1": (0, 5, 0)}, ["t-0", "t-1"],
                              {"t-0": (2, 1)}, endpoints)
    resp = ProduceResponse.decode(encode_response(0, 10, 3, values)[4:], version=10, header=True)
    p0, p1 = resp.responses[0].partition_responses
    assert (p0.error_code, p0.current_leader.leader_id, p0.current_leader.leader_epoch) == (6, 2, 1)
    assert p1.current_leader is None  # the tagged field left out: no hint
    (node,) = resp.node_endpoints
    assert (node.node_id, node.host, node.port) == (2, "127.0.0.1", 40001)


def test_an_older_produce_version_has_no_hint_to_carry():
    hinted = A.produce_values({"t-0": (6, -1, -1)}, ["t-0"], {"t-0": (2, 1)},
                              [{"node_id": 2, "host": "h", "port": 1, "rack": None}])
    plain = A.produce_values({"t-0": (6, -1, -1)}, ["t-0"])
    assert encode_response(0, 8, 3, hinted) == encode_response(0, 8, 3, plain)


def test_metadata_advertises_the_live_listeners():
    endpoints = {1: ("127.0.0.1", 40001), 2: ("127.0.0.1", 40002)}
    data = encode_response(3, 8, 7, A.metadata_values(_ModelMetadata, None, 1, endpoints))
    resp = MetadataResponse.decode(data[4:], version=8, header=True)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "127.0.0.1", 40001),
                                                                    (2, "127.0.0.1", 40002)]


def test_api_versions_live_and_simulated():
    def produce_range(table):
        resp = ApiVersionsResponse.decode(
            encode_response(18, 3, 9, A.api_versions_values(0, table))[4:], version=3, header=True)
        return next((k.min_version, k.max_version) for k in resp.api_keys if k.api_key == 0)
    assert produce_range(None) == (3, 8)  # a simulated run's answers stay as they were
    assert produce_range(A.SERVED_LIVE) == (3, 10)
    assert A.served(0, 10, A.SERVED_LIVE) and not A.served(0, 10)


class _EmptyFetch:
    error = 0
    partitions = ()


def test_an_empty_partition_is_null_in_a_simulated_run_and_empty_in_a_live_one():
    class P:
        tp, error, high_watermark, log_start_offset, entries = "t-0", 0, 0, 0, ()

    class Resp:
        error, partitions = 0, (P,)
    simulated = R.fetch_values(Resp, {})
    live = R.fetch_values(Resp, {}, b"")
    assert simulated["responses"][0]["partitions"][0]["records"] is None
    assert live["responses"][0]["partitions"][0]["records"] == b""
