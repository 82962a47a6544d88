"""aiokafka's producer as a node of the simulation (Mode A: deterministic).

Contract: an `AiokafkaProducer` actor runs the real `aiokafka.AIOKafkaProducer` on its own
`SimLoop`, whose connections are `SimTransport`s to the broker nodes (`b<id>:9092`). Every
frame the library writes is a `WireRequest` message over the simulated network and every
answer a `WireResponse`, so delays, cuts, resets and rules apply frame by frame; each `send`
event carries the frame's hash and a decoded summary (`frames.WireFrame.brief`). The library's
clock and randomness are the run's (`shims`). The application on top sends `records_per_sec`
records round robin over the topic's partitions, each with an explicit timestamp (the record
builder would read the OS clock otherwise), from `start_ms` to `stop_ms`, and reports each
send the library fails as `produce_failed`. What the library saw is also recorded as `batch`,
`ack` and `produce_error` events (`observe.ProduceWatch`).
Not modelled: a crash restarts the library from nothing (a new producer id); consumers.
"""

from __future__ import annotations

import asyncio
import logging

import aiokafka
from aiokafka.errors import KafkaError

from sim.core.actor import Actor
from sim.core.asyncloop import SimLoop
from sim.kafka import vocab as V
from sim.kafka.wire import shims
from sim.kafka.wire.answers import PORT
from sim.kafka.wire.codec import Malformed, decode_request, decode_response, frame
from sim.kafka.wire.frames import WIRE_CLOSE, WIRE_REQUEST, WireFrame, request_note
from sim.kafka.wire.observe import MetadataWatch, ProduceWatch
from sim.kafka.wire.transport import SimTransport

LIBRARY = "aiokafka"
PRODUCE, METADATA = 0, 3
# how long the application waits before it starts a producer again after `start()` failed
RESTART_US = 1_000_000


