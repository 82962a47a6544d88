"""A small world of recording actors for the network tests, and readers of its trace."""

from __future__ import annotations

from sim.core.actor import Actor
from sim.core.kernel import Kernel
from sim.core.network import Network
from sim.core.rng import Streams
from sim.core.trace import Trace
from sim.core.world import World


class Recorder(Actor):
    """Records every delivery as (time, mid, src, kind, body)."""

    def __init__(self, name, world):
        super().__init__(name, world)
        self.got = []

    def on_message(self, msg):
        self.got.append((self.now_us, msg.mid, msg.src, msg.kind, msg.body))


class Listener(Recorder):
    """Records deliveries and the disconnects it hears, as (time, peer)."""

    def __init__(self, name, world):
        super().__init__(name, world)
        self.closed = []

    def on_disconnect(self, peer):
        self.closed.append((self.now_us, peer))


class Body:
    def __init__(self, n):
        self.n = n

    def brief(self):
        return {"n": self.n}


class Brief:
    def __init__(self, fields):
        self.fields = fields

    def brief(self):
        return self.fields


def make_world(names=("a", "b", "c"), seed=1, link=None, until_us=1_000_000):
    world = World(Kernel(until_us=until_us), Trace({"scenario": "net", "seed": seed}, keep=True),
                  Streams(seed), Network(link))
    actors = {n: Recorder(n, world) for n in names}
    return world, actors


def at(world, t_us, fn, *args):
    world.kernel.call_later(t_us, fn, *args)


def events(world, kind):
    return [e for e in world.trace.events if e["kind"] == kind]


def drops(world):
    return {e["mid"]: e["reason"] for e in events(world, "drop")}
