"""What every real asyncio client library node shares (Mode A): its loop, its connections over
the simulated network, its bound clock and randomness, and the frames it reads.

Contract: an `AioClient` actor owns a `SimLoop` whose `create_connection` gives `SimTransport`s
to broker nodes (`b<id>`; a dead broker refuses, an unknown host is an `OSError`). Each frame
the library writes is decoded for the trace's summary and sent as a `WireRequest`; each
`WireResponse` is decoded once for the subclass (`on_answer(broker, frame, api_key, body,
conn, corr)`) and then handed to the library. A closed connection (reset, broker death, a
close by the broker) reaches the library as `ConnectionResetError`. The library's modules
read the run's clock and the node's seeded stream `<node>/<library>` (`shims`) whenever its
code runs, and its log lines stay out of the run's output. Subclasses give `_application()`
(the coroutine started at `start_ms`, and again from nothing after a restart), `_reset()`
(their per-incarnation state) and `on_request(conn, request)`.
Errors the library raises to the application or leaves unhandled are `client_error` events.
"""

from __future__ import annotations

import asyncio
import logging

from sim.core.actor import Actor
from sim.core.asyncloop import SimLoop
from sim.kafka import vocab as V
from sim.kafka.wire import shims
from sim.kafka.wire.codec import Malformed, decode_response, frame
from sim.kafka.wire.frames import WIRE_CLOSE, WIRE_REQUEST, WireFrame, read_request
from sim.kafka.wire.transport import SimTransport

LIBRARY = "aiokafka"


class AioClient(Actor):
    def __init__(self, world, name: str, spec):
        super().__init__(name, world)
        shims.bind_library(LIBRARY)
        library_log = logging.getLogger(LIBRARY)
        library_log.propagate = False  # what the library did is in the trace
        if not library_log.handlers:
            library_log.addHandler(logging.NullHandler())
        self.spec = spec
        self.brokers = world.options.cluster.brokers
        self.next_conn = 0
        self._fresh()

    def _fresh(self) -> None:
        self.loop = SimLoop(self.world.kernel, self._connect)
        self.loop.scope = lambda: shims.running(self.world.kernel, self.rng(LIBRARY))
        self.loop.set_exception_handler(self._loop_error)
        self.transports: dict[int, SimTransport] = {}
        self.requests: dict[tuple[int, int], tuple[int, int]] = {}  # (conn, corr) -> api, v
        self._reset()

    def _reset(self) -> None:
        """Per-incarnation state of the subclass."""

    def on_request(self, conn: int, req) -> None:
        """A request the library wrote (decoded)."""

    def on_answer(self, broker: str, wire: WireFrame, api_key: int, body, conn: int,
                  corr: int) -> None:
        """An answer the library is about to read (decoded)."""

    # -- lifecycle -----------------------------------------------------------------------
    def on_timer(self, name: str, data) -> None:
        if name == "begin" and self.loop is not None:
            self.loop.create_task(self._application())
            self.loop.pump()

    def on_crash(self) -> None:
        self.loop.halt()  # the old incarnation's library never runs again
        self.loop = None

    def on_restart(self) -> None:
        self._fresh()
        self.set_timer(0, "begin")

    def client_error(self, exc: BaseException, action: str) -> None:
        self.emit(V.CLIENT_ERROR, {"error": type(exc).__name__, "message": str(exc)[:200],
                                   "action": action})

    def _loop_error(self, loop, context) -> None:
        """An error nothing awaited (a failed task, a callback that raised) is recorded."""
        exc = context.get("exception")
        if exc is None:
            self.emit(V.CLIENT_ERROR, {"error": "", "message": str(context.get("message", ""))[:200],
                                       "action": "none"})
        else:
            self.client_error(exc, "none")

    # -- connections ---------------------------------------------------------------------
    def bootstrap_servers(self) -> list[str]:
        return [f"b{i}:9092" for i in range(1, self.brokers + 1)]

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
        note = read_request(data, transport.conn, self.requests, self.on_request)
        self.send(transport.dst, WIRE_REQUEST, WireFrame(transport.conn, frame(data), note))

    def transport_closed(self, transport: SimTransport) -> None:
        self._forget(transport.conn)
        self.send(transport.dst, WIRE_CLOSE, WireFrame(transport.conn, b"", {}))

    def _forget(self, conn: int) -> None:
        self.transports.pop(conn, None)
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

    def _observe(self, broker: str, wire: WireFrame, payload: bytes) -> None:
        corr = int.from_bytes(payload[:4], "big", signed=True)  # every response header starts so
        api_key, version = self.requests.pop((wire.conn, corr), (None, None))
        if api_key is None:
            return
        try:
            _corr, body = decode_response(api_key, version, payload)
        except Malformed:
            return
        self.on_answer(broker, wire, api_key, body, wire.conn, corr)

    def on_disconnect(self, peer: str) -> None:
        if self.loop is None:
            return
        for conn in sorted(self.transports):
            transport = self.transports[conn]
            if transport.dst == peer:
                self._forget(conn)
                transport.lost(ConnectionResetError(f"connection to {peer} closed"))
        self.loop.pump()


async def sleep_us(us: int) -> None:
    await asyncio.sleep(us / 1_000_000)
