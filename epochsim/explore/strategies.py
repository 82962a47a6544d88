"""Hypothesis strategies for fault schedules over one scenario's cluster (swarm testing).

Contract:
- `FaultSpace.of(scenario)` names what a schedule may touch: brokers, controllers, clients,
  partitions (with the scenario's replicas), topics, and the fault window
  [0, duration - settle). Every fault and its undo land inside the window, so the settle
  window stays quiet for the liveness rules;
- `cases(space)` draws a `Case`: first which of the space's fault kinds (`KINDS` unless
  `parse_kinds` chose others, such as the opt-in `power_loss`) this run may use (swarm
  testing: a run that only reorders and reassigns goes deeper than one that does a bit of
  everything),
  then 1..`max_faults` episodes of those kinds, then the run seed and, when the swarm enables
  it, workload tweaks. An episode is one fault with its undo or follow-up (crash + restart,
  isolate + heal, reassign + cancel or revert, leader move + move back), so shrinking drops
  both together;
- each episode starts a drawn gap after the previous one, on a 100 ms grid, mostly short
  (faults that break these protocols meet within a second or two); gaps shrink towards 0 and
  every other choice towards the first entry of its list (no sender/receiver filter, the
  shortest delay, no follow-up, the scenario's run seed and workload);
- steps carry every param the scenario loader fills in, so a schedule written back with
  `scenario_to_toml` parses to the same steps.
The run seed is drawn explicitly: hypothesis reseeds the global `random` per example, and the
simulation draws only from its own seeded streams.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from scenarios.clients import idempotence_explicit
from sim.core.faults import CUT_ACTIONS, FaultStep, sorted_schedule

SLOT_MS = 100
DELAYS_MS = (1, 10, 100, 500, 1000, 2000, 3000, 5000)
MAX_DURATION_SLOTS = 30
SHUTDOWN_STOP_MS = 500  # controlled_shutdown stops the broker this long after (cluster.py)
KINDS = ("crash", "isolate", "block", "rule:delay", "rule:hold", "rule:reorder", "rule:drop",
         "rule:duplicate", "move_leader", "preferred_election", "reassign",
         "controlled_shutdown", "controller_crash", "move_all_leaders", "retention",
         "control_race")
# Kinds a search draws only when asked (`epochsim explore --faults`): adding one to KINDS
# would change every default search, and the self-test's published figures with them.
OPT_IN_KINDS = ("power_loss", "reset_connections")
ALL_KINDS = KINDS + OPT_IN_KINDS
UNFLUSHED_MS = (30_000, 5_000, 1_000, 100)  # power_loss windows, the action's default first
MESSAGE_KINDS = ("LeaderAndIsr", "StopReplica", "UpdateMetadata", "Fetch", "Produce", "Metadata",
                 "FetchResponse", "ProduceResponse", "MetadataResponse", "LeaderAndIsrResponse",
                 "UpdateMetadataResponse", "StopReplicaResponse", "AlterPartition",
                 "AlterPartitionResponse")
# Rules pick kinds with these weights: the control requests and the requests that carry an
# epoch matter most to these protocols.
WEIGHTED_KINDS = (("LeaderAndIsr",) * 3 + ("StopReplica",) * 3 + ("UpdateMetadata",) * 3
                  + ("Fetch",) * 3 + ("Produce",) * 2 + ("ProduceResponse",) * 2
                  + ("LeaderAndIsrResponse",) * 2 + MESSAGE_KINDS[5:])
# Who sends each message kind: (senders, receivers), as roles of FaultSpace.group().
_ROUTES = {
    "LeaderAndIsr": ("controllers", "brokers"), "StopReplica": ("controllers", "brokers"),
    "UpdateMetadata": ("controllers", "brokers"), "AlterPartitionResponse": ("controllers", "brokers"),
    "LeaderAndIsrResponse": ("brokers", "controllers"), "StopReplicaResponse": ("brokers", "controllers"),
    "UpdateMetadataResponse": ("brokers", "controllers"), "AlterPartition": ("brokers", "controllers"),
    "Fetch": ("fetchers", "brokers"), "FetchResponse": ("brokers", "fetchers"),
    "Produce": ("producers", "brokers"), "ProduceResponse": ("brokers", "producers"),
    "Metadata": ("clients", "brokers"), "MetadataResponse": ("brokers", "clients"),
}
# Producer settings the workload part of a case may change (the scenario's value comes first).
WORKLOAD_CHOICES = {"acks": ("all", 1), "max_in_flight": (1, 5), "metadata_max_age_ms": (500,)}


@dataclass(frozen=True)
class Case:
    """One generated run: its seed, fault schedule and workload tweaks."""

    seed: int
    steps: tuple  # FaultStep, sorted by time
    workload: tuple = ()  # (producer, setting, value)
    enabled: tuple = ()  # the swarm's fault kinds for this run

    def key(self) -> str:
        """A canonical text of what the run depends on (cache key)."""
        return json.dumps([self.seed, [s.to_json() for s in self.steps], self.workload],
                          sort_keys=True)


@dataclass(frozen=True)
class FaultSpace:
    brokers: tuple
    controllers: tuple
    producers: tuple
    consumers: tuple
    tps: tuple
    topics: tuple
    window_ms: int
    base_seed: int
    producer_settings: tuple  # (name, {setting: (the scenario's value, other choices...)})
    assignment: tuple  # (tp, the scenario's replicas) of each partition
    max_faults: int = 8
    kinds: tuple = KINDS  # the fault kinds the swarm chooses from, in ALL_KINDS order

    @classmethod
    def of(cls, scenario, max_faults: int = 8, kinds: tuple = KINDS) -> FaultSpace:
        o = scenario.options
        window = (o.run.duration_ms - o.run.settle_ms) // SLOT_MS * SLOT_MS
        if window < SLOT_MS:
            raise ValueError(f"run.duration_ms - run.settle_ms = {window} ms leaves no time for "
                             f"faults; lower settle_ms or raise duration_ms")
        return cls(
            brokers=tuple(f"b{i}" for i in range(1, o.cluster.brokers + 1)),
            controllers=tuple(f"c{i}" for i in range(1, o.cluster.controllers + 1)),
            producers=tuple(p.name for p in o.producers),
            consumers=tuple(c.name for c in o.consumers),
            tps=tuple(f"{t.name}-{i}" for t in o.topics for i in range(t.partitions)),
            topics=tuple(t.name for t in o.topics),
            window_ms=window, base_seed=scenario.seed,
            producer_settings=tuple((p.name, _setting_choices(p, o.protocol))
                                    for p in o.producers),
            assignment=tuple((f"{t.name}-{i}", tuple(r)) for t in o.topics
                             for i, r in enumerate(t.assignment)),
            max_faults=max_faults, kinds=kinds)

    @property
    def slots(self) -> int:
        return self.window_ms // SLOT_MS

    def roles(self) -> tuple:
        return tuple(f"{role}:{tp}" for tp in self.tps for role in ("leader", "follower"))

    def group(self, name: str) -> tuple:
        return {"brokers": self.brokers, "controllers": self.controllers,
                "producers": self.producers, "clients": self.producers + self.consumers,
                "fetchers": self.brokers + self.consumers}[name]

    def nodes(self) -> tuple:
        return self.brokers + self.controllers + self.producers + self.consumers

    def links(self) -> tuple:
        """Directed links a `block` may cut, control links first and twice."""
        control = tuple((c, b) for c in self.controllers for b in self.brokers)
        back = tuple((b, c) for b in self.brokers for c in self.controllers)
        data = tuple((a, b) for a in self.brokers for b in self.brokers if a != b)
        clients = tuple((c, b) for c in self.producers + self.consumers for b in self.brokers)
        return control * 2 + back + data + clients


# -- times -----------------------------------------------------------------------------------
def _gaps(space: FaultSpace):
    """Slots from the previous episode's start: mostly short, so faults meet (the stories
    that break these protocols are a few steps within a second or two of each other)."""
    return st.one_of(st.integers(0, 5), st.integers(0, 20), st.integers(0, space.slots))


def _latest(space: FaultSpace, start_ms: int, margin_ms: int) -> int:
    """`start_ms`, moved earlier if needed to leave `margin_ms` before the window closes."""
    return max(0, min(start_ms, (space.window_ms - margin_ms) // SLOT_MS * SLOT_MS - SLOT_MS))


def _durations(lo_slots: int = 1):
    return st.integers(lo_slots, MAX_DURATION_SLOTS).map(lambda k: k * SLOT_MS)


def _follow_up(space: FaultSpace, start_ms: int, after_slots: int) -> int:
    """A second action of an episode `after_slots` later, still inside the fault window."""
    return min(start_ms + after_slots * SLOT_MS, space.window_ms - SLOT_MS)


def _undo_at(space: FaultSpace, start_ms: int, duration_ms: int) -> int:
    """The undo lands by the start of the settle window at the latest."""
    return min(start_ms + duration_ms, space.window_ms)


def _pair(start_ms: int, action: str, target, undo_ms: int, undo: str,
          params: dict | None = None) -> list[FaultStep]:
    return [FaultStep(start_ms * 1000, action, target, params or {}),
            FaultStep(undo_ms * 1000, undo, target)]


# -- episodes ------------------------------------------------------------------------------
@st.composite
def _crash(draw, space: FaultSpace, start: int):
    target = draw(st.sampled_from(space.brokers + space.roles() + space.producers + space.consumers))
    return _pair(start, "crash", target, _undo_at(space, start, draw(_durations())), "restart")


@st.composite
def _power_loss(draw, space: FaultSpace, start: int):
    """A broker loses power, and with it what its OS had not yet written back (KIP-101's
    second case needs two such losses: two episodes)."""
    target = draw(st.sampled_from(space.brokers + space.roles()))
    params = {"unflushed_ms": draw(st.sampled_from(UNFLUSHED_MS))}
    return _pair(start, "power_loss", target, _undo_at(space, start, draw(_durations())),
                 "restart", params)


@st.composite
def _reset_connections(draw, space: FaultSpace, start: int):
    """The network resets one connection, or every connection of a node: what is in flight
    on it is lost and both ends hear of it (a written batch whose answer was lost is sent
    again). Explicit nodes only, as for `block`."""
    node = draw(st.sampled_from(space.nodes()))
    peer = draw(st.sampled_from((None,) + tuple(n for n in space.nodes() if n != node)))
    return [FaultStep(start * 1000, "reset_connections", node, {} if peer is None else {"peer": peer})]


@st.composite
def _isolate(draw, space: FaultSpace, start: int):
    targets = space.brokers + ("controller",) + space.roles() + space.controllers
    target = draw(st.sampled_from(targets + space.producers + space.consumers))
    return _pair(start, "isolate", target, _undo_at(space, start, draw(_durations())), "heal")


@st.composite
def _block(draw, space: FaultSpace, start: int):
    """Cut one directed link; controller-to-broker links (where control requests travel) are
    drawn twice as often as the others. Explicit nodes only: a role could resolve to the
    other end of the link when the step fires."""
    src, dst = draw(st.sampled_from(space.links()))
    return _pair(start, "block", src, _undo_at(space, start, draw(_durations())), "heal",
                 {"dst": dst})


CONTROL_KINDS = ("LeaderAndIsr", "StopReplica", "UpdateMetadata")
# The kinds a `reorder` or `hold` may take out of order: the controller's requests, whose races
# KIP-570 and the findings study. A client's or a follower's connection keeps its order both
# ways in Kafka (a broker serves one request of a connection at a time and answers in order,
# and the client matches answers to requests in that order), so reordering those messages is a
# fault no real network makes: the search found false alarms with reordered ProduceResponses
# (docs/selftest.md).
REORDERED_KINDS = tuple(kind for kind in CONTROL_KINDS for _ in range(3))


def _rule(action: str):
    kinds = REORDERED_KINDS if action in ("reorder", "hold") else WEIGHTED_KINDS

    @st.composite
    def build(draw, space: FaultSpace, start: int):
        kind = draw(st.sampled_from(kinds))
        senders, receivers = (space.group(g) for g in _ROUTES[kind])
        params = {"rule": action, "kind": kind}
        src = draw(st.sampled_from((None,) + senders))
        dst = draw(st.sampled_from((None,) + receivers))
        if src is not None:
            params["src"] = src
        if dst is not None:
            params["dst"] = dst
        if action in ("delay", "reorder"):
            params["delay_ms"] = draw(st.sampled_from(DELAYS_MS))
        count = draw(st.sampled_from((None, 1, 2, 3)))
        if count is not None:
            params["count"] = count
        params["duration_ms"] = _undo_at(space, start, draw(_durations())) - start
        if action == "hold":
            params["release_kind"] = draw(st.sampled_from(WEIGHTED_KINDS))
        if src is not None and src == dst:
            # a node sends itself nothing, so the rule would match nothing: no step (drawn in
            # full first, so the draws that follow, and the search, stay the same)
            return []
        return [FaultStep(start * 1000, "rule", None, params)]
    return build


@st.composite
def _move_leader(draw, space: FaultSpace, start: int):
    """Move a leadership; maybe move it back (preferred election) a little later, the bounce
    that races LeaderAndIsr against clients' metadata (KIP-359)."""
    tp = draw(st.sampled_from(space.tps))
    to = draw(st.sampled_from(("next",) + space.brokers))
    steps = [FaultStep(start * 1000, "move_leader", tp, {"to": to})]
    back = draw(st.one_of(st.none(), st.integers(0, 20)))
    if back is not None:
        steps.append(FaultStep(_follow_up(space, start, back) * 1000, "preferred_election", tp))
    return steps


