"""The read side of the wire front end (Fetch, ListOffsets, OffsetForLeaderEpoch), driven with
requests kafka-python wrote and read back with its decoder: a real client's batch comes back
byte for byte with the offset and epoch the leader gave it; a model producer's batch comes back
as a valid RecordBatch v2 built for it."""

from __future__ import annotations

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.record.default_records import DefaultRecordBatch

from sim.kafka.messages import Batch
from sim.kafka.wire.records import read_batches, synthesize
from tests.kafka.wire.test_codec import _batch
from tests.kafka.wire.test_frontend import _framed, _produce, _run


def _fetch(offset: int):
    part = FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1,
                                                  fetch_offset=offset, log_start_offset=-1,
                                                  partition_max_bytes=1 << 20)
    topic = FetchRequest.FetchTopic(topic="t", partitions=[part])
    return FetchRequest[11](replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1, topics=[topic],
                            forgotten_topics_data=[], rack_id="")


def _list_offsets(timestamp: int):
    part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=-1, timestamp=timestamp)
    topic = ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[part])
    return ListOffsetsRequest[5](replica_id=-1, isolation_level=0, topics=[topic])


def _epoch_end(epoch: int):
    part = OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=0, leader_epoch=epoch)
    topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic="t", partitions=[part])
    return OffsetForLeaderEpochRequest[3](replica_id=-1, topics=[topic])


def test_fetch_serves_the_client_s_bytes_at_their_offset():
    first, second = _batch(seq=0, values=(b"a", b"b")), _batch(seq=2, values=(b"c",))
    client, trace = _run([(300, 1, _framed(_produce(first), 1)),
                          (310, 1, _framed(_produce(second), 2)),
                          (400, 2, _framed(_fetch(1), 3)),
                          (410, 2, _framed(_list_offsets(-1), 4)),
                          (420, 2, _framed(_list_offsets(-2), 5)),
                          (430, 2, _framed(_epoch_end(0), 6))])
    answers = {int.from_bytes(p[:4], "big"): p for conn, p in client.got if conn == 2}
    fetched = FetchResponse.decode(answers[3], version=11, header=True)
    part = fetched.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark) == (0, 3)
    records = bytes(part.records)
    batches = read_batches(records)
    # the fetch from offset 1 returns both batches (the one holding offset 1 first)
    assert [b.base_offset for b in batches] == [0, 2]
    # the client's bytes after the base offset and partition leader epoch the leader set
    assert batches[0].raw[16:] == first[16:] and batches[1].raw[16:] == second[16:]
    assert all(DefaultRecordBatch(b.raw).validate_crc() for b in batches)
    values = [r.value for b in batches for r in DefaultRecordBatch(b.raw)]
    assert values == [b"a", b"b", b"c"]
    latest = ListOffsetsResponse.decode(answers[4], version=5, header=True)
    earliest = ListOffsetsResponse.decode(answers[5], version=5, header=True)
    assert latest.topics[0].partitions[0].offset == 3
    assert earliest.topics[0].partitions[0].offset == 0
    end = OffsetForLeaderEpochResponse.decode(answers[6], version=3, header=True)
    assert (end.topics[0].partitions[0].leader_epoch, end.topics[0].partitions[0].end_offset) == (0, 3)
    # the trace's summary of the answer (the test node writes its requests without one)
    sends = [e for e in trace.events if e["kind"] == "send" and e.get("api") == "Fetch"]
    assert [e["parts"] for e in sends] == [[["t-0", 0, 3, len(records)]]]


def test_a_model_producer_s_batch_gets_valid_bytes():
    raw = synthesize(Batch("p1#7", "p1", 3, 25_000, 1001, 2, 40), base_offset=12, leader_epoch=4)
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.leader_epoch, batch.producer_id, batch.producer_epoch,
            batch.base_sequence) == (12, 4, 1001, 2, 40)
    assert [(r.offset, r.value) for r in batch] == [(12, None), (13, None), (14, None)]
    assert read_batches(raw)[0].record_count == 3


def test_list_offsets_by_time_reads_the_client_s_clock():
    """A real client asks by its own clock (the run's plus `shims.EPOCH_S`) and is answered
    by it, by the times it wrote in its batches (CreateTime, each batch's max timestamp): the
    first batch written at or after that time, with its time; a time past every batch finds
    none (-1), one before the run the first batch. A batch whose time is not on the run's
    clock (here ahead of it) counts as written when the leader read it."""
    from sim.kafka.wire.shims import EPOCH_S
    epoch_ms = EPOCH_S * 1000
    first = _batch(seq=0, values=(b"a", b"b"), ts=epoch_ms + 100)
    second = _batch(seq=2, values=(b"c",), ts=epoch_ms + 200)
    ahead = _batch(seq=3, values=(b"d",), ts=epoch_ms + 3_600_000)
    client, _trace = _run([(300, 1, _framed(_produce(first), 1)),
                           (400, 1, _framed(_produce(second), 2)),
                           (450, 1, _framed(_produce(ahead), 6)),
                           (500, 2, _framed(_list_offsets(epoch_ms + 150), 3)),
                           (510, 2, _framed(_list_offsets(epoch_ms + 60_000), 4)),
                           (520, 2, _framed(_list_offsets(0), 5)),
                           (530, 2, _framed(_list_offsets(epoch_ms + 201), 7))])
    answers = {int.from_bytes(p[:4], "big"): p for conn, p in client.got if conn == 2}
    found, late, early, read = (ListOffsetsResponse.decode(answers[c], version=5, header=True)
                                .topics[0].partitions[0] for c in (3, 4, 5, 7))
    assert (found.offset, found.timestamp) == (2, epoch_ms + 200)
    assert (late.offset, late.timestamp) == (-1, -1)
    assert (early.offset, early.timestamp) == (0, epoch_ms + 101)
    assert read.offset == 3 and epoch_ms + 450 <= read.timestamp < epoch_ms + 500
