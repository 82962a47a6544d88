"""Fault actions that need no Kafka actor (crash, restart, the network faults), applied by
the nemesis to a bare world: each action's `apply` from `sim.kafka.faults`."""

from types import SimpleNamespace

from sim.core.faults import LAPSE, FaultStep, Nemesis
from sim.kafka.faults import (
    ACTIONS,
    CONTROLLED_SHUTDOWN_US,
    CUT_ACTIONS,
    DEFAULT_UNDO,
    SETTLE_SAFE,
    UNDO_ACTIONS,
    UNDO_OF,
    handlers,
)
from tests.core.test_faults import fault_events, make_world


def _run_schedule(steps, traffic, names=("a", "b", "c")):
    world, nodes = make_world(names)
    Nemesis(world, steps, handlers(SimpleNamespace(world=world)),
            resolve=lambda t: t if t in world.actors else None).start()
    for t_us, src, dst, kind in traffic:
        world.kernel.call_later(t_us, world.network.send, src, dst, kind, None)
    world.run()
    return world, nodes


def test_crash_and_restart_handlers():
    steps = [FaultStep(1_000, "crash", "b"), FaultStep(1_500, "crash", "b"),
             FaultStep(3_000, "restart", "b"), FaultStep(3_500, "restart", "b")]
    traffic = [(500, "a", "b", "lost"), (4_000, "a", "b", "ok")]
    world, nodes = _run_schedule(steps, traffic)
    assert nodes["b"].crashes == 1 and nodes["b"].restarts == 1
    assert [g[2] for g in nodes["b"].got] == ["ok"]
    outcomes = [e["outcome"] for e in fault_events(world) if e["kind"] == "fault_outcome"]
    assert outcomes == ["already down", "already up"]


def test_isolate_and_heal_handlers():
    steps = [FaultStep(1_000, "isolate", "c"), FaultStep(5_000, "heal")]
    traffic = [(2_000, "a", "c", "cut"), (2_000, "c", "b", "cut"), (2_000, "a", "b", "ok"),
               (6_000, "c", "a", "healed")]
    world, nodes = _run_schedule(steps, traffic)
    assert [g[2] for g in nodes["b"].got] == ["ok"]
    assert nodes["c"].got == []
    assert [g[2] for g in nodes["a"].got] == ["healed"]


def test_partition_and_block_handlers():
    steps = [FaultStep(1_000, "partition", None, {"groups": [["a"], ["b", "c"]]}),
             FaultStep(2_000, "heal"),
             FaultStep(3_000, "block", "a", {"dst": "b"})]
    traffic = [(1_500, "b", "a", "cut"), (1_500, "b", "c", "ok"),
               (3_500, "a", "b", "blocked"), (3_500, "b", "a", "one-way ok")]
    world, nodes = _run_schedule(steps, traffic)
    assert [g[2] for g in nodes["a"].got] == ["one-way ok"]
    assert nodes["b"].got == []
    assert [g[2] for g in nodes["c"].got] == ["ok"]


def test_rule_and_clear_rules_handlers():
    steps = [FaultStep(1_000, "rule", None, {"rule": "delay", "kind": "K", "delay_ms": 4}),
             FaultStep(1_000, "rule", None, {"rule": "drop", "kind": "D", "duration_ms": 2}),
             FaultStep(5_000, "clear_rules", None, {"kind": "K"})]
    traffic = [(2_000, "a", "b", "K"), (2_000, "a", "c", "D"), (3_500, "a", "c", "D"),
               (6_000, "a", "b", "K")]
    world, nodes = _run_schedule(steps, traffic)
    assert [(g[0], g[2]) for g in nodes["b"].got] == [(7_000, "K"), (7_000, "K")]
    assert [(g[0], g[2]) for g in nodes["c"].got] == [(4_500, "D")]  # rule ended at 3_000
    outcomes = [e["outcome"] for e in fault_events(world) if e["kind"] == "fault_outcome"]
    assert outcomes == ["rule 0", "rule 1"]
    assert [r.rid for r in world.network.rules] == [1]


