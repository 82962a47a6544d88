"""Simulated network: latency, FIFO, jitter, loss, crashed destinations, trace events, and the
fast path for plain links against the general one."""

import io
import json

from sim.core.kernel import Kernel
from sim.core.latency import LatencyDist
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.trace import Trace, digest_of_lines
from sim.core.world import World
from tests.core.networld import Body, Brief, Recorder, at, drops, events, make_world


def test_constant_latency():
    world, nodes = make_world()
    at(world, 250, world.network.send, "a", "b", "Ping", 1)
    world.run()
    assert nodes["b"].got == [(1_250, 0, "a", "Ping", 1)]
    assert nodes["a"].got == [] and nodes["c"].got == []


def test_set_link_latency_per_direction():
    world, nodes = make_world()
    net = world.network
    net.set_link("a", "b", LinkSpec(latency=LatencyDist("constant", 3.0)))
    net.send("a", "b", "Ping", None)
    net.send("b", "a", "Ping", None)
    world.run()
    assert [g[0] for g in nodes["b"].got] == [3_000]
    assert [g[0] for g in nodes["a"].got] == [1_000]


def test_fifo_preserved_without_jitter():
    link = LinkSpec(latency=LatencyDist("uniform", 1.0, 5.0))
    world, nodes = make_world(link=link)
    for i in range(60):
        at(world, i * 10, world.network.send, "a", "b", "Seq", i)
    world.run()
    got = nodes["b"].got
    assert [g[4] for g in got] == list(range(60))
    assert [g[0] for g in got] == sorted(g[0] for g in got)


def _jitter_order(seed):
    world, nodes = make_world(seed=seed, link=LinkSpec(jitter_us=2_000))
    for i in range(20):
        world.network.send("a", "b", "Seq", i)
    world.run()
    return [g[4] for g in nodes["b"].got]


def test_jitter_can_reorder_deterministically():
    order = _jitter_order(seed=3)
    assert sorted(order) == list(range(20))
    assert order != list(range(20))
    assert _jitter_order(seed=3) == order
    assert _jitter_order(seed=4) != order


def test_crashed_destination_drops_at_delivery():
    world, nodes = make_world()
    net = world.network
    lost = net.send("a", "b", "Ping", "lost")
    at(world, 500, world.crash, "b")
    at(world, 2_000, world.restart, "b")
    at(world, 2_000, net.send, "a", "b", "Ping", "after")
    world.run()
    assert drops(world) == {lost: "dst_down"}
    assert [g[4] for g in nodes["b"].got] == ["after"]
    assert [(e["kind"], e["t"]) for e in world.trace.events
            if e["kind"] in ("crash", "restart")] == [("crash", 500), ("restart", 2_000)]


def test_link_loss_and_duplicate_probabilities():
    world, nodes = make_world(link=LinkSpec(drop=1.0))
    mid = world.network.send("a", "b", "Ping", None)
    world.run()
    assert drops(world) == {mid: "loss"} and nodes["b"].got == []
    world, nodes = make_world(link=LinkSpec(duplicate=1.0))
    world.network.send("a", "b", "Ping", None)
    world.run()
    assert len(nodes["b"].got) == 2


def test_every_send_deliver_drop_is_traced_with_mid():
    world, nodes = make_world(link=LinkSpec(latency=LatencyDist("uniform", 0.5, 2.0)))
    net = world.network
    net.add_rule("drop", kind="D", count=3)
    net.add_rule("duplicate", kind="Dup")
    at(world, 1_500, world.crash, "c")
    kinds = ["Ping", "D", "Dup"]
    mids = []
    for i in range(30):
        dst = "bc"[i % 2]
        at(world, i * 100, lambda i=i, dst=dst: mids.append(
            net.send("a", dst, kinds[i % 3], Body(i))))
    world.run()
    sends = events(world, "send")
    assert [e["mid"] for e in sends] == mids == list(range(30))
    assert all(e["node"] == "a" and e["n"] == i for i, e in enumerate(sends))
    assert [e["msg"] for e in sends] == [kinds[i % 3] for i in range(30)]
    delivered = [e["mid"] for e in events(world, "deliver")]
    dropped = [e["mid"] for e in events(world, "drop")]
    received = sorted(g[1] for n in nodes.values() for g in n.got)
    assert sorted(delivered) == received
    assert set(delivered) | set(dropped) == set(mids)
    assert not set(delivered) & set(dropped)
    assert any(r == "dst_down" for r in drops(world).values())
    for e in world.trace.events:
        if e["kind"] in ("send", "deliver", "drop"):
            assert isinstance(e["mid"], int)


def test_same_seed_same_trace():
    def digest(seed):
        world, _ = make_world(seed=seed, link=LinkSpec(latency=LatencyDist("exponential", 1.0),
                                                       jitter_us=500, drop=0.2))
        for i in range(50):
            at(world, i * 37, world.network.send, "abc"[i % 3], "abc"[(i + 1) % 3], "M", i)
        world.run()
        return world.trace.digest()

    assert digest(11) == digest(11)
    assert digest(11) != digest(12)


