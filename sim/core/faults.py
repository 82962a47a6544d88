"""Faults as data: a schedule of steps, applied by a nemesis that records what it did.

Contract:
- a `FaultStep` is (at_us, action, target, params); a schedule is a list sorted by time (ties
  keep their order in the list);
- `materialise_mix(mix, rng, until_us, index, cut_actions)` turns a random fault mix into
  concrete steps from one random stream, so a random run can be written back as a scripted one
  and replayed; a cut (an action of `cut_actions`) undone by `heal` is named `mix<index>.<n>`
  on both steps, so its heal ends that cut only;
- the `Nemesis` fires each step at its time: it resolves the target (a node name, or a role
  such as "controller" resolved when the step fires by the model's resolver), calls the action
  handler and records a `fault` event with the resolved target and the handler's outcome.
Action names are plain strings; the actions themselves (their handlers, undos and cuts) are
supplied by whoever builds the run (`sim.kafka.faults` for the Kafka model).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaultStep:
    at_us: int
    action: str
    target: str | None = None
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"at_us": self.at_us, "action": self.action}
        if self.target is not None:
            out["target"] = self.target
        if self.params:
            out["params"] = self.params
        return out

    @classmethod
    def from_json(cls, obj: dict) -> FaultStep:
        return cls(int(obj["at_us"]), obj["action"], obj.get("target"), dict(obj.get("params", {})))


# A mix's undo that is no step: a rule of a mix with a duration gets it as its own
# `duration_ms` and lapses by itself, where a clear_rules step would also remove the rules of
# other mixes and of the scripted faults.
LAPSE = "lapse"


def sorted_schedule(steps: list[FaultStep]) -> list[FaultStep]:
    """Stable sort by time: steps at the same instant keep their given order."""
    return sorted(steps, key=lambda s: s.at_us)


def materialise_mix(mix: dict, rng: random.Random, until_us: int, index: int = 0,
                    cut_actions: tuple = ()) -> list[FaultStep]:
    """Concrete steps for one random mix entry, the mix's `index`-th in its scenario.

    Mix keys: `action`, `every_ms` (mean gap of a Poisson process), optional `targets` (picked
    uniformly per step), `params`, `start_ms`/`end_ms` (window), `duration_ms` (a number or
    [min, max]) with the `undo` action fired after that duration. A cut and its `heal`
    share a `cut` name: a heal that healed every link would also end the cuts of other mixes
    and of scripted faults, cutting their drawn durations short.
    """
    start = int(mix.get("start_ms", 0) * 1000)
    end = min(until_us, int(mix.get("end_ms", until_us / 1000) * 1000))
    mean_us = mix["every_ms"] * 1000
    targets = list(mix.get("targets", [None]))
    undo = mix.get("undo")
    steps: list[FaultStep] = []
    t = start + int(rng.expovariate(1.0 / mean_us))
    while t < end:
        target = targets[rng.randrange(len(targets))]
        params = dict(mix.get("params", {}))
        step = FaultStep(t, mix["action"], target, params)
        steps.append(step)
        if "duration_ms" in mix and undo:
            dur = mix["duration_ms"]
            dur_ms = rng.uniform(dur[0], dur[1]) if isinstance(dur, list) else dur
            if undo == LAPSE:
                params["duration_ms"] = max(1, round(dur_ms))  # whole ms, as scenario files take
            else:
                undo_params = {"of": mix["action"]} if undo == "clear_rules" else {}
                if undo == "heal" and mix["action"] in cut_actions:
                    params["cut"] = undo_params["cut"] = f"mix{index}.{len(steps)}"
                steps.append(FaultStep(t + int(dur_ms * 1000), undo, target, undo_params))
        t += max(1, int(rng.expovariate(1.0 / mean_us)))
    return [s for s in steps if s.at_us < until_us]


Handler = Callable[[str | None, dict], Any]


class Nemesis:
    """Fires a schedule of fault steps against the world."""

    def __init__(self, world, schedule: list[FaultStep], handlers: dict[str, Handler],
                 resolve: Callable[[str], str | None], undo_actions: frozenset = frozenset(),
                 undo_of: dict[str, str] | None = None):
        self.world = world
        self.undo_of = dict(undo_of or {})  # an opening action -> the undo that ends it
        self.undo_actions = frozenset(undo_actions) | frozenset(self.undo_of.values())
        self.schedule = sorted_schedule(schedule)
        self.handlers = handlers
        self.resolve = resolve
        # An undo step (one of `undo_actions`) aimed at a role acts on the node its paired
        # step hit ("restart the controller" restarts the one that crashed, not the one
        # elected since). A schedule does not say which opener an undo belongs to, so when
        # faults of one role overlap (two controllers crashed in turn) each undo takes the
        # oldest node of its kind still open on that role: every node struck comes back.
        self.last_hit: dict[str, str] = {}
        self.open_hits: dict[tuple[str, str], list[str]] = {}  # (role, undo) -> nodes, oldest first
        self.current_step = -1  # the index of the step being applied (a driver's parts name it)

    def start(self) -> None:
        for index, step in enumerate(self.schedule):
            self.world.kernel.call_later(step.at_us, self._fire, index, step)

    def _aim(self, step: FaultStep) -> str | None:
        """The node a step acts on: an undo aimed at a role takes the node its fault hit."""
        if step.action in self.undo_actions and step.target in self.last_hit:
            still_open = self.open_hits.get((step.target, step.action))
            return still_open.pop(0) if still_open else self.last_hit[step.target]
        resolved = self.resolve(step.target)
        if resolved is not None and step.action not in self.undo_actions:
            self.last_hit[step.target] = resolved
            undo = self.undo_of.get(step.action)
            if undo is not None and resolved != step.target:  # a role, not a node's name
                self.open_hits.setdefault((step.target, undo), []).append(resolved)
        return resolved

    def _fire(self, index: int, step: FaultStep) -> None:
        resolved = self._aim(step) if step.target is not None else None
        fields: dict[str, Any] = {"step": index, "action": step.action}
        if step.target is not None:
            fields["target"] = step.target
            fields["resolved"] = resolved
        if step.params:
            fields["params"] = step.params
        if step.target is not None and resolved is None:
            fields["outcome"] = "skipped: target not resolvable now"
            self.world.trace.emit(self.world.kernel.now_us, "nemesis", "fault", fields)
            return
        self.world.trace.emit(self.world.kernel.now_us, "nemesis", "fault", fields)
        self.current_step = index
        outcome = self.handlers[step.action](resolved, step.params)
        if outcome:
            self.world.trace.emit(self.world.kernel.now_us, "nemesis", "fault_outcome",
                                  {"step": index, "outcome": outcome})

    def fire_part(self, index: int, action: str, target: str, params: dict, part_of: str,
                  apply: Callable[[], Any]) -> None:
        """One part of step `index`, an action (`part_of`) that acts over time (a rolling
        restart's controlled shutdown of one broker): traced as a `fault` event of its own
        action with `part_of`, then applied, its outcome traced as that step's."""
        fields: dict[str, Any] = {"step": index, "action": action, "target": target,
                                  "resolved": target, "part_of": part_of}
        if params:
            fields["params"] = params
        self.world.trace.emit(self.world.kernel.now_us, "nemesis", "fault", fields)
        outcome = apply()
        if outcome:
            self.world.trace.emit(self.world.kernel.now_us, "nemesis", "fault_outcome",
                                  {"step": index, "outcome": outcome})

