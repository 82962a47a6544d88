"""A broker's wire front end: real clients' frames in, the broker model's answers out.

Contract (mixin of `Broker`, after `RequestQueue` in its bases so that the model's responses
pass through `send` here): a `WireRequest` frame joins its connection's queue; a connection's
requests are taken one at a time and the next only once the previous one is answered, as
Kafka's `Processor` mutes a channel from reading a request until its response is sent
(`SocketServer`, 3.7.0). A request is then
- ApiVersions: answered here with `answers.SERVED`; a version above the served range gets
  UNSUPPORTED_VERSION in v0 format (`RequestContext.parseRequest`'s
  `isUnsupportedApiVersionsRequest` path), so the client retries lower;
- InitProducerId (no transactional id): a new producer id from the broker's manager, epoch 0;
- Metadata, Produce: translated into the model's request and handed to the broker's own
  request queue (service time, purgatory, epoch checks, producer state all apply); the model's
  answer is encoded back at the request's version;
- any other API or version, or a frame that cannot be read: the connection is closed, as
  Kafka's `Processor` closes a channel on an `InvalidRequestException`, and a `wire_closed`
  event records why.
State is volatile (`init_wire`): a crash forgets every connection; a closed connection's
unanswered requests are dropped and an answer still owed to it is discarded.
"""

from __future__ import annotations

from collections import deque

from sim.core.links import Message
from sim.kafka import vocab as V
from sim.kafka.messages import MetadataRequest
from sim.kafka.wire import answers as A
from sim.kafka.wire import answers_read as R
from sim.kafka.wire.codec_errors import Malformed, peek_header
from sim.kafka.wire.frames import WIRE_RESPONSE, WireFrame, api_name

API_VERSIONS, METADATA, PRODUCE, INIT_PRODUCER_ID = 18, 3, 0, 22
FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 1, 2, 23
# the model's answers that may be owed to a real client's request
MODEL_ANSWERS = frozenset({"MetadataResponse", "ProduceResponse", "FetchResponse",
                           "ListOffsetsResponse", "OffsetsForLeaderEpochResponse"})


class _Conn:
    __slots__ = ("queue", "busy")

    def __init__(self):
        self.queue: deque = deque()
        self.busy = False


class _Pending:
    """A request handed to the model: where its answer goes, and how to encode it
    (`values(model_response) -> response values`)."""

    __slots__ = ("key", "request", "values")

    def __init__(self, key, request, values):
        self.key, self.request, self.values = key, request, values


