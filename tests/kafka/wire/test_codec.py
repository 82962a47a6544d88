"""The wire front end's encoding, read back by a second, independent decoder (kafka-python's
protocol, generated from Kafka's JSON schemas on its own), and its reading of requests that
decoder wrote; RecordBatch v2 headers against kafka-python's record classes."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata import ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import InitProducerIdResponse, ProduceRequest, ProduceResponse
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from sim.kafka.wire import answers as A
from sim.kafka.wire.codec import Malformed, decode_request, encode_response, split_frames
from sim.kafka.wire.records import BadRecords, crc_ok, read_batches, with_offset


class _ModelMetadata:
    brokers = (2, 1)
    partitions = (("t-0", 1, 2, 3), ("t-1", 1, -1, 4))


def _batch(pid=2000, epoch=0, seq=5, values=(b"abc", b"def"), ts=1_700_000_000_000) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=ts + i, key=None, value=v, headers=[])
    return bytes(b.build())


@pytest.mark.parametrize("version", [0, 1, 5, 8])
def test_metadata_response_reads_back_at_every_served_version(version):
    data = encode_response(3, version, 7, A.metadata_values(_ModelMetadata, ["t", "u"], 1))
    resp = MetadataResponse.decode(data[4:], version=version, header=True)
    assert resp.header.correlation_id == 7
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "b1", 9092),
                                                                    (2, "b2", 9092)]
    t, u = resp.topics
    assert (t.name, t.error_code, u.name, u.error_code) == ("t", 0, "u", 3)
    p0, p1 = t.partitions
    assert (p0.partition_index, p0.leader_id, p0.error_code, list(p0.isr_nodes)) == (0, 2, 0, [2])
    assert (p1.leader_id, p1.error_code) == (-1, 5)  # LEADER_NOT_AVAILABLE
    if version >= 7:
        assert p0.leader_epoch == 3
    if version >= 1:
        assert resp.controller_id == 1


def test_produce_response_reads_back():
    values = A.produce_values({"t-0": (0, 10, 0), "t-1": (6, -1, -1)}, ["t-0", "t-1", "u-0"])
    resp = ProduceResponse.decode(encode_response(0, 7, 3, values)[4:], version=7, header=True)
    t, u = resp.responses
    assert [(p.index, p.error_code, p.base_offset, p.log_start_offset)
            for p in t.partition_responses] == [(0, 0, 10, 0), (1, 6, -1, -1)]
    assert [(p.index, p.error_code) for p in u.partition_responses] == [(0, 7)]  # no answer


def test_api_versions_and_init_producer_id_read_back():
    resp = ApiVersionsResponse.decode(encode_response(18, 3, 9, A.api_versions_values())[4:],
                                      version=3, header=True)
    assert resp.header.correlation_id == 9
    assert {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys} == \
        {(k, lo, hi) for k, (lo, hi) in A.SERVED.items()}
    # UNSUPPORTED_VERSION answers in v0 format, whatever the request's version
    resp = ApiVersionsResponse.decode(encode_response(18, 0, 9, A.api_versions_values(35))[4:],
                                      version=0, header=True)
    assert resp.error_code == 35
    resp = InitProducerIdResponse.decode(
        encode_response(22, 0, 4, A.init_producer_id_values(2001))[4:], version=0, header=True)
    assert (resp.producer_id, resp.producer_epoch, resp.error_code) == (2001, 0, 0)


def _produce(tp_index: int, records: bytes):
    part = ProduceRequest.TopicProduceData.PartitionProduceData(index=tp_index, records=records)
    topic = ProduceRequest.TopicProduceData(name="t", partition_data=[part])
    return ProduceRequest[7](transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[topic])


def _meta(*topics):
    return MetadataRequest[5](topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False)


def _framed(request, corr: int, client_id: str = "x1") -> bytes:
    request.with_header(correlation_id=corr, client_id=client_id)
    return request.encode(header=True, framed=True)


def test_requests_written_by_kafka_python_are_read():
    meta, produce = _meta("t"), _produce(1, _batch())
    frames, rest = split_frames(_framed(meta, 7) + _framed(produce, 8) + b"\0\0")
    assert rest == b"\0\0" and len(frames) == 2
    req = decode_request(frames[0], True)
    assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (3, 5, 7, "x1")
    assert A.metadata_topics(5, req.body) == ["t"]
    req = decode_request(frames[1], True)
    model, refused, order = A.to_model_produce("x1", req.body, 1, 0)
    assert (refused, order, model.acks, model.timeout_us) == ([], ["t-1"], -1, 30_000_000)
    batch = model.partitions[0].batch
    assert (batch.count, batch.pid, batch.producer_epoch, batch.base_seq) == (2, 2000, 0, 5)
    assert batch.bid == "x1#t-1:2000.0.5"


def test_a_truncated_request_is_malformed():
    meta = _framed(_meta("t"), 1)
    frames, _ = split_frames(meta)
    with pytest.raises(Malformed):
        decode_request(frames[0][:-3], True)
    with pytest.raises(Malformed):
        split_frames(b"\xff\xff\xff\xff")  # a negative size


def test_record_batch_header_and_assigned_offset():
    raw = _batch(pid=7, epoch=2, seq=40)
    (h,) = read_batches(raw)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.record_count) == (7, 2, 40, 2)
    assert crc_ok(h)
    moved = DefaultRecordBatch(with_offset(raw, 42, 9))
    # base offset and partition leader epoch lie outside the CRC
    assert (moved.base_offset, moved.leader_epoch, moved.validate_crc()) == (42, 9, True)
    damaged = raw[:-1] + bytes([raw[-1] ^ 1])
    assert not crc_ok(read_batches(damaged)[0])
    with pytest.raises(BadRecords):
        read_batches(raw[:30])


def test_a_corrupt_batch_is_refused_before_the_model():
    raw = _batch()
    produce = _produce(0, raw[:-1] + bytes([raw[-1] ^ 1]))
    req = decode_request(split_frames(_framed(produce, 3))[0][0], True)
    model, refused, order = A.to_model_produce("x1", req.body, 1, 0)
    assert model is None and refused == [("t-0", A.CORRUPT_MESSAGE)] and order == ["t-0"]
