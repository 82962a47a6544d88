"""World: the kernel, trace, random streams, network and actors of one run, wired together.

Contract: the world owns exactly one of each; actors register themselves on construction;
`crash(name)` / `restart(name)` change an actor's lifecycle and record `crash` / `restart`
events; `run()` starts every actor at time 0 (in registration order) and runs the kernel.
"""

from __future__ import annotations

from sim.core.kernel import Kernel, RunOutcome
from sim.core.network import Network
from sim.core.rng import Streams
from sim.core.trace import Trace


class World:
    def __init__(self, kernel: Kernel, trace: Trace, streams: Streams, network: Network):
        self.kernel = kernel
        self.trace = trace
        self.streams = streams
        self.network = network
        self.actors: dict = {}
        # the network may look actors up itself unless a subclass changed how
        direct = (type(self).is_alive is World.is_alive and type(self).deliver is World.deliver
                  and type(self).accepts is World.accepts)
        network.attach(self, direct)

    def add_actor(self, actor) -> None:
        if actor.name in self.actors:
            raise ValueError(f"duplicate node name {actor.name!r}")
        self.actors[actor.name] = actor
        self.network.add_node(actor.name)

    def deliver(self, msg) -> None:
        self.actors[msg.dst].on_message(msg)

    def is_alive(self, name: str) -> bool:
        actor = self.actors.get(name)
        return actor is not None and actor.alive

    def accepts(self, msg) -> bool:
        """Whether the live actor `msg` goes to takes it: not if its port is closed and the
        message would open a connection to it (`Actor.port_closed`, `Actor.refuses`)."""
        actor = self.actors[msg.dst]
        return not (actor.port_closed and actor.refuses(msg.kind))

    def crash(self, name: str) -> bool:
        actor = self.actors[name]
        if not actor.alive:
            return False
        self.trace.emit(self.kernel.now_us, name, "crash", None)
        actor.crash()
        self.network.node_down(name)
        return True

    def restart(self, name: str) -> bool:
        actor = self.actors[name]
        if actor.alive:
            return False
        self.trace.emit(self.kernel.now_us, name, "restart", None)
        actor.restart()
        return True

    def run(self) -> RunOutcome:
        for actor in list(self.actors.values()):
            self.kernel.call_later(0, actor.start)
        return self.kernel.run()