class WireFrontEnd:
    def init_wire(self) -> None:
        self.wire_conns: dict[tuple[str, int], _Conn] = {}
        self.wire_pending: dict[int, _Pending] = {}  # model corr -> pending
        self.wire_corr = getattr(self, "wire_corr", 0)  # model corrs stay unique

    # -- connections ---------------------------------------------------------------------
    def on_wire_request(self, msg) -> None:
        key = (msg.src, msg.body.conn)
        conn = self.wire_conns.get(key)
        if conn is None:
            conn = self.wire_conns[key] = _Conn()
        conn.queue.append(bytes(msg.body.data[4:]))  # without the size prefix; kio reads bytes only
        self._wire_next(key)

    def on_wire_close(self, msg) -> None:
        self.wire_conns.pop((msg.src, msg.body.conn), None)

    def wire_peer_closed(self, peer: str) -> None:
        """Every connection of `peer` closed (it died, or the network reset them)."""
        for key in [k for k in self.wire_conns if k[0] == peer]:
            del self.wire_conns[key]

    def _wire_close(self, key, reason: str, api_key: int, version: int) -> None:
        self.emit(V.WIRE_CLOSED, {"peer": key[0], "conn": key[1], "reason": reason,
                                  "api": api_name(api_key), "v": version})
        # the network keeps one connection per pair of nodes: closing it closes them all
        self.wire_peer_closed(key[0])
        self.connection_closed(key[0])
        self.close_connection_with(key[0])

    # -- requests ------------------------------------------------------------------------
    def _wire_next(self, key) -> None:
        conn = self.wire_conns.get(key)
        while conn is not None and not conn.busy and conn.queue:
            self._wire_handle(key, conn, conn.queue.popleft())
            conn = self.wire_conns.get(key)

    def _wire_handle(self, key, conn, data: bytes) -> None:
        try:
            api_key, version, corr = peek_header(data)
        except Malformed as exc:
            self._wire_close(key, f"malformed: {exc}", -1, -1)
            return
        table = getattr(self.world, "wire_served", None)  # a live run serves more
        if api_key == API_VERSIONS and not A.served(api_key, version, table):
            self._wire_answer(key, api_key, 0, corr,
                              A.api_versions_values(A.UNSUPPORTED_VERSION, table))
            return
        if not A.served(api_key, version, table):
            self._wire_close(key, "unsupported", api_key, version)
            return
        try:
            req = _codec().decode_request(data, True)
        except Malformed as exc:
            self._wire_close(key, f"malformed: {exc}", api_key, version)
            return
        if api_key == API_VERSIONS:
            self._wire_answer(key, api_key, version, corr, A.api_versions_values(0, table))
        elif api_key == INIT_PRODUCER_ID:
            error, pid = self.generate_producer_id()
            self._wire_answer(key, api_key, version, corr, A.init_producer_id_values(pid, error))
        elif api_key == METADATA:
            topics = A.metadata_topics(version, req.body)
            controller = self._controller_id()
            endpoints = getattr(self.world, "wire_endpoints", None)
            self._wire_to_model(key, conn, req, "Metadata", MetadataRequest(self._next_corr()),
                                lambda resp: A.metadata_values(resp, topics, controller,
                                                               endpoints))
        elif api_key == PRODUCE:
            self._wire_produce(key, conn, req)
        else:
            self._wire_read(key, conn, req)

    def _wire_read(self, key, conn, req) -> None:
        """Fetch, ListOffsets, OffsetForLeaderEpoch: handed to the model as they are."""
        corr, body = self._next_corr(), req.body
        if req.api_key == FETCH:
            fetch, _order = R.to_model_fetch(body, corr)
            batches = self.world.wire_batches
            empty = getattr(self.world, "wire_empty_records", None)
            self._wire_to_model(key, conn, req, "Fetch", fetch,
                                lambda resp: R.fetch_values(resp, batches, empty))
        elif req.api_key == LIST_OFFSETS:
            self._wire_to_model(key, conn, req, "ListOffsets",
                                R.to_model_list_offsets(body, corr), R.list_offsets_values)
        else:
            self._wire_to_model(key, conn, req, "OffsetsForLeaderEpoch",
                                R.to_model_offsets_for_leader_epoch(body, corr),
                                R.offsets_for_leader_epoch_values)

    def _next_corr(self) -> int:
        self.wire_corr += 1
        return self.wire_corr

    def _wire_produce(self, key, conn, req) -> None:
        corr = self._next_corr()
        produce, refused, order = A.to_model_produce(key[0], req.body, corr, self.now_us,
                                                     self.world.wire_batches)
        if produce is None:  # nothing the model can take: answer at once
            if int(req.body.acks) != 0:
                self._wire_answer(key, PRODUCE, req.api_version, req.correlation_id,
                                  A.produce_values({tp: (e, -1, -1) for tp, e in refused}, order))
            return
        self._wire_to_model(key, conn, req, "Produce", produce,
                            lambda resp: self._produce_values(resp, refused, order))
        if produce.acks == 0:  # no answer will come: the connection reads on
            self.wire_pending.pop(corr, None)
            conn.busy = False

    def _produce_values(self, resp, refused, order) -> dict:
        """The model's Produce answer as wire values, with its KIP-951 CurrentLeader hints and
        NodeEndpoints (written from Produce v10). A live run may take the hints from the
        broker's metadata cache instead of its replica state (`world.wire_hint == "cache"`):
        the stale hint a broker whose cache lags would give."""
        results = {r.tp: (r.error, r.base_offset, r.log_start_offset) for r in resp.results}
        results.update((tp, (e, -1, -1)) for tp, e in refused)
        hints = {r.tp: r.current_leader for r in resp.results if r.current_leader}
        if getattr(self.world, "wire_hint", "model") == "cache":
            hints = {tp: self.metadata[tp][1:3] if tp in self.metadata else hint
                     for tp, hint in hints.items()}
        live = getattr(self.world, "wire_endpoints", None)
        ids = sorted({h[0] for h in hints.values() if h[0] >= 0 and h[0] in self.alive_brokers})
        endpoints = [{"node_id": b, "host": A.endpoint(b, live)[0], "port": A.endpoint(b, live)[1],
                      "rack": None} for b in ids]
        return A.produce_values(results, order, hints, endpoints)

    def _wire_to_model(self, key, conn, req, kind: str, body, values) -> None:
        conn.busy = True
        self.wire_pending[body.corr] = _Pending(key, req, values)
        # as if it came over the client's connection: the model's queue, service time and
        # handlers apply
        self.on_message(Message(-1, key[0], self.name, kind, body))

    # -- answers -------------------------------------------------------------------------
    def send(self, dst: str, kind: str, body) -> int:
        pending = self.wire_pending.get(getattr(body, "corr", None)) \
            if kind in MODEL_ANSWERS else None
        if pending is None or pending.key[0] != dst:
            return super().send(dst, kind, body)
        del self.wire_pending[body.corr]
        req = pending.request
        truth = _truth(kind, body)
        mid = self._wire_answer(pending.key, req.api_key, req.api_version, req.correlation_id,
                                pending.values(body), truth)
        conn = self.wire_conns.get(pending.key)
        if conn is not None:
            conn.busy = False
            self._wire_next(pending.key)
        return mid

    def _controller_id(self) -> int:
        c = self.controller
        return int(c[1:]) if c and c[1:].isdigit() else -1

    def _wire_answer(self, key, api_key: int, version: int, corr: int, values: dict,
                     truth: tuple = ()) -> int:
        if key not in self.wire_conns:
            return -1  # the connection closed: nothing to answer on
        data = _codec().encode_response(api_key, version, corr, values)
        note = {"api": api_name(api_key), "v": version, "wire_corr": corr}
        note.update(response_note(api_key, version, values))
        return super().send(key[0], WIRE_RESPONSE, WireFrame(key[1], data, note, truth=truth))


