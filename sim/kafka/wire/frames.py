"""Wire frames on the simulated network, and what the trace says of each.

Contract: a real client's bytes travel between nodes as `WireFrame` bodies of messages of kind
`WireRequest` (client to broker), `WireResponse` (broker to client) and `WireClose` (the client
closed one of its connections). A node may hold several connections to one broker; `conn`
names the connection (numbered by the client). Each frame carries `note`, the decoded summary
the trace's `send` event records beside the frame's hash and size (`brief`): the API, version
and correlation id, and a few fields per API (docs/trace.md, "Wire frames"). `frame_hash` is
the first 16 hex digits of the frame's BLAKE2b digest: the trace pins every byte without
holding them.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from sim.kafka.wire.codec import Malformed, decode_request
from sim.kafka.wire.records import BadRecords, read_batches

API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions",
             22: "InitProducerId", 23: "OffsetForLeaderEpoch"}

WIRE_REQUEST = "WireRequest"
WIRE_RESPONSE = "WireResponse"
WIRE_CLOSE = "WireClose"


def frame_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"api{api_key}")


class WireFrame(NamedTuple):
    conn: int
    data: bytes  # the frame with its size prefix
    note: dict  # decoded summary for the trace
    corr: int = -1  # no model correlation id: see `RequestQueue.send`
    # truth, not on the wire: for a Metadata answer, (tp, topic_id, leader, leader_epoch) of
    # the broker's cache it was read from, so the client's trace events can name the epoch of
    # the answer it adopted even at a version that carries none; for a Fetch answer, each
    # batch's (tp, base_offset, bid, count, leader_epoch, created_us)
    truth: tuple = ()

    def brief(self) -> dict:
        return {"conn": self.conn, "hash": frame_hash(self.data), "bytes": len(self.data),
                **self.note}


def read_request(data: bytes, conn, requests: dict, observe) -> dict:
    """A client's request frame read on its way to a broker: returns its note for the trace,
    `{"api": "unreadable"}` when it cannot be read. A readable request's (api key, version) is
    kept in `requests` under (conn, correlation id), so its answer can be decoded, and
    `observe(conn, request)` sees each request that has a body."""
    try:
        req = decode_request(data, True)
        note = request_note(req.api_key, req.api_version, req.correlation_id, req.body)
        requests[(conn, req.correlation_id)] = (req.api_key, req.api_version)
        if req.body is not None:
            observe(conn, req)
    except Malformed:
        note = {"api": "unreadable"}
    return note


def request_note(api_key: int, version: int, corr: int, body) -> dict:
    """The summary of a request: api, v, corr, and for Produce its batches
    `[tp, producer_id, producer_epoch, base_sequence, records]`, for Metadata its topics."""
    note = {"api": api_name(api_key), "v": version, "wire_corr": corr}
    if body is None:
        return note
    if api_key == 0:
        note["batches"] = produce_batches(body)
    elif api_key == 3 and body.topics is not None:
        note["topics"] = sorted(t.name for t in body.topics)
    elif api_key == 1:
        note["parts"] = [[f"{t.topic}-{p.partition}", int(p.fetch_offset),
                          int(getattr(p, "current_leader_epoch", -1))]
                         for t in body.topics for p in t.partitions]
    elif api_key == 2:
        note["parts"] = [[f"{t.name}-{p.partition_index}", int(p.timestamp)]
                         for t in body.topics for p in t.partitions]
    elif api_key == 23:
        note["parts"] = [[f"{t.topic}-{p.partition}", int(p.leader_epoch)]
                         for t in body.topics for p in t.partitions]
    return note


def produce_batches(body) -> list:
    rows = []
    for topic in body.topic_data:
        for part in topic.partition_data:
            tp = f"{topic.name}-{part.index}"
            try:
                for b in read_batches(part.records or b""):
                    rows.append([tp, b.producer_id, b.producer_epoch, b.base_sequence,
                                 b.record_count])
            except BadRecords:
                rows.append([tp, -1, -1, -1, -1])
    return rows
