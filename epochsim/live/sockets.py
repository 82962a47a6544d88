"""Loopback listeners for a live run: one TCP port per simulated broker.

Contract: `Hub(brokers, host)` binds one listening socket per broker id on `host` (port 0:
the system picks; `endpoints` maps each broker id to its (host, port), what Metadata answers
advertise). `poll(timeout_s)` waits for the sockets and returns a callable that accepts new
connections and reads what arrived (or None when nothing did): the paced kernel runs it once
the simulated clock has caught up. A connection is handed to its client's gateway with its
first whole frame (`route(client_id) -> gateway`, by the request header's client id); each
whole frame then goes to `gateway.from_client(conn, frame)`, and the client closing it to
`gateway.client_closed(conn)`. `write(conn, data)` sends an answer; `close(conn)` closes one
from the cluster's side (a reset, a broker's death). A connection to a dead broker is closed
at once (`alive(broker) -> bool`), as a refused one would be. `close_all()` ends everything.
"""

from __future__ import annotations

import selectors
import socket

from sim.kafka.wire.codec import Malformed, split_frames


class Conn:
    __slots__ = ("id", "sock", "broker", "gateway", "pending", "open")

    def __init__(self, cid: int, sock, broker: str):
        self.id, self.sock, self.broker = cid, sock, broker
        self.gateway = None
        self.pending = b""
        self.open = True


def client_id(frame: bytes) -> str | None:
    """The client id of a request frame (its header's nullable string after api key, version
    and correlation id; the same in every header version)."""
    if len(frame) < 10:
        return None
    size = int.from_bytes(frame[8:10], "big", signed=True)
    if size < 0 or len(frame) < 10 + size:
        return None
    return frame[10:10 + size].decode("utf-8", "replace")


class Hub:
    def __init__(self, brokers: list[int], host: str = "127.0.0.1"):
        self.selector = selectors.DefaultSelector()
        self.listeners: dict[int, socket.socket] = {}
        self.endpoints: dict[int, tuple[str, int]] = {}
        for b in brokers:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, 0))
            s.listen(64)
            s.setblocking(False)
            self.listeners[b] = s
            self.endpoints[b] = (host, s.getsockname()[1])
            self.selector.register(s, selectors.EVENT_READ, ("listen", b))
        self.conns: dict[int, Conn] = {}
        self.next_id = 0
        self.route = None  # client_id -> gateway
        self.alive = None  # broker name -> bool

    def poll(self, timeout_s: float):
        ready = self.selector.select(timeout_s)
        if not ready:
            return None
        return lambda: self._handle(ready)

    def _handle(self, ready) -> None:
        for key, _mask in ready:
            what, arg = key.data
            if what == "listen":
                self._accept(key.fileobj, arg)
            else:
                self._read(arg)

    def _accept(self, listener, broker_id: int) -> None:
        try:
            sock, _addr = listener.accept()
        except OSError:
            return
        broker = f"b{broker_id}"
        if self.alive is not None and not self.alive(broker):
            sock.close()  # the broker is down: the client's connect fails
            return
        sock.setblocking(True)  # answers are written whole; reads wait for the select
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id += 1
        conn = self.conns[self.next_id] = Conn(self.next_id, sock, broker)
        self.selector.register(sock, selectors.EVENT_READ, ("conn", conn.id))

    def _read(self, cid: int) -> None:
        conn = self.conns.get(cid)
        if conn is None:
            return
        try:
            data = conn.sock.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            gateway = conn.gateway
            self._drop(conn)
            if gateway is not None:
                gateway.client_closed(conn)
            return
        try:
            frames, conn.pending = split_frames(conn.pending + data)
        except Malformed:
            frames, conn.pending = [], b""
            self.close(cid)
        for f in frames:
            if conn.gateway is None:
                conn.gateway = self.route(client_id(f))
            if conn.open:
                conn.gateway.from_client(conn, f)

    def write(self, cid: int, data: bytes) -> None:
        conn = self.conns.get(cid)
        if conn is None or not conn.open:
            return
        try:
            conn.sock.sendall(data)
        except OSError:
            self.close(cid)

    def close(self, cid: int) -> None:
        conn = self.conns.get(cid)
        if conn is not None:
            self._drop(conn)

    def _drop(self, conn: Conn) -> None:
        conn.open = False
        self.conns.pop(conn.id, None)
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def close_all(self) -> None:
        for cid in sorted(self.conns):
            self.close(cid)
        for s in self.listeners.values():
            self.selector.unregister(s)
            s.close()
        self.selector.close()
