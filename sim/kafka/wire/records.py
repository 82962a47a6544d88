"""RecordBatch v2 headers: what the model keeps of a client's batch, and the bytes it serves.

Contract: `read_batches(data)` reads the header of every batch in a Produce partition's
`records` (Kafka's `DefaultRecordBatch`, magic 2: base offset, length, partition leader epoch,
magic, CRC, attributes, last offset delta, timestamps, producer id, producer epoch, base
sequence, record count) and returns them, or raises `BadRecords` for data that is not whole v2
batches. The model keeps the record count, producer id, epoch and base sequence; the bytes stay
as the client wrote them. `with_offset(raw, base_offset, leader_epoch)` sets the two fields a
broker assigns; both lie outside the CRC (which covers attributes onwards), so it need not be
recomputed. `crc_ok` checks the CRC-32C, as `LogValidator` does for every batch it appends.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from sim.kafka.wire.shims import EPOCH_S

HEADER_BYTES = 61
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_FROM = 21  # the CRC covers the batch from its attributes to its end


class BadRecords(Exception):
    """Records that are not whole RecordBatch v2 batches."""


class BatchHeader(NamedTuple):
    base_offset: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    raw: bytes  # the whole batch as written


def read_batches(data: bytes) -> list[BatchHeader]:
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < HEADER_BYTES:
            raise BadRecords(f"{len(data) - pos} bytes left, less than a batch header")
        (base, length, ple, magic, crc, attrs, delta, first_ts, max_ts, pid, pepoch, seq,
         count) = _HEADER.unpack_from(data, pos)
        if magic != 2:
            raise BadRecords(f"magic {magic}: only RecordBatch v2 is served")
        end = pos + 12 + length
        if length < HEADER_BYTES - 12 or end > len(data):
            raise BadRecords(f"batch length {length} past the data")
        out.append(BatchHeader(base, ple, crc, attrs, delta, first_ts, max_ts, pid, pepoch, seq, count,
                               bytes(data[pos:end])))
        pos = end
    if not out:
        raise BadRecords("no batch")
    return out


def crc_ok(batch: BatchHeader) -> bool:
    return crc32c(batch.raw[_CRC_FROM:]) == batch.crc


def with_offset(raw: bytes, base_offset: int, leader_epoch: int) -> bytes:
    """`raw` with the base offset and partition leader epoch a leader assigns on append."""
    return struct.pack(">q", base_offset) + raw[8:12] + struct.pack(">i", leader_epoch) + raw[16:]


def _varint(n: int) -> bytes:
    """A zig-zag varint, as RecordBatch v2 encodes its records' fields."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def synthesize(batch, base_offset: int, leader_epoch: int, epoch_ms: int = EPOCH_S * 1000) -> bytes:
    """RecordBatch v2 bytes for a batch the model's own producer wrote (it has no bytes):
    `batch.count` records with null keys and values, timestamped at its creation."""
    records = bytearray()
    for i in range(batch.count):
        body = b"\0" + _varint(0) + _varint(i) + _varint(-1) + _varint(-1) + _varint(0)
        records += _varint(len(body)) + body
    ts = epoch_ms + batch.created_us // 1000
    tail = struct.pack(">hiqqqhii", 0, batch.count - 1, ts, ts, batch.pid,
                       batch.producer_epoch, batch.base_seq, batch.count) + bytes(records)
    length = 4 + 1 + 4 + len(tail)  # partition leader epoch, magic, CRC, then the rest
    return (struct.pack(">qiib", base_offset, length, leader_epoch, 2)
            + struct.pack(">I", crc32c(tail)) + tail)
