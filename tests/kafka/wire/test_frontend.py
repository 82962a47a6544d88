"""A simulated broker's wire front end, driven with raw frames from a test node: answers come
in request order per connection, unsupported requests get Kafka's own treatment, a malformed
frame closes the connection and is recorded, and answers come from the broker's own view."""

from __future__ import annotations

from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from sim.core.actor import Actor
from sim.kafka.wire.codec import decode_response
from sim.kafka.wire.frames import WireFrame
from tests.kafka import build_cluster
from tests.kafka.wire.test_codec import _batch

SCENARIO = """
name = "wire-unit"
expect = "pass"
[run]
duration_ms = 800
settle_ms = 100
[cluster]
brokers = 2
[[topics]]
name = "t"
partitions = 1
replication_factor = 2
"""


class RawClient(Actor):
    """A node that writes frames and keeps what comes back."""

    def __init__(self, world):
        super().__init__("x1", world)
        self.got: list = []  # (conn, payload)
        self.closed: list = []

    def on_message(self, msg):
        if msg.kind == "WireResponse":
            self.got.append((msg.body.conn, msg.body.data[4:]))

    def on_disconnect(self, peer):
        self.closed.append((self.now_us, peer))


def _framed(request, corr: int) -> bytes:
    request.with_header(correlation_id=corr, client_id="x1")
    return request.encode(header=True, framed=True)


def _run(frames_at: list[tuple[int, int, bytes]]):
    """Run a 2-broker cluster; the test node sends each (at_ms, conn, frame) to b1."""
    cluster, trace = build_cluster(SCENARIO)
    client = RawClient(cluster.world)
    for at_ms, conn, data in frames_at:
        cluster.kernel.call_later(at_ms * 1000, client.send, "b1", "WireRequest",
                                  WireFrame(conn, data, {}))
    cluster.run()
    return client, trace


def _meta(*topics):
    return MetadataRequest[5](topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False)


def _produce(records: bytes):
    part = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
    topic = ProduceRequest.TopicProduceData(name="t", partition_data=[part])
    return ProduceRequest[7](transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[topic])


def test_a_connection_is_answered_in_request_order():
    # Produce (acks=all: parked until the follower fetches), then ApiVersions and Metadata
    # pipelined behind it: the ApiVersions the front end could answer at once waits its turn
    frames = [(300, 1, _framed(_produce(_batch()), 11)),
              (300, 1, _framed(ApiVersionsRequest[0](), 12)),
              (300, 1, _framed(_meta("t"), 13)),
              (300, 2, _framed(ApiVersionsRequest[0](), 21))]
    client, _ = _run(frames)
    corrs = [(conn, int.from_bytes(p[:4], "big")) for conn, p in client.got]
    assert [c for c in corrs if c[0] == 1] == [(1, 11), (1, 12), (1, 13)]
    # the other connection was not held behind the parked Produce
    assert corrs.index((2, 21)) < corrs.index((1, 11))
    _corr, produce = decode_response(0, 7, client.got[corrs.index((1, 11))][1])
    part = produce.responses[0].partition_responses[0]
    assert (int(part.error_code), part.base_offset) == (0, 0)


def test_answers_come_from_the_model():
    client, trace = _run([(300, 1, _framed(_meta("t", "nope"), 1)),
                          (310, 1, _framed(_produce(_batch(seq=0)), 2))])
    meta = MetadataResponse.decode(client.got[0][1], version=5, header=True)
    t, nope = meta.topics
    assert (t.partitions[0].leader_id, nope.error_code) == (1, 3)
    appends = [e for e in trace.events if e["kind"] == "append"]
    assert appends[0]["batches"][0]["bid"] == "x1#t-0:2000.0.0"
    assert appends[0]["batches"][0]["pid"] == 2000
    resp = ProduceResponse.decode(client.got[1][1], version=7, header=True)
    assert resp.responses[0].partition_responses[0].error_code == 0


def test_too_new_api_versions_gets_unsupported_version_in_v0():
    client, _ = _run([(300, 1, _framed(ApiVersionsRequest[4](), 5))])
    resp = ApiVersionsResponse.decode(client.got[0][1], version=0, header=True)
    assert resp.error_code == 35 and resp.header.correlation_id == 5


def test_unsupported_version_and_malformed_frames_close_the_connection():
    meta9 = _framed(MetadataRequest[9](topics=None, allow_auto_topic_creation=False), 6)
    garbage = (8).to_bytes(4, "big") + b"\x00\x03\x00\x05\x00"  # 5 bytes: no correlation id
    client, trace = _run([(300, 1, meta9), (500, 2, garbage)])
    assert client.got == []
    closed = [e for e in trace.events if e["kind"] == "wire_closed"]
    assert [(e["conn"], e["reason"].split(":")[0]) for e in closed] == [(1, "unsupported"),
                                                                         (2, "malformed")]
    assert (closed[0]["api"], closed[0]["v"]) == ("Metadata", 9)
    assert [peer for _t, peer in client.closed] == ["b1", "b1"]