def _truth(kind: str, body) -> tuple:
    """What an answer's frame carries beside its bytes for the client's trace events: a
    Metadata answer's (tp, topic_id, leader, leader_epoch) rows; a Fetch answer's batches as
    (tp, base_offset, bid, count, leader_epoch, created_us)."""
    if kind == "MetadataResponse":
        return body.partitions
    if kind == "FetchResponse":
        return tuple((p.tp, e[0], e[3].bid, e[1], e[2], e[3].created_us)
                     for p in body.partitions for e in p.entries)
    return ()




def _codec():
    """The codec, loaded with the first frame: kio takes a third of a second to import, which
    a run without real clients should not pay."""
    from sim.kafka.wire import codec
    return codec


def response_note(api_key: int, version: int, values: dict) -> dict:
    """The trace's summary of a response: per partition Produce `[tp, error, base_offset]`,
    Metadata `[tp, leader]` (and the leader epoch from v7, which carries it), Fetch `[tp,
    error, high_watermark, record bytes]`, ListOffsets `[tp, error, offset]`,
    OffsetForLeaderEpoch `[tp, error, leader_epoch, end_offset]`; InitProducerId the id,
    ApiVersions the error."""
    if api_key == PRODUCE:
        return {"parts": [[f"{t['name']}-{p['index']}", p["error_code"], p["base_offset"]]
                          for t in values["responses"] for p in t["partition_responses"]]}
    if api_key == METADATA:
        with_epoch = version >= 7
        return {"parts": [[f"{t['name']}-{p['partition_index']}", p["leader_id"]]
                          + ([p["leader_epoch"]] if with_epoch else [])
                          for t in values["topics"] for p in t["partitions"]]}
    if api_key == INIT_PRODUCER_ID:
        return {"producer_id": values["producer_id"]}
    if api_key == FETCH:
        return {"parts": [[f"{t['topic']}-{p['partition_index']}", p["error_code"],
                           p["high_watermark"], len(p["records"] or b"")]
                          for t in values["responses"] for p in t["partitions"]]}
    if api_key == LIST_OFFSETS:
        return {"parts": [[f"{t['name']}-{p['partition_index']}", p["error_code"], p["offset"]]
                          for t in values["topics"] for p in t["partitions"]]}
    if api_key == OFFSET_FOR_LEADER_EPOCH:
        return {"parts": [[f"{t['topic']}-{p['partition']}", p["error_code"], p["leader_epoch"],
                           p["end_offset"]] for t in values["topics"] for p in t["partitions"]]}
    return {"error": values.get("error_code", 0)}

