"""Cuts and connections: block, partition, isolate and (named) heals; stalled links; resets
and the disconnects they cause."""

import pytest

from sim.core.network import Network
from tests.core.networld import Listener, at, drops, events, make_world


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
    with pytest.raises(ValueError, match="partition mode"):
        Network(None, "lossy")


def test_a_crash_is_heard_after_what_a_delay_rule_keeps_on_the_connection():
    """A FIN follows the data sent before it: the peer hears of the close only once the
    delayed message is delivered, so nothing of the dead connection arrives after the close
    (it would pass for a message of the restarted node's new connection)."""
    world, _ = make_world(names=())
    nodes = {n: Listener(n, world) for n in ("a", "b")}
    net = world.network
    net.add_rule("delay", kind="K", src="a", dst="b", delay_us=5_000)
    net.send("a", "b", "K", 0)  # delivered at 6 ms
    at(world, 2_000, world.crash, "a")
    world.run()
    assert [(g[0], g[4]) for g in nodes["b"].got] == [(6_000, 0)]
    assert nodes["b"].closed == [(6_000, "a")]
    order = [e["kind"] for e in world.trace.events if e["node"] == "b"
             and e["kind"] in ("deliver", "disconnect")]
    assert order == ["deliver", "disconnect"]


def _crash_while_cut(mode: str, also_crash_peer: bool = False):
    """a and b talk; b is cut from a, crashes, and the cut heals at 5 ms."""
    world, _ = make_world(names=())
    world.network.partition_mode = mode
    nodes = {n: Listener(n, world) for n in ("a", "b")}
    net = world.network
    net.send("a", "b", "Request", 0)
    at(world, 2_000, net.block, "b", "a")
    at(world, 3_000, world.crash, "b")
    if also_crash_peer:
        at(world, 4_000, world.crash, "a")
        at(world, 4_500, world.restart, "a")
    at(world, 5_000, net.heal)
    world.run()
    return nodes


def test_the_news_of_a_crash_waits_for_the_heal_under_stall_and_is_lost_under_drop():
    """A process that died leaves its sockets to the OS, which retransmits the FIN as it
    would data: under `stall` the cut peer hears of the close once the link heals; under
    `drop` (datagram semantics) the news is lost like a message."""
    assert _crash_while_cut("stall")["a"].closed == [(6_000, "b")]
    assert _crash_while_cut("drop")["a"].closed == []


def test_the_news_of_a_close_dies_with_the_peer_it_was_going_to():
    """a crashed (and came back) before the heal: the old connection's close is not told
    to the new process."""
    assert _crash_while_cut("stall", also_crash_peer=True)["a"].closed == []


class _Starting(Listener):
    """A server whose port is not open yet: it refuses what would open a connection to it."""

    port_closed = True

    def refuses(self, kind):
        return kind == "Request"


def test_a_node_whose_port_is_closed_refuses_requests_and_takes_answers():
    """A request to a running node whose port is closed is lost (`refused`) and its sender
    hears of the close as after a crash; an answer on a connection the node opened arrives.
    Once the port opens, requests arrive."""
    world, _ = make_world(names=())
    a, b = Listener("a", world), _Starting("b", world)
    net = world.network
    net.send("a", "b", "Request", 0)
    net.send("a", "b", "Answer", 1)
    at(world, 5_000, setattr, b, "port_closed", False)
    at(world, 5_000, net.send, "a", "b", "Request", 2)
    world.run()
    assert drops(world) == {0: "refused"}
    assert [g[4] for g in b.got] == [1, 2]
    assert a.closed == [(2_000, "b")]
