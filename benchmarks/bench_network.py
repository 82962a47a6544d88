"""Cost per delivered message: the harness path (World + Network + trace to a file) versus bare
simpy doing the same ping-pong exchange with `env.timeout(latency)` callbacks and no trace.

Run: python -m benchmarks.bench_network [--messages N] [--pairs P] [--repeats R]
Prints the best time per message of each path, their ratio, and the median of each
repeat's own ratio (bare and harness run back to back in every repeat).
Prints a small table; the trace goes to a temporary file that is removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass

import simpy

from sim.core.actor import Actor
from sim.core.kernel import Kernel
from sim.core.latency import LatencyDist
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.trace import Trace
from sim.core.world import World

LATENCY_US = 1_000


@dataclass(frozen=True, slots=True)
class Note:
    """A message body shaped like the model's: a frozen record with a small `brief()`."""

    corr: int
    error: int = 0

    def brief(self) -> dict:
        return {"corr": self.corr, "error": self.error}


# -- (a) harness path ---------------------------------------------------------------------

class Pinger(Actor):
    def __init__(self, name, world, peer, rounds):
        super().__init__(name, world)
        self.peer = peer
        self.left = rounds
        self.received = 0

    def start(self):
        self.left -= 1
        self.send(self.peer, "Ping", Note(self.left))

    def on_message(self, msg):
        self.received += 1
        if self.left > 0:
            self.left -= 1
            self.send(self.peer, "Ping", Note(self.left))


class Ponger(Actor):
    received = 0

    def on_message(self, msg):
        self.received += 1
        self.send(msg.src, "Pong", Note(msg.body.corr))


def run_harness(pairs: int, rounds: int, trace_path: str) -> tuple[float, int]:
    with open(trace_path, "w", encoding="utf-8") as sink:
        world = World(Kernel(until_us=10**15), Trace({"scenario": "bench", "seed": 1}, sink=sink),
                      Streams(1), Network(LinkSpec(LatencyDist("constant", LATENCY_US / 1000))))
        actors = []
        for i in range(pairs):
            actors.append(Ponger(f"pong{i}", world))
            actors.append(Pinger(f"ping{i}", world, f"pong{i}", rounds))
        started = time.perf_counter()
        world.run()
        world.trace.flush()
        elapsed = time.perf_counter() - started
    delivered = sum(a.received for a in actors)
    return elapsed, delivered


# -- (b) bare simpy -----------------------------------------------------------------------

class BareMsg:
    __slots__ = ("src", "dst", "kind", "body")

    def __init__(self, src, dst, kind, body):
        self.src, self.dst, self.kind, self.body = src, dst, kind, body


class BareNet:
    def __init__(self, env):
        self.env = env
        self.nodes = {}

    def send(self, src, dst, kind, body):
        ev = self.env.timeout(LATENCY_US, value=BareMsg(src, dst, kind, body))
        ev.callbacks.append(self._deliver)

    def _deliver(self, ev):
        msg = ev.value
        self.nodes[msg.dst].on_message(msg)


class BarePinger:
    def __init__(self, name, net, peer, rounds):
        self.name, self.net, self.peer, self.left, self.received = name, net, peer, rounds, 0
        net.nodes[name] = self

    def start(self):
        self.left -= 1
        self.net.send(self.name, self.peer, "Ping", Note(self.left))

    def on_message(self, msg):
        self.received += 1
        if self.left > 0:
            self.left -= 1
            self.net.send(self.name, self.peer, "Ping", Note(self.left))


class BarePonger:
    def __init__(self, name, net):
        self.name, self.net, self.received = name, net, 0
        net.nodes[name] = self

    def on_message(self, msg):
        self.received += 1
        self.net.send(self.name, msg.src, "Pong", Note(msg.body.corr))


def run_bare(pairs: int, rounds: int) -> tuple[float, int]:
    env = simpy.Environment()
    net = BareNet(env)
    actors = []
    for i in range(pairs):
        actors.append(BarePonger(f"pong{i}", net))
        actors.append(BarePinger(f"ping{i}", net, f"pong{i}", rounds))
    started = time.perf_counter()
    for a in actors:
        if isinstance(a, BarePinger):
            a.start()
    env.run()
    elapsed = time.perf_counter() - started
    return elapsed, sum(a.received for a in actors)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    rounds = max(1, args.messages // (2 * args.pairs))
    bare, harness = [], []
    n_h = n_b = 0
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.jsonl")
        for _ in range(args.repeats):  # interleaved so that both see the same machine state
            secs, n_b = run_bare(args.pairs, rounds)
            bare.append(secs / n_b)
            secs, n_h = run_harness(args.pairs, rounds, trace_path)
            harness.append(secs / n_h)
            trace_bytes = os.path.getsize(trace_path)
    assert n_h == n_b, (n_h, n_b)
    best_b, best_h = min(bare), min(harness)
    # each repeat's own ratio: a burst of load on a shared machine slows one pair, not all
    paired = sorted(h / b for h, b in zip(harness, bare))
    print(f"ping-pong: {args.pairs} pairs, {n_h} delivered messages, latency {LATENCY_US} us, "
          f"best of {args.repeats}")
    print(f"{'path':<34}{'us/msg':>10}")
    print(f"{'bare simpy (timeout + callback)':<34}{best_b * 1e6:>10.2f}")
    print(f"{'harness (World+Network+trace)':<34}{best_h * 1e6:>10.2f}")
    print(f"{'ratio harness / bare (best)':<34}{best_h / best_b:>10.2f}")
    print(f"{'ratio, median of the repeats':<34}{paired[len(paired) // 2]:>10.2f}")
    print(f"trace written: {trace_bytes / n_h:.0f} bytes/msg")


if __name__ == "__main__":
    main()
