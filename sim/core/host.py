"""Host: what the network needs of the world it runs in, as an interface.

`sim.core.world.World` is the one host; the network is written against this protocol so that
it never imports the world that owns it (the world imports the network).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sim.core.kernel import Kernel
    from sim.core.links import Message
    from sim.core.rng import Streams
    from sim.core.trace import Trace


class Host(Protocol):
    """The clock and queue (`kernel`), the `trace`, the random `streams`, and the `actors`
    by name, each with an `alive` flag, `on_message(msg)` and `on_disconnect(peer)`."""

    kernel: Kernel
    trace: Trace
    streams: Streams
    actors: dict

    def is_alive(self, name: str) -> bool:
        """Is there a live actor called `name`?"""

    def accepts(self, msg: Message) -> bool:
        """Does the live actor `msg` goes to take it (its server port is open, or `msg` needs
        none)?"""

    def deliver(self, msg: Message) -> None:
        """Hand `msg` to the actor it is addressed to."""
