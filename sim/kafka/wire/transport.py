"""In-memory transports over the simulated network, for a client on a `SimLoop`.

Contract: a `SimTransport` is one client connection to one broker node. `write` cuts the byte
stream into Kafka frames (`codec.split_frames`) and hands each whole frame to its owner
(`owner.send_frame(transport, frame)`), which sends it over the simulated network, so delays,
cuts and reordering rules apply to each frame. `close` tells the owner
(`owner.transport_closed`) and the protocol (`connection_lost(None)`, on the loop's next
round, as asyncio does). `lost(exc)` is the network closing it (a reset, the broker's death, a
close by the broker): the protocol hears `connection_lost(exc)` and nothing more is written.
A byte stream that is not Kafka frames closes the connection.
"""

from __future__ import annotations

import asyncio

from sim.kafka.wire.codec import Malformed, split_frames


class SimTransport(asyncio.Transport):
    def __init__(self, loop, owner, dst: str, port: int, conn: int, protocol):
        super().__init__()
        self.loop, self.owner, self.dst, self.port, self.conn = loop, owner, dst, port, conn
        self.protocol = protocol
        self.pending = b""
        self.closing = False

    # -- writing -------------------------------------------------------------------------
    def write(self, data) -> None:
        if self.closing:
            return
        try:
            frames, self.pending = split_frames(self.pending + bytes(data))
        except Malformed:
            self.close()
            return
        for f in frames:
            self.owner.send_frame(self, f)

    def writelines(self, list_of_data) -> None:
        for data in list_of_data:
            self.write(data)

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        self.close()

    # -- reading (frames arrive from the owner) --------------------------------------------
    def deliver(self, data: bytes) -> None:
        if not self.closing:
            self.protocol.data_received(data)

    def is_reading(self) -> bool:
        return not self.closing

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    # -- closing -------------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if self.closing:
            return
        self.closing = True
        self.owner.transport_closed(self)
        self.loop.call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def lost(self, exc: Exception) -> None:
        if self.closing:
            return
        self.closing = True
        self.protocol.connection_lost(exc)

    def get_extra_info(self, name, default=None):
        info = {"peername": (self.dst, self.port), "sockname": (self.owner.name, self.conn)}
        return info.get(name, default)
