"""Simulated network: latency, FIFO, jitter, cuts, rules, crashed destinations, trace events."""

import io
import json

from sim.core.actor import Actor
from sim.core.kernel import Kernel
from sim.core.latency import LatencyDist
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.trace import Trace, digest_of_lines
from sim.core.world import World


class Recorder(Actor):
    """Records every delivery as (time, mid, src, kind, body)."""

    def __init__(self, name, world):
        super().__init__(name, world)
        self.got = []

    def on_message(self, msg):
        self.got.append((self.now_us, msg.mid, msg.src, msg.kind, msg.body))


class Body:
    def __init__(self, n):
        self.n = n

    def brief(self):
        return {"n": self.n}


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


def test_block_is_asymmetric():
    world, nodes = make_world()
    net = world.network
    net.block("a", "b")
    assert not net.reachable("a", "b") and net.reachable("b", "a")
    m1 = net.send("a", "b", "Ping", None)
    m2 = net.send("b", "a", "Ping", None)
    world.run()
    assert nodes["b"].got == []
    assert [g[1] for g in nodes["a"].got] == [m2]
    assert drops(world) == {m1: "partition"}


def test_partition_and_heal():
    world, nodes = make_world()
    net = world.network
    net.partition([["a"], ["b", "c"]])
    for src, dst in [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"), ("c", "b")]:
        net.send(src, dst, "Cut", None)
    at(world, 5_000, net.heal)
    at(world, 6_000, net.send, "a", "b", "Healed", None)
    at(world, 6_000, net.send, "c", "a", "Healed", None)
    world.run()
    assert sorted(drops(world).values()) == ["partition"] * 4
    assert [g[3] for g in nodes["a"].got] == ["Healed"]
    assert [(g[2], g[3]) for g in nodes["b"].got] == [("c", "Cut"), ("a", "Healed")]
    assert [(g[2], g[3]) for g in nodes["c"].got] == [("b", "Cut")]


def test_a_named_heal_ends_its_own_cut_only_and_links_another_cut_holds_stay_cut():
    """Overlapping cuts each last their own time: healing cut "x" leaves "y"'s links and the
    unnamed cut alone, and a link both hold heals only with the last of them."""
    world, _ = make_world(names=("a", "b", "c", "d"))
    net = world.network
    net.isolate("a", "x")
    net.block("b", "a", "y")  # also held by x
    net.block("c", "d")  # unnamed
    assert net.heal("x") == "1 of its links still cut by another fault"
    assert net.reachable("a", "b") and net.reachable("c", "a") and net.reachable("a", "c")
    assert not net.reachable("b", "a") and not net.reachable("c", "d")
    assert net.heal("x") is None  # nothing of x is left
    assert net.heal("y") is None
    assert net.reachable("b", "a") and not net.reachable("c", "d")
    net.isolate("b", "z")
    net.heal()  # a heal without a name ends every cut
    assert net.reachable("c", "d") and net.reachable("a", "b") and net.unhealed(0) is None
    net.heal("z")  # z's cut is gone with the plain heal: nothing to reopen
    assert net.reachable("b", "a")


def test_isolate_cuts_one_node_both_ways():
    world, nodes = make_world()
    net = world.network
    net.isolate("c")
    assert not net.reachable("a", "c") and not net.reachable("c", "b")
    assert net.reachable("a", "b") and net.reachable("b", "a")


def test_delay_rule_only_for_kind_and_link():
    world, nodes = make_world()
    net = world.network
    net.add_rule("delay", kind="K", src="a", dst="b", delay_us=5_000)
    net.send("a", "b", "L", "other kind")
    net.send("a", "b", "K", "delayed")
    net.send("a", "c", "K", "other dst")
    net.send("b", "a", "K", "other src")
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(1_000, "other kind"), (6_000, "delayed")]
    assert [(g[0], g[4]) for g in nodes["c"].got] == [(1_000, "other dst")]
    assert [(g[0], g[4]) for g in nodes["a"].got] == [(1_000, "other src")]


