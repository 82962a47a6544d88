"""Network rules: delay, drop, reorder, duplicate and hold messages of a kind while active."""

from sim.core.network import Network
from tests.core.networld import at, drops, events, make_world


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


def test_the_first_drop_or_hold_takes_the_message_and_later_rules_are_not_consulted():
    from sim.core.links import Message
    from sim.core.netrules import Rule, rule_effects

    msg = Message(0, "a", "b", "K", None)
    delay = Rule(0, "delay", kind="K", delay_us=5, count=3)
    hold = Rule(1, "hold", kind="K", release_kind="Go")
    after = Rule(2, "duplicate", kind="K", count=3)
    effects = rule_effects([delay, hold, after], msg, 0, rng=None)
    assert effects.taker is hold and (delay.count, after.count) == (2, 3)
    effects = rule_effects([delay, after], msg, 0, rng=None)
    assert effects == (None, 5, 2, False) and (delay.count, after.count) == (1, 2)