class AiokafkaProducer(Actor):
    def __init__(self, world, spec, topic_spec, protocol, index: int):
        super().__init__(spec.name, world)
        shims.bind_library(LIBRARY)
        # the library's own log lines ("retrying...") would go to the run's stderr; what it
        # did is in the trace
        library_log = logging.getLogger(LIBRARY)
        library_log.propagate = False
        if not library_log.handlers:
            library_log.addHandler(logging.NullHandler())
        self.spec = spec
        self.topic = topic_spec.name
        self.partitions = topic_spec.partitions
        self.brokers = world.options.cluster.brokers
        self.idempotent = spec.enable_idempotence in ("requested", "required")
        self.acks = spec.acks
        self._fresh()

    def _fresh(self) -> None:
        self.loop = SimLoop(self.world.kernel, self._connect)
        self.loop.scope = lambda: shims.running(self.world.kernel, self.rng(LIBRARY))
        self.loop.set_exception_handler(self._loop_error)
        self.transports: dict[int, SimTransport] = {}
        self.requests: dict[tuple[int, int], tuple[int, int]] = {}  # (conn, corr) -> api, v
        self.next_conn = getattr(self, "next_conn", 0)
        self.watch = ProduceWatch(self, self.acks)
        self.metadata = MetadataWatch(self)
        self.sent = 0

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self.emit(V.CLIENT_CONFIG, {"idempotence": "required" if self.idempotent else "off",
                                    "effective_idempotence":
                                        "required" if self.idempotent else "off",
                                    "acks": self.acks, "leader_discovery": LIBRARY})
        self.set_timer(self.spec.start_ms * 1000, "begin")

    def on_timer(self, name: str, data) -> None:
        if name == "begin":
            self.loop.create_task(self._application())
            self.loop.pump()

    def on_crash(self) -> None:
        self.loop.scope = None
        self.loop = None

    def on_restart(self) -> None:
        self._fresh()
        self.set_timer(0, "begin")

    # -- the application -------------------------------------------------------------------
    def _producer(self) -> aiokafka.AIOKafkaProducer:
        s = self.spec
        return aiokafka.AIOKafkaProducer(
            bootstrap_servers=[f"b{i}:{PORT}" for i in range(1, self.brokers + 1)],
            client_id=self.name, acks=self.acks, enable_idempotence=self.idempotent,
            linger_ms=s.linger_ms, max_batch_size=max(s.batch_size, s.record_bytes),
            request_timeout_ms=s.request_timeout_ms, retry_backoff_ms=s.retry_backoff_ms,
            metadata_max_age_ms=s.metadata_max_age_ms)

    async def _application(self) -> None:
        producer = self._producer()
        try:
            await producer.start()
        except KafkaError as exc:  # no broker answered: the application tries again later
            self._error(exc, "restart")
            await producer.stop()
            await _sleep_us(RESTART_US)
            self.loop.create_task(self._application())
            return
        interval_us = max(1, int(1_000_000 / self.spec.records_per_sec))
        stop_us = self.spec.stop_ms * 1000
        value = b"x" * max(0, self.spec.record_bytes - 40)
        while not stop_us or self.now_us < stop_us:
            partition = self.sent % self.partitions
            self.sent += 1
            delivery = await producer.send(self.topic, value, partition=partition,
                                           timestamp_ms=shims.EPOCH_S * 1000 + self.now_us // 1000)
            delivery.add_done_callback(lambda f, p=partition: self._delivered(f, p))
            await _sleep_us(interval_us)

    def _error(self, exc: BaseException, action: str) -> None:
        self.emit(V.CLIENT_ERROR, {"error": type(exc).__name__, "message": str(exc)[:200],
                                   "action": action})

    def _loop_error(self, loop, context) -> None:
        """An error nothing awaited (a failed task, a callback that raised) is recorded."""
        exc = context.get("exception")
        if exc is None:
            self.emit(V.CLIENT_ERROR, {"error": "", "message": str(context.get("message", ""))[:200],
                                       "action": "none"})
        else:
            self._error(exc, "none")

    def _delivered(self, future, partition: int) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is None:
            return
        code = getattr(exc, "errno", None) if isinstance(exc, KafkaError) else None
        self.emit(V.PRODUCE_FAILED, {"bid": None, "tp": f"{self.topic}-{partition}",
                                     "error": code if isinstance(code, int) else -1,
                                     "error_name": type(exc).__name__})

    # -- connections ---------------------------------------------------------------------
    def _connect(self, loop, protocol_factory, host, port):
        if not (isinstance(host, str) and host[:1] == "b" and host[1:].isdigit()
                and 1 <= int(host[1:]) <= self.brokers):
            raise OSError(f"unknown host {host!r}")
        if not self.peer_alive(host):
            raise ConnectionRefusedError(f"{host} is down")
        self.next_conn += 1
        protocol = protocol_factory()
        transport = SimTransport(loop, self, host, port, self.next_conn, protocol)
        self.transports[transport.conn] = transport
        protocol.connection_made(transport)
        return transport, protocol

    def send_frame(self, transport: SimTransport, data: bytes) -> None:
        try:
            req = decode_request(data, True)
            note = request_note(req.api_key, req.api_version, req.correlation_id, req.body)
            self.requests[(transport.conn, req.correlation_id)] = (req.api_key, req.api_version)
            if req.api_key == PRODUCE and req.body is not None:
                self.watch.on_request(transport.conn, req.correlation_id, req.body)
        except Malformed:
            note = {"api": "unreadable"}
        self.send(transport.dst, WIRE_REQUEST, WireFrame(transport.conn, frame(data), note))

    def transport_closed(self, transport: SimTransport) -> None:
        self._forget(transport.conn)
        self.send(transport.dst, WIRE_CLOSE, WireFrame(transport.conn, b"", {}))

    def _forget(self, conn: int) -> None:
        self.transports.pop(conn, None)
        self.watch.connection_closed(conn)
        for key in [k for k in self.requests if k[0] == conn]:
            del self.requests[key]

    def on_message(self, msg) -> None:
        if self.loop is None or msg.kind != "WireResponse":
            return
        transport = self.transports.get(msg.body.conn)
        if transport is None or transport.closing:
            return
        data = msg.body.data
        self._observe(msg.src, msg.body, data[4:])
        transport.deliver(data)
        self.loop.pump()

    def _observe(self, broker: str, frame_body: WireFrame, payload: bytes) -> None:
        """Read an answer as the library will: the acknowledgements and leaders it learns."""
        conn = frame_body.conn
        corr = int.from_bytes(payload[:4], "big", signed=True)  # every response header starts so
        api_key, version = self.requests.pop((conn, corr), (None, None))
        if api_key not in (PRODUCE, METADATA):
            return
        try:
            _corr, body = decode_response(api_key, version, payload)
        except Malformed:
            return
        if api_key == PRODUCE:
            self.watch.on_response(conn, corr, body)
        else:
            self.metadata.on_response(broker, body, frame_body.truth)

    def on_disconnect(self, peer: str) -> None:
        if self.loop is None:
            return
        for conn in sorted(self.transports):
            transport = self.transports[conn]
            if transport.dst == peer:
                self._forget(conn)
                transport.lost(ConnectionResetError(f"connection to {peer} closed"))
        self.loop.pump()


async def _sleep_us(us: int) -> None:
    await asyncio.sleep(us / 1_000_000)