def test_undo_aimed_at_a_role_acts_on_the_node_its_fault_hit():
    world, nodes = make_world()
    roles = {"boss": "a"}
    world.kernel.call_later(1_500, roles.__setitem__, "boss", "c")  # role moves meanwhile
    steps = [FaultStep(1_000, "crash", "boss"), FaultStep(2_000, "restart", "boss")]
    Nemesis(world, steps, handlers(SimpleNamespace(world=world)), resolve=roles.get,
            undo_actions=UNDO_ACTIONS).start()
    world.run()
    assert nodes["a"].crashes == 1 and nodes["a"].restarts == 1
    assert nodes["c"].crashes == 0 and nodes["c"].restarts == 0
    resolved = [e["resolved"] for e in fault_events(world) if e["kind"] == "fault"]
    assert resolved == ["a", "a"]


def test_overlapping_faults_of_a_role_each_come_back():
    """Two controllers crashed in turn, their restarts both aimed at "controller": each
    restart takes a node still down (the oldest first), so none stays down for good."""
    world, nodes = make_world()
    roles = {"boss": "a"}
    world.kernel.call_later(1_500, roles.__setitem__, "boss", "b")  # a new one takes over
    steps = [FaultStep(1_000, "crash", "boss"), FaultStep(2_000, "crash", "boss"),
             FaultStep(3_000, "restart", "boss"), FaultStep(4_000, "restart", "boss")]
    Nemesis(world, steps, handlers(SimpleNamespace(world=world)), resolve=roles.get,
            undo_actions=UNDO_ACTIONS, undo_of=UNDO_OF).start()
    world.run()
    assert [(n.crashes, n.restarts) for n in nodes.values()] == [(1, 1), (1, 1), (0, 0)]
    resolved = [e["resolved"] for e in fault_events(world) if e["kind"] == "fault"]
    assert resolved == ["a", "b", "a", "b"]
    assert not [e for e in fault_events(world) if e["kind"] == "fault_outcome"]


def test_undo_of_pairs_each_opener_with_its_own_undo():
    assert UNDO_OF["crash"] == "restart" and UNDO_OF["isolate"] == "heal"
    assert set(UNDO_OF.values()) == set(UNDO_ACTIONS)


# -- the catalogue ---------------------------------------------------------------------------

def test_the_catalogue_names_only_its_own_actions():
    for action in ACTIONS.values():
        assert set(action.undoes) <= set(ACTIONS), action.name
        assert action.default_undo in (None, LAPSE, *ACTIONS), action.name
    assert set(SETTLE_SAFE) <= set(ACTIONS)
    assert set(DEFAULT_UNDO.values()) - {LAPSE} <= set(SETTLE_SAFE)
    windows = {a.window for a in ACTIONS.values() if a.window}
    assert windows == {a.ends for a in ACTIONS.values() if a.ends} == {"down", "cut", "rule"}
    assert set(CUT_ACTIONS) == {n for n, a in ACTIONS.items() if a.window == "cut"}


def test_a_restart_after_a_controlled_shutdown_waits_for_the_broker_to_stop():
    """The shrinker keeps a restart after the broker stopped (or the restart finds it up)."""
    assert ACTIONS["controlled_shutdown"].undo_after_us > CONTROLLED_SHUTDOWN_US
    assert "controlled_shutdown" in ACTIONS["restart"].undoes


def test_heal_ends_its_own_cut_and_clear_rules_its_own_kind():
    cut = FaultStep(0, "isolate", "a", {"cut": "e1"})
    heal = ACTIONS["heal"]
    assert heal.pairs(FaultStep(1, "heal", None, {"cut": "e1"}), cut)
    assert not heal.pairs(FaultStep(1, "heal", None, {"cut": "e2"}), cut)
    assert heal.pairs(FaultStep(1, "heal"), cut)
    rule = FaultStep(0, "rule", None, {"rule": "drop", "kind": "Fetch"})
    clear = ACTIONS["clear_rules"]
    assert clear.pairs(FaultStep(1, "clear_rules", None, {"kind": "Fetch"}), rule)
    assert not clear.pairs(FaultStep(1, "clear_rules", None, {"kind": "Produce"}), rule)
