"""A live client's place on the simulated network: its TCP connections' frames, as messages.

Contract: a `Gateway` is one node of the simulation per live client (and one, `live`, for
clients the scenario did not start). Each whole frame its client writes on a connection to a
broker's listener is sent to that broker as a `WireRequest` (so the network's delays, cuts
and resets apply, and the trace's `send` event records it); each `WireResponse` is written back
on the connection it answers. The client closing a connection is a `WireClose`; the network
closing it (a reset, the broker's death, a close by the broker) closes the client's TCP
connections to that broker. A frame for a dead broker closes its connection.
What the client saw on the wire becomes the trace's client events, as for a real client
inside the simulation (`observe.ProduceWatch`: `batch`, `ack`, `produce_error`;
`observe.MetadataWatch`: `client_epoch`), so the run is judged by the same invariants; and
`ops` keeps, for the client-observable history, the leader epoch each request that carries
one names (Fetch, ListOffsets, OffsetForLeaderEpoch): `{"op": "epoch", "tp", "epoch", "api"}`.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import vocab as V
from sim.kafka.wire.codec import Malformed, decode_response, frame
from sim.kafka.wire.frames import WIRE_CLOSE, WIRE_REQUEST, WireFrame, read_request
from sim.kafka.wire.observe import MetadataWatch, ProduceWatch

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 3, 23


class Gateway(Actor):
    def __init__(self, world, name: str, hub, acks="all", idempotence: str | None = None):
        super().__init__(name, world)
        self.idempotence = idempotence  # "required" / "off" as the client is set up; None unknown
        self.hub = hub
        self.conns: dict[int, object] = {}  # conn id -> sockets.Conn
        self.requests: dict[tuple[int, int], tuple[int, int]] = {}  # (conn, corr) -> api, v
        self.watch = ProduceWatch(self, acks)
        self.metadata = MetadataWatch(self)
        self.ops: list[dict] = []

    # -- from the client -----------------------------------------------------------------
    def from_client(self, conn, data: bytes) -> None:
        if not self.peer_alive(conn.broker):
            self.hub.close(conn.id)
            return
        self.conns[conn.id] = conn
        note = read_request(data, conn.id, self.requests, self._observe_request)
        self.send(conn.broker, WIRE_REQUEST, WireFrame(conn.id, frame(data), note))

    def _observe_request(self, cid: int, req) -> None:
        if req.api_key == PRODUCE:
            self.watch.on_request(cid, req.correlation_id, req.body)
        elif req.api_key in (FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH):
            for tp, epoch in _request_epochs(req.api_key, req.body):
                if epoch >= 0:
                    self.ops.append({"client": self.name, "op": "epoch", "tp": tp,
                                     "epoch": epoch, "api": req.api_key, "t_us": self.now_us})

    def client_closed(self, conn) -> None:
        if self.conns.pop(conn.id, None) is None:
            return
        self._forget(conn.id)
        self.send(conn.broker, WIRE_CLOSE, WireFrame(conn.id, b"", {}))

    # -- from the cluster ----------------------------------------------------------------
    def on_message(self, msg) -> None:
        if msg.kind != "WireResponse" or msg.body.conn not in self.conns:
            return
        data = msg.body.data
        self._observe_answer(msg.src, msg.body, data[4:])
        self.hub.write(msg.body.conn, data)

    def _observe_answer(self, broker: str, wire: WireFrame, payload: bytes) -> None:
        corr = int.from_bytes(payload[:4], "big", signed=True)
        api_key, version = self.requests.pop((wire.conn, corr), (None, None))
        if api_key not in (PRODUCE, METADATA):
            return
        try:
            _corr, body = decode_response(api_key, version, payload)
        except Malformed:
            return
        if api_key == PRODUCE:
            self.watch.on_response(wire.conn, corr, body)
        else:
            self.metadata.on_response(broker, body, wire.truth)

    def on_disconnect(self, peer: str) -> None:
        for cid in sorted(self.conns):
            if self.conns[cid].broker == peer:
                del self.conns[cid]
                self._forget(cid)
                self.hub.close(cid)

    def _forget(self, cid: int) -> None:
        self.watch.connection_closed(cid)
        for key in [k for k in self.requests if k[0] == cid]:
            del self.requests[key]

    def start(self) -> None:
        if self.idempotence is not None:
            self.emit(V.CLIENT_CONFIG, {"idempotence": self.idempotence,
                                        "effective_idempotence": self.idempotence,
                                        "acks": self.watch.acks, "leader_discovery": "live"})


def _request_epochs(api_key: int, body) -> list[tuple[str, int]]:
    """(tp, current leader epoch) of each partition a Fetch, ListOffsets or
    OffsetForLeaderEpoch request names."""
    if api_key == FETCH:
        return [(f"{t.topic}-{p.partition}", int(getattr(p, "current_leader_epoch", -1)))
                for t in body.topics for p in t.partitions]
    if api_key == LIST_OFFSETS:
        return [(f"{t.name}-{p.partition_index}", int(getattr(p, "current_leader_epoch", -1)))
                for t in body.topics for p in t.partitions]
    return [(f"{t.topic}-{p.partition}", int(getattr(p, "current_leader_epoch", -1)))
            for t in body.topics for p in t.partitions]
