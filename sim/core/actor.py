"""Actor base: a node that reacts to messages and timers.

Contract: an actor never touches the network or the clock directly. It receives
`on_message(msg)` and `on_timer(name, data)` calls, and acts through `send`, `set_timer` and
`emit` (trace events), all provided by the `World` it belongs to. `crash()` ends the current
incarnation: timers set before it never fire and `on_crash` must drop volatile state;
`restart()` starts a new incarnation and calls `on_restart`. While `port_closed`, a live
actor's server port is not open: the network refuses each message `refuses(kind)` names (one
that needs a new connection to it), as a TCP reset would.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.core.world import World


class Actor:
    """Base class for every simulated node."""

    port_closed = False  # its server port is not open (yet): see `refuses`

    def __init__(self, name: str, world: World):
        self.name = name
        self.world = world
        self._env = world.kernel.env  # the clock `now_us` reads, without three lookups a call
        self.alive = True
        self.incarnation = 0
        world.add_actor(self)
        if type(self).send is Actor.send:  # the same call without a Python frame per message
            self.send = partial(world.network.send, name)

    # -- reactions, overridden by subclasses ---------------------------------------------
    def start(self) -> None:
        """Called once at time 0 after every actor exists."""

    def on_message(self, msg) -> None:
        """A message delivered by the network."""

    def refuses(self, kind: str) -> bool:
        """Whether a message of `kind` is refused while `port_closed`: one that would open a
        connection to this node's server port (by default every message)."""
        return True

    def on_timer(self, name: str, data: Any) -> None:
        """A timer set by this incarnation fired."""

    def on_disconnect(self, peer: str) -> None:
        """The connection to `peer` closed: `peer` died, or the network reset it."""

    def on_crash(self) -> None:
        """Drop volatile state: what a real process loses when it dies."""

    def on_restart(self) -> None:
        """Rebuild state from what survived (durable state) and rejoin."""

    # -- effects -------------------------------------------------------------------------
    @property
    def now_us(self) -> int:
        return self._env._now  # hot path: read several times per message

    def send(self, dst: str, kind: str, body: Any) -> int:
        return self.world.network.send(self.name, dst, kind, body)

    def reset_connection(self, peer: str) -> None:
        """Close this node's connection to `peer` (see `Network.reset`)."""
        self.world.network.reset(self.name, peer)

    def close_connection_with(self, peer: str) -> None:
        """Close this node's connection with `peer` as a server does; `peer` hears of it (see
        `Network.close_connection`)."""
        self.world.network.close_connection(self.name, peer)

    def can_reach(self, peer: str) -> bool:
        """Whether the link from this node to `peer` carries messages now."""
        return self.world.network.reachable(self.name, peer)

    def peer_alive(self, peer: str) -> bool:
        """Whether the node `peer` runs now (a connection to a dead one is refused)."""
        return self.world.is_alive(peer)

    def exit_process(self) -> None:
        """This node's process exits (a clean shutdown, or a fatal error): a crash."""
        self.world.crash(self.name)

    def set_timer(self, delay_us: int, name: str, data: Any = None) -> None:
        self.world.kernel.call_later(delay_us, self._fire, self.incarnation, name, data)

    def emit(self, kind: str, fields: dict | None = None) -> int:
        return self.world.trace.emit(self.now_us, self.name, kind, fields)

    def emit_encoded(self, kind: str, text: str, keys: tuple, values: tuple) -> int:
        """`emit` of an event whose JSON text the caller built (`Trace.emit_encoded`)."""
        return self.world.trace.emit_encoded(self.now_us, self.name, kind, text, keys, values)

    def rng(self, purpose: str):
        return self.world.streams.get(f"{self.name}/{purpose}")

    # -- lifecycle -----------------------------------------------------------------------
    def _fire(self, incarnation: int, name: str, data: Any) -> None:
        if self.alive and incarnation == self.incarnation:
            self.on_timer(name, data)

    def crash(self) -> None:
        if not self.alive:
            return
        self.alive = False
        self.incarnation += 1
        self.on_crash()

    def restart(self) -> None:
        if self.alive:
            return
        self.alive = True
        self.incarnation += 1
        self.on_restart()