def _compact(ev):
    return json.dumps(ev, separators=(",", ":"), ensure_ascii=False)


BODIES = [
    None, 7, "text", Brief({}), Brief({"corr": 3, "error": 0}),
    Brief({"parts": [["t-0", 1, 2]], "f": 0.5, "ok": True, "none": None, "u": 'é"\n'}),
    Brief({"mid": "overrides"}), Brief({"seq": -1, "x": 1}), Brief([("k", "pairs")]),
    Brief({1: "int key"}),
]


def test_trace_lines_are_the_compact_json_of_the_events():
    sink = io.StringIO()
    world = World(Kernel(until_us=10**9), Trace({"scenario": "net", "seed": 1}, sink=sink, keep=True),
                  Streams(1), Network())
    seen = []
    world.trace.observe(seen.append)
    names = ["a", "bé", 'c"q']
    for n in names:
        Recorder(n, world)
    net = world.network
    net.add_rule("drop", kind="D", count=1)
    net.add_rule("hold", kind="H", release_kind="R")
    t = 0
    for round_ in range(3):  # the first message on each link takes the general path
        for src in names:
            for dst in names:
                if src == dst:
                    continue
                for i, body in enumerate(BODIES):
                    kind = ["Ping", "D", "H", "R", "Ünï", 'K"'][(i + round_) % 6]
                    at(world, t, net.send, src, dst, kind, body)
                    t += 7
    world.run()
    world.trace.flush()
    lines = sink.getvalue().splitlines()
    events = world.trace.events
    assert len(lines) == len(events) + 1 and seen == events
    assert {e["kind"] for e in events} >= {"send", "deliver", "drop", "hold"}
    for line, ev in zip(lines[1:], events):
        assert line == _compact(ev)
    assert digest_of_lines(json.loads(lines[0]), lines[1:]) == world.trace.digest()


def test_send_event_members_in_order():
    world, _ = make_world()
    world.network.send("a", "b", "K", Brief({"z": 1, "a": [2]}))  # general path (first send)
    world.network.send("a", "b", "K", Brief({"z": 1, "a": [2]}))  # cached path
    world.network.send("a", "b", "K", Brief({"msg": "mine"}))  # brief overrides a member
    first, second, third = events(world, "send")
    assert list(first) == ["seq", "t", "node", "kind", "mid", "dst", "msg", "z", "a"]
    assert list(second) == list(first)
    assert list(third) == ["seq", "t", "node", "kind", "mid", "dst", "msg"]
    assert third["msg"] == "mine"


def _mixed_traffic_digest(seed: int, inert_rule: bool) -> str:
    """A workload over links of every shape (constant and sampled latency, jitter, loss,
    duplication), with a cut and a heal; `inert_rule` adds a rule that matches nothing."""
    world, _ = make_world(names=("a", "b", "c", "d"), seed=seed,
                          link=LinkSpec(latency=LatencyDist("lognormal", 1.0, 0.4)))
    net = world.network
    net.set_link("a", "b", LinkSpec(latency=LatencyDist("constant", 2.0)))
    net.set_link("b", "c", LinkSpec(latency=LatencyDist("uniform", 0.5, 3.0), jitter_us=400))
    net.set_link("c", "d", LinkSpec(drop=0.2, duplicate=0.2))
    if inert_rule:
        net.add_rule("drop", kind="NeverSent")
    at(world, 20_000, net.partition, [["a"], ["b", "c", "d"]])
    at(world, 40_000, net.heal)
    at(world, 50_000, net.set_link, "a", "b", LinkSpec(latency=LatencyDist("exponential", 1.0)))
    names = "abcd"
    for i in range(400):
        src, dst = names[i % 4], names[(i % 4 + 1 + (i // 4) % 3) % 4]
        at(world, i * 173, net.send, src, dst, "M", Body(i))
    world.run()
    return world.trace.digest()


def test_the_plain_link_fast_path_behaves_as_the_routed_path():
    # any rule sends every message through `_route`, which handles every link shape; the
    # fast path for plain links must give the very same trace
    for seed in (1, 2, 3):
        assert _mixed_traffic_digest(seed, inert_rule=False) == _mixed_traffic_digest(seed, inert_rule=True)


def test_a_world_that_delivers_its_own_way_is_asked_for_every_message():
    class Forwarding(World):
        """Sees every delivery before the actor does."""

        def __init__(self, *args):
            self.seen = []
            super().__init__(*args)

        def deliver(self, msg):
            self.seen.append(msg.mid)
            super().deliver(msg)

    world = Forwarding(Kernel(until_us=10**6), Trace({"scenario": "net", "seed": 1}, keep=True),
                       Streams(1), Network())
    nodes = {n: Recorder(n, world) for n in ("a", "b")}
    mids = [world.network.send("a", "b", "Ping", i) for i in range(3)]
    world.run()
    assert world.seen == mids and [g[1] for g in nodes["b"].got] == mids
