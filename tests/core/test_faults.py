"""Faults as data: mix materialisation and the nemesis."""

import random

from sim.core.actor import Actor
from sim.core.faults import (
    LAPSE,
    FaultStep,
    Nemesis,
    materialise_mix,
    sorted_schedule,
)
from sim.core.kernel import Kernel
from sim.core.network import Network
from sim.core.rng import Streams
from sim.core.trace import Trace
from sim.core.world import World


class Node(Actor):
    def __init__(self, name, world):
        super().__init__(name, world)
        self.got = []
        self.crashes = 0
        self.restarts = 0

    def on_message(self, msg):
        self.got.append((self.now_us, msg.src, msg.kind))

    def on_crash(self):
        self.crashes += 1

    def on_restart(self):
        self.restarts += 1


def make_world(names=("a", "b", "c"), until_us=1_000_000):
    world = World(Kernel(until_us=until_us), Trace({"scenario": "faults", "seed": 1}, keep=True),
                  Streams(1), Network())
    return world, {n: Node(n, world) for n in names}


def fault_events(world):
    return [e for e in world.trace.events if e["kind"] in ("fault", "fault_outcome")]


# -- FaultStep and schedules -------------------------------------------------------------

def test_fault_step_json_round_trip():
    step = FaultStep(1_000, "rule", "b", {"rule": "drop", "kind": "K"})
    assert FaultStep.from_json(step.to_json()) == step
    assert FaultStep(5, "heal").to_json() == {"at_us": 5, "action": "heal"}


def test_sorted_schedule_is_stable():
    steps = [FaultStep(20, "x"), FaultStep(10, "first"), FaultStep(10, "second")]
    assert [s.action for s in sorted_schedule(steps)] == ["first", "second", "x"]


# -- materialise_mix -----------------------------------------------------------------------

MIX = {"action": "crash", "every_ms": 200, "targets": ["a", "b", "c"], "start_ms": 500,
       "end_ms": 5_000, "duration_ms": [50, 150], "undo": "restart"}


def test_materialise_mix_is_deterministic():
    one = materialise_mix(MIX, random.Random(9), until_us=10_000_000)
    two = materialise_mix(MIX, random.Random(9), until_us=10_000_000)
    assert one == two
    assert len(one) > 10
    assert materialise_mix(MIX, random.Random(10), until_us=10_000_000) != one


def test_materialise_mix_steps_in_window_with_paired_undo():
    steps = materialise_mix(MIX, random.Random(9), until_us=10_000_000)
    assert len(steps) % 2 == 0
    faults, undos = steps[0::2], steps[1::2]
    for fault, undo in zip(faults, undos, strict=True):
        assert fault.action == "crash" and undo.action == "restart"
        assert 500_000 <= fault.at_us < 5_000_000
        assert fault.target in MIX["targets"] and undo.target == fault.target
        assert 50_000 <= undo.at_us - fault.at_us <= 150_000
    assert [f.at_us for f in faults] == sorted(f.at_us for f in faults)


def test_materialise_mix_rule_lapses_by_itself_and_until_cut():
    """A rule mix's duration goes into each rule, which lapses alone: a clear_rules undo would
    also remove the rules of other mixes and of the scripted faults."""
    mix = {"action": "rule", "every_ms": 100, "duration_ms": 30, "undo": LAPSE,
           "params": {"rule": "drop", "kind": "K"}}
    steps = materialise_mix(mix, random.Random(1), until_us=2_000_000)
    assert steps and all(s.at_us < 2_000_000 for s in steps)
    assert {s.action for s in steps} == {"rule"}
    assert all(s.params == {"rule": "drop", "kind": "K", "duration_ms": 30} and s.target is None
               for s in steps)
    assert steps[0].params is not steps[-1].params or len(steps) == 1  # fresh dict per step