@st.composite
def _preferred_election(draw, space: FaultSpace, start: int):
    tp = draw(st.sampled_from((None,) + space.tps))
    return [FaultStep(start * 1000, "preferred_election", tp)]


@st.composite
def _reassign(draw, space: FaultSpace, start: int):
    """Reassign a partition; maybe cancel it, or revert it to the scenario's replicas, a
    little later (the operator's second thoughts behind KIP-570 and KAFKA-13972)."""
    tp = draw(st.sampled_from(space.tps))
    ids = draw(st.permutations([int(b[1:]) for b in space.brokers]))
    replicas = ids[:draw(st.integers(1, len(ids)))]
    steps = [FaultStep(start * 1000, "reassign", tp, {"replicas": replicas})]
    then = draw(st.sampled_from((None, "cancel", "revert")))
    if then is not None:
        at = _follow_up(space, start, draw(st.integers(0, 20))) * 1000
        steps.append(FaultStep(at, "cancel_reassignment", tp) if then == "cancel" else
                     FaultStep(at, "reassign", tp, {"replicas": list(dict(space.assignment)[tp])}))
    return steps


@st.composite
def _controlled_shutdown(draw, space: FaultSpace, start: int):
    target = draw(st.sampled_from(space.brokers + space.roles()))
    start = _latest(space, start, SHUTDOWN_STOP_MS + 2 * SLOT_MS)
    # the broker stops SHUTDOWN_STOP_MS later; restart only after that
    back = _undo_at(space, start, draw(_durations(lo_slots=SHUTDOWN_STOP_MS // SLOT_MS + 2)))
    return _pair(start, "controlled_shutdown", target, back, "restart")


@st.composite
def _controller_crash(draw, space: FaultSpace, start: int):
    action, undo = draw(st.sampled_from((("crash", "restart"), ("isolate", "heal"))))
    return _pair(start, action, "controller", _undo_at(space, start, draw(_durations())), undo)


@st.composite
def _move_all_leaders(draw, space: FaultSpace, start: int):
    target = draw(st.sampled_from(space.brokers + space.roles()))
    return [FaultStep(start * 1000, "move_all_leaders", target)]


@st.composite
def _retention(draw, space: FaultSpace, start: int):
    target = draw(st.sampled_from(space.tps + space.topics))
    offset = draw(st.one_of(st.none(), st.integers(0, 100).map(lambda k: k * 5)))
    params = {} if offset is None else {"log_start_offset": offset}
    return [FaultStep(start * 1000, "retention", target, params)]


@st.composite
def _control_race(draw, space: FaultSpace, start: int):
    """A control-plane change whose requests race the ones that follow: hold one kind of
    control request the change sends (to one broker or all) until a later control request of
    a given kind reaches the same broker. KIP-570's reorder is StopReplica held behind
    LeaderAndIsr; its mirror image, and every other pair, are drawn as often."""
    kind, release = draw(st.sampled_from(CONTROL_KINDS)), draw(st.sampled_from(CONTROL_KINDS))
    params = {"rule": "hold", "kind": kind, "release_kind": release, "duration_ms": SLOT_MS}
    dst = draw(st.sampled_from((None,) + space.group("brokers")))
    if dst is not None:
        params["dst"] = dst
    change = draw(st.sampled_from(("move_leader", "reassign", "controlled_shutdown")))
    return [FaultStep(start * 1000, "rule", None, params)] + draw(EPISODES[change](space, start))


EPISODES = {
    "crash": _crash, "isolate": _isolate, "block": _block,
    **{f"rule:{a}": _rule(a) for a in ("delay", "hold", "reorder", "drop", "duplicate")},
    "move_leader": _move_leader, "preferred_election": _preferred_election,
    "reassign": _reassign, "controlled_shutdown": _controlled_shutdown,
    "controller_crash": _controller_crash, "move_all_leaders": _move_all_leaders,
    "retention": _retention, "control_race": _control_race, "power_loss": _power_loss,
    "reset_connections": _reset_connections,
}


# -- workload and whole cases --------------------------------------------------------------
@st.composite
def _workload(draw, space: FaultSpace):
    """Per producer, maybe another acks / max_in_flight / metadata_max_age_ms."""
    out = []
    for name, settings in space.producer_settings:
        for key, choices in settings.items():
            value = draw(st.sampled_from(choices))
            if value != choices[0]:
                out.append((name, key, value))
    return tuple(out)


def _setting_choices(producer, protocol) -> dict:
    """Per WORKLOAD_CHOICES key, the producer's own value first, then the others Kafka
    accepts for it: a producer that asks for idempotence explicitly keeps acks=all, as Kafka
    refuses any other (`scenarios.schema._idempotence_supported`)."""
    explicit = idempotence_explicit(producer, protocol)
    out = {}
    for key, choices in WORKLOAD_CHOICES.items():
        base = getattr(producer, key)
        others = () if key == "acks" and explicit else tuple(c for c in choices if c != base)
        out[key] = (base,) + others
    return out


def _name_cut(steps: list[FaultStep], name: str) -> list[FaultStep]:
    """An episode's cut and its heal, named `name`, so the heal ends that cut only and
    overlapping cuts of other episodes each last their own time (as a mix's do)."""
    if not any(s.action in CUT_ACTIONS for s in steps):
        return steps
    return [FaultStep(s.at_us, s.action, s.target, {**s.params, "cut": name})
            if s.action in CUT_ACTIONS + ("heal",) else s for s in steps]


@st.composite
def cases(draw, space: FaultSpace):
    """A `Case`: swarm choice of fault kinds, episodes of those kinds, seed, workload."""
    enabled = tuple(kind for kind in space.kinds + ("workload",) if draw(st.booleans()))
    kinds = [k for k in enabled if k in EPISODES] or list(space.kinds)
    starts = draw(st.lists(_gaps(space), min_size=1, max_size=space.max_faults))
    steps, slot = [], 0
    for index, gap in enumerate(starts):
        slot = min(slot + gap, space.slots - 1)
        kind = draw(st.sampled_from(kinds))
        steps += _name_cut(draw(EPISODES[kind](space, slot * SLOT_MS)), f"e{index}")
    seed = space.base_seed + draw(st.integers(0, 2**16 - 1))
    workload = draw(_workload(space)) if "workload" in enabled else ()
    steps = sorted_schedule(steps)
    return Case(seed, tuple(steps), workload, enabled)


def parse_kinds(text: str) -> tuple:
    """The fault kinds of a `--faults` value, in ALL_KINDS order: a comma-separated list of
    kinds replaces the default set; `+kind` adds to it and `-kind` takes from it. Raises
    ValueError naming the bad item."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError(f"{text!r} names no fault kind")
    relative = [item[0] in "+-" for item in items]
    if any(relative) and not all(relative):
        raise ValueError(f"{text!r} mixes a plain list with +kind/-kind changes; use one form")
    chosen = set(KINDS) if all(relative) else set()
    for item in items:
        kind = item.lstrip("+-")
        if kind not in ALL_KINDS:
            raise ValueError(f"{kind!r} is not a fault kind; kinds are {', '.join(ALL_KINDS)}")
        (chosen.discard if item.startswith("-") else chosen.add)(kind)
    if not chosen:
        raise ValueError(f"{text!r} leaves no fault kind")
    return tuple(k for k in ALL_KINDS if k in chosen)


def apply_workload(scenario, workload: tuple):
    """`scenario` with the producer settings of `workload` changed (a new Scenario)."""
    if not workload:
        return scenario
    changes: dict[str, dict] = {}
    for name, key, value in workload:
        changes.setdefault(name, {})[key] = value
    producers = tuple(replace(p, **changes.get(p.name, {})) for p in scenario.options.producers)
    return replace(scenario, options=replace(scenario.options, producers=producers))
