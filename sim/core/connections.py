"""Connections closing: what each end of a simulated TCP connection learns, and when.

Contract (a mixin of `sim.core.network.Network`, whose links, topology and world it uses):
- `reset`, `close_connection`, `reset_connections` and `node_down` close connections: what a
  cut link still holds for them is lost, and each end is told (`disconnect`, one link latency
  later, after what the link still carries in order);
- the news of a close crosses the network as a FIN or RST does. On a cut link it is lost in
  `drop` mode; in `stall` mode it waits for the heal, as the kernel's retransmitted FIN does
  (a process that died leaves its sockets to the OS), and is told then unless the end
  learned of the close otherwise or died meanwhile;
- a message to a node that is down is refused (`drop` with reason `dst_down`), and so is one
  that needs a connection to a node whose port is closed (`refused`); its sender's connection
  closes.
"""

from __future__ import annotations

from sim.core.links import Message


class Connections:
    """Closing connections and telling their ends; see the module docstring."""

    def init_connections(self) -> None:
        # (far, end): `far` closed its connection with `end` while the link far -> end was
        # cut (stall mode); `end` is told when that link heals
        self._closes_waiting: set[tuple[str, str]] = set()

    def reset(self, a: str, b: str) -> None:
        """An end closes the connection between `a` and `b`: what a cut link still holds for
        it, in either direction, is lost (the peers reconnect on their next send)."""
        for key in ((a, b), (b, a)):
            link = self._links.get(key)
            if link is not None and link.stalled:
                for msg in link.take_stalled():
                    self._drop(msg, "connection_closed")

    def close_connection(self, node: str, peer: str) -> None:
        """`node` closes its connection with `peer`, as a server closes one it cannot answer on:
        what a cut link still holds for it is lost, and `peer` learns of the close one link
        latency later (`disconnect`), or once the link from `node` heals."""
        self.reset(node, peer)
        self._tell_closed(peer, node)

    def reset_connections(self, node: str, peer: str | None = None) -> str | None:
        """The network resets the connections between `node` and `peer` (default: every node
        it has exchanged messages with), as a TCP RST from a middlebox or a flapping interface
        does: what is in flight on them, either way, is lost (`drop`, `connection_reset`,
        when it would have arrived), and each end learns of the close one link latency later
        (`disconnect`), or once the link that carries the news heals. Returns a fault
        outcome, or None."""
        if peer is None:
            peers = self._peers(node)
        else:
            peers = [peer] if peer != node else []
        if not peers:
            return "no connection"
        for other in peers:
            for key in ((node, other), (other, node)):
                link = self._link(key)
                link.reset_mid = self._next_mid
                for msg in link.take_stalled():
                    self._drop(msg, "connection_reset")
            self._tell_closed(node, other)
            self._tell_closed(other, node)
        return None

    def node_down(self, node: str) -> None:
        """A process died: the OS closes its sockets, so each connected peer learns of the
        close one link latency later (`disconnect` event), or once its link from `node` heals.
        A partition, unlike a crash, closes nothing: peers find out only by their own
        timeouts. News of earlier closes still on their way to `node` dies with it."""
        self._closes_waiting = {key for key in self._closes_waiting if key[1] != node}
        peers = self._peers(node)
        for peer in peers:
            self.reset(node, peer)
        for peer in peers:
            self._tell_closed(peer, node)

    def _peers(self, node: str) -> list[str]:
        """The nodes `node` has a connection with: links that have carried traffic, either
        way."""
        linked = {d for (s, d) in self._links if s == node} | {s for (s, d) in self._links if d == node}
        return sorted(linked - {node})

    def _tell_closed(self, end: str, far: str) -> None:
        """`end` learns that its connection with `far` closed one link latency later (a
        `disconnect`), after what the link still carries in order (a FIN follows the data
        sent before it), so nothing of a dead connection arrives after its close, as if on a
        new connection. If the link far -> end is cut the news waits for its heal (`stall`)
        or is lost (`drop`)."""
        edge = self.topology.edge(far, end)
        if edge["blocked"]:
            if self.partition_mode == "stall":
                self._closes_waiting.add((far, end))
            return
        w = self.world
        delay = edge["spec"].latency.sample(w.streams.get(f"net/{far}>{end}"))
        link, now = self._links.get((far, end)), self._env._now
        if link is not None and link.fifo_us > now + delay:
            delay = link.fifo_us - now
        w.kernel.call_later(delay, self._disconnect, end, far)

    def _tell_waiting_closes(self) -> None:
        """After a heal: the closes whose news a cut held, in order, over the healed links."""
        for far, end in sorted(self._closes_waiting):
            if not self.topology.edge(far, end)["blocked"]:
                self._closes_waiting.discard((far, end))
                self._tell_closed(end, far)

    def _disconnect(self, peer: str, node: str) -> None:
        w = self.world
        self._closes_waiting.discard((node, peer))  # told: a close held by a cut is old news
        if w.is_alive(peer):
            w.trace.emit(self._env._now, peer, "disconnect", {"peer": node})
            w.actors[peer].on_disconnect(node)

    def _refused(self, msg: Message, reason: str = "dst_down") -> None:
        """Nobody listens at the destination: the message is lost and, as a TCP reset would,
        the sender's connection closes one link latency later."""
        self._drop(msg, reason)
        self._tell_closed(msg.src, msg.dst)