def test_materialise_mix_rule_with_an_explicit_undo_keeps_it():
    mix = {"action": "rule", "every_ms": 100, "duration_ms": 30, "undo": "clear_rules",
           "params": {"rule": "drop", "kind": "K"}}
    steps = materialise_mix(mix, random.Random(1), until_us=2_000_000)
    undos = [s for s in steps if s.action == "clear_rules"]
    assert undos and all(s.params == {"of": "rule"} for s in undos)
    assert all("duration_ms" not in s.params for s in steps if s.action == "rule")


def test_materialise_mix_names_each_cut_for_its_own_heal():
    """An isolate mix's heal ends its own cut only, named `mix<index>.<n>` on both steps: a
    plain heal would also end overlapping cuts of this and other mixes early."""
    mix = {"action": "isolate", "every_ms": 100, "targets": ["a", "b"], "duration_ms": [50, 400],
           "undo": "heal"}
    steps = materialise_mix(mix, random.Random(3), until_us=3_000_000, index=4,
                            cut_actions=("isolate",))
    cuts = [s for s in steps if s.action == "isolate"]
    heals = [s for s in steps if s.action == "heal"]
    assert cuts and len(cuts) == len(heals)
    names = [s.params["cut"] for s in cuts]
    assert len(set(names)) == len(names) and all(n.startswith("mix4.") for n in names)
    assert sorted(h.params["cut"] for h in heals) == sorted(names)
    for cut in cuts:
        heal = next(h for h in heals if h.params["cut"] == cut.params["cut"])
        assert 50_000 <= heal.at_us - cut.at_us <= 400_000 and heal.target == cut.target


def test_materialise_mix_without_duration_has_no_undo():
    steps = materialise_mix({"action": "isolate", "every_ms": 100, "targets": ["a"]},
                            random.Random(2), until_us=1_000_000)
    assert steps and {s.action for s in steps} == {"isolate"}


# -- Nemesis ----------------------------------------------------------------------------

def test_nemesis_fires_steps_at_their_time_and_resolves_roles():
    world, _ = make_world()
    calls = []

    def poke(target, params):
        calls.append((world.kernel.now_us, target, dict(params)))
        return "poked" if params.get("say") else None

    roles = {"boss": "b"}
    schedule = [FaultStep(3_000, "poke", "a"), FaultStep(1_000, "poke", "boss", {"say": 1}),
                FaultStep(2_000, "poke", "nobody"), FaultStep(4_000, "poke")]
    nemesis = Nemesis(world, schedule, {"poke": poke},
                      resolve=lambda t: roles.get(t, t if t in world.actors else None))
    nemesis.start()
    world.run()
    assert calls == [(1_000, "b", {"say": 1}), (3_000, "a", {}), (4_000, None, {})]
    evs = fault_events(world)
    assert [(e["t"], e["kind"]) for e in evs] == [(1_000, "fault"), (1_000, "fault_outcome"),
                                                  (2_000, "fault"), (3_000, "fault"),
                                                  (4_000, "fault")]
    assert all(e["node"] == "nemesis" for e in evs)
    first, outcome, skipped, plain, untargeted = evs
    assert first["action"] == "poke" and first["target"] == "boss" and first["resolved"] == "b"
    assert first["params"] == {"say": 1} and first["step"] == 0
    assert outcome["step"] == 0 and outcome["outcome"] == "poked"
    assert skipped["target"] == "nobody" and skipped["resolved"] is None
    assert skipped["outcome"].startswith("skipped")
    assert plain["resolved"] == "a" and "outcome" not in plain
    assert "target" not in untargeted and "resolved" not in untargeted


def test_nemesis_role_resolved_when_step_fires():
    world, _ = make_world()
    roles = {"boss": "a"}
    hit = []
    at = world.kernel.call_later
    at(1_500, roles.__setitem__, "boss", "c")
    nemesis = Nemesis(world, [FaultStep(1_000, "hit", "boss"), FaultStep(2_000, "hit", "boss")],
                      {"hit": lambda t, p: hit.append(t)}, resolve=roles.get)
    nemesis.start()
    world.run()
    assert hit == ["a", "c"]
