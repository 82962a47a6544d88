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
        (base, length, ple, magic, crc, attrs, delta, first_ts, _max_ts, pid, pepoch, seq,
         count) = _HEADER.unpack_from(data, pos)
        if magic != 2:
            raise BadRecords(f"magic {magic}: only RecordBatch v2 is served")
        end = pos + 12 + length
        if length < HEADER_BYTES - 12 or end > len(data):
            raise BadRecords(f"batch length {length} past the data")
        out.append(BatchHeader(base, ple, crc, attrs, delta, first_ts, pid, pepoch, seq, count,
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