def test_rule_expires_at_end_us():
    world, nodes = make_world()
    net = world.network
    net.add_rule("delay", kind="K", delay_us=5_000, end_us=100)
    net.send("a", "b", "K", 0)
    at(world, 100, net.send, "a", "b", "K", 1)
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(6_000, 0), (6_000, 1)]  # 1 kept FIFO
    assert [g[4] for g in nodes["b"].got] == [0, 1]


def test_drop_rule_with_count():
    world, nodes = make_world()
    net = world.network
    rule = net.add_rule("drop", kind="K", count=2)
    mids = [net.send("a", "b", "K", i) for i in range(3)]
    other = net.send("a", "b", "L", "x")
    world.run()
    assert drops(world) == {mids[0]: f"rule:{rule.rid}", mids[1]: f"rule:{rule.rid}"}
    assert [g[1] for g in nodes["b"].got] == [mids[2], other]
    assert rule.count == 0


def _reorder_run(seed):
    world, nodes = make_world(seed=seed)
    world.network.add_rule("reorder", kind="K", delay_us=3_000)
    for i in range(20):
        world.network.send("a", "b", "K", i)
    world.run()
    return [g[4] for g in nodes["b"].got]


def test_reorder_rule_lifts_fifo():
    order = _reorder_run(seed=5)
    assert sorted(order) == list(range(20))
    assert order != list(range(20))
    assert _reorder_run(seed=5) == order


def test_duplicate_rule_delivers_twice():
    world, nodes = make_world()
    net = world.network
    net.add_rule("duplicate", kind="K")
    mid = net.send("a", "b", "K", "twice")
    net.send("a", "b", "L", "once")
    world.run()
    assert [g[4] for g in nodes["b"].got] == ["twice", "twice", "once"]
    assert [e["mid"] for e in events(world, "deliver")] == [mid, mid, mid + 1]


def test_hold_rule_released_after_release_kind_delivered():
    world, nodes = make_world()
    net = world.network
    rule = net.add_rule("hold", kind="Stop", release_kind="Go")
    held = net.send("a", "b", "Stop", "held")
    to_c = net.send("a", "c", "Stop", "held for c")
    at(world, 3_000, net.send, "c", "b", "Go", "go")
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(4_000, "go"), (5_000, "held")]
    assert nodes["c"].got == []  # a release for b leaves c's held message in place
    assert [m.mid for m in rule.held] == [to_c]
    assert [(e["mid"], e["rule"]) for e in events(world, "hold")] == [(held, rule.rid),
                                                                       (to_c, rule.rid)]


def test_clear_rules_releases_held_messages():
    world, nodes = make_world()
    net = world.network
    net.add_rule("hold", kind="Stop", release_kind="Go")
    net.add_rule("delay", kind="Other", delay_us=1)
    net.send("a", "b", "Stop", "held")
    at(world, 2_000, net.clear_rules, "Stop")
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(3_000, "held")]
    assert [r.action for r in net.rules] == ["delay"]


def test_rule_to_json():
    net = Network()
    rule = net.add_rule("delay", kind="K", dst="b", delay_us=7)
    assert rule.to_json() == {"rid": 0, "action": "delay", "kind": "K", "dst": "b", "delay_us": 7}


def test_unknown_rule_action_rejected():
    net = Network()
    try:
        net.add_rule("teleport")
    except ValueError as exc:
        assert "teleport" in str(exc)
    else:
        raise AssertionError("expected ValueError")


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


def test_hold_not_released_by_an_earlier_release_message():
    world, nodes = make_world()
    net = world.network
    net.add_rule("hold", kind="Stop", release_kind="Go")
    net.send("a", "b", "Go", "early go")  # sent before the held message: releases nothing
    at(world, 500, net.send, "a", "b", "Stop", "held")
    at(world, 3_000, net.send, "a", "b", "Go", "late go")
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(1_000, "early go"), (4_000, "late go"),
                                                       (5_000, "held")]


class Brief:
    def __init__(self, fields):
        self.fields = fields

    def brief(self):
        return self.fields


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


def _stall_world():
    world, nodes = make_world()
    world.network.partition_mode = "stall"
    return world, nodes


def test_stall_mode_delivers_what_a_cut_link_held_in_order_after_the_heal():
    world, nodes = _stall_world()
    net = world.network
    net.block("a", "b")
    for n in range(3):
        net.send("a", "b", "Held", n)
    net.send("a", "c", "Free", 9)
    at(world, 5_000, net.heal)
    at(world, 5_000, net.send, "a", "b", "After", 3)  # sent after the heal: still after them
    world.run()
    assert drops(world) == {}
    assert [e["mid"] for e in events(world, "stall")] == [0, 1, 2]
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(6_000, 0), (6_000, 1), (6_000, 2), (6_000, 3)]
    assert [g[4] for g in nodes["c"].got] == [9]


def test_stall_mode_loses_the_held_messages_when_the_connection_closes():
    world, nodes = _stall_world()
    net = world.network
    net.block("a", "b")
    net.block("b", "c")
    net.send("a", "b", "Held", 0)
    net.send("b", "c", "Held", 1)
    at(world, 1_000, net.reset, "b", "a")  # either end may close it
    at(world, 2_000, world.crash, "c")  # a crash closes the crashed node's connections
    at(world, 5_000, net.heal)
    world.run()
    assert drops(world) == {0: "connection_closed", 1: "connection_closed"}
    assert nodes["b"].got == [] and nodes["c"].got == []


class Listener(Recorder):
    """Records deliveries and the disconnects it hears, as (time, peer)."""

    def __init__(self, name, world):
        super().__init__(name, world)
        self.closed = []

    def on_disconnect(self, peer):
        self.closed.append((self.now_us, peer))


def test_a_reset_loses_what_is_in_flight_both_ways_and_tells_both_ends():
    world, _ = make_world(names=())
    nodes = {n: Listener(n, world) for n in ("a", "b", "c")}
    net = world.network
    net.send("a", "b", "Request", 0)       # arrives at 1 ms: before the reset
    at(world, 1_500, net.send, "a", "b", "Request", 1)   # in flight at 2 ms: lost
    at(world, 1_800, net.send, "b", "a", "Response", 2)  # in flight the other way: lost
    at(world, 1_900, net.send, "a", "c", "Other", 3)     # another connection: untouched
    at(world, 2_000, net.reset_connections, "a", "b")
    at(world, 2_000, net.send, "a", "b", "Request", 4)   # on the new connection: arrives
    world.run()
    assert drops(world) == {1: "connection_reset", 2: "connection_reset"}
    assert [g[4] for g in nodes["b"].got] == [0, 4] and nodes["a"].got == []
    assert [g[4] for g in nodes["c"].got] == [3]
    assert nodes["a"].closed == [(3_000, "b")] and nodes["b"].closed == [(3_000, "a")]
    assert [(e["node"], e["peer"]) for e in events(world, "disconnect")] == [("a", "b"), ("b", "a")]


def test_a_reset_of_every_connection_spares_nodes_never_talked_to_and_cut_ends_hear_nothing():
    world, _ = make_world(names=())
    nodes = {n: Listener(n, world) for n in ("a", "b", "c")}
    net = world.network
    net.send("a", "b", "Request", 0)
    net.send("c", "a", "Request", 1)
    at(world, 500, net.block, "a", "c")  # c cannot hear from a
    at(world, 2_000, net.reset_connections, "a")
    world.run()
    assert nodes["b"].closed == [(3_000, "a")] and nodes["c"].closed == []
    assert nodes["a"].closed == [(3_000, "b"), (3_000, "c")]
    assert net.reset_connections("b", "b") == "no connection"


def test_unknown_partition_mode_is_refused():
    import pytest
    with pytest.raises(ValueError, match="partition mode"):
        Network(None, "lossy")


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
