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
  it, workload tweaks. A space made with the scenario's story keeps its scripted steps in
  every case, the episodes added around them. An episode is one fault with its undo or follow-up (crash + restart,
  isolate + heal, reassign + cancel or revert, leader move + move back), so shrinking drops
  both together;
- each episode starts a drawn gap after the previous one, on a 100 ms grid, mostly short
  (faults that break these protocols meet within a second or two); gaps shrink towards 0 and
  every other choice towards the first entry of its list (no sender/receiver filter, the
  shortest delay, no follow-up, the scenario's run seed and workload);
- steps carry every param the scenario loader fills in, so a schedule written back with
  `scenario_to_toml` parses to the same steps;
- how each kind is drawn lives with its fault action in `sim.kafka.faults` (its `draws`),
  or in `epochsim.explore.episodes` for the kinds that join several actions.
The run seed is drawn explicitly: hypothesis reseeds the global `random` per example, and the
simulation draws only from its own seeded streams.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from epochsim.explore.episodes import KIND_NAMES, episode
from epochsim.explore.picks import MAX_DURATION_SLOTS, SLOT_MS
from scenarios.clients import idempotence_explicit
from sim.core.faults import FaultStep, sorted_schedule
from sim.kafka.faults import CUT_ACTIONS
from sim.kafka.switch_choices import elect_leaders_refused

KINDS = ("crash", "isolate", "block", "rule:delay", "rule:hold", "rule:reorder", "rule:drop",
         "rule:duplicate", "move_leader", "preferred_election", "reassign",
         "controlled_shutdown", "controller_crash", "move_all_leaders", "retention",
         "control_race")
# The kinds that act only on a ZooKeeper-mode controller's requests (a `reorder` or `hold`
# takes LeaderAndIsr, StopReplica or UpdateMetadata, which a KRaft run never sends): a KRaft
# space leaves them out
ZK_ONLY_KINDS = ("rule:hold", "rule:reorder", "control_race")
# The kinds that act only on a KRaft cluster (its quorum and metadata log): a ZooKeeper-mode
# space leaves them out
KRAFT_ONLY_KINDS = ("stop_controller", "split_quorum", "cut_from_quorum", "slow_metadata",
                    "voter_change")
# Kinds a search draws only when asked (`epochsim explore --faults`): adding one to KINDS
# would change every default search, and the self-test's published figures with them.
OPT_IN_KINDS = ("power_loss", "reset_connections", "elect_leaders") + KRAFT_ONLY_KINDS
ALL_KINDS = KINDS + OPT_IN_KINDS
assert set(ALL_KINDS) == KIND_NAMES, "every explore episode is a default or an opt-in kind"
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
    story: tuple = ()  # the scenario's scripted steps every case keeps (explore's base)
    kraft: bool = False  # a KRaft run: rules draw KRaft's message kinds
    # ZooKeeper mode: how long a crashed broker's registration outlives it (its session), so a
    # restart within it fails (NODEEXISTS); 0 in KRaft mode
    broker_session_ms: int = 0
    # the ElectLeaders types the controllers' release takes by request (`elect_leaders`)
    election_types: tuple = ("preferred", "unclean")

    @classmethod
    def of(cls, scenario, max_faults: int = 8, kinds: tuple = KINDS,
           story: bool = False) -> FaultSpace:
        """The space of `scenario`; with `story`, its scripted [[faults]] are every case's
        base and generated episodes are added around them."""
        o = scenario.options
        kraft = o.kraft
        types = tuple(t for t in ("preferred", "unclean")
                      if not elect_leaders_refused(o.protocol.admin_elect_leaders, t.upper()))
        # KIP-853's voter changes act only on a dynamic quorum (`cluster.initial_controllers`)
        # of 3.9 or later: a static one answers every change UNSUPPORTED_VERSION
        dynamic = kraft and bool(o.cluster.initial_controllers) and o.protocol.raft_dynamic_voters
        kinds = _kinds_for_mode(kinds, kraft, bool(types), dynamic)
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
            producer_settings=tuple((p.name, _setting_choices(p, o.protocol_of(p.name)))
                                    for p in o.producers),
            assignment=tuple((f"{t.name}-{i}", tuple(r)) for t in o.topics
                             for i, r in enumerate(t.assignment)),
            max_faults=max_faults, kinds=kinds,
            story=tuple(scenario.steps) if story else (), kraft=kraft,
            broker_session_ms=0 if kraft else o.cluster.broker_session_timeout_ms,
            election_types=types)

    @property
    def slots(self) -> int:
        return self.window_ms // SLOT_MS

    @property
    def slot_ms(self) -> int:
        """The grid of episode times and durations."""
        return SLOT_MS

    def undo_at(self, start_ms: int, duration_ms: int) -> int:
        """When an undo `duration_ms` after `start_ms` lands: by the start of the settle
        window at the latest."""
        return min(start_ms + duration_ms, self.window_ms)

    def restart_at(self, start_ms: int, duration_ms: int, target: str) -> int:
        """When the restart of `target`, stopped at `start_ms` without a clean shutdown, lands:
        `duration_ms` later. A ZooKeeper-mode broker down no longer than its session finds its
        old registration still there and fails to start (NODEEXISTS); where the session is so
        long that every drawn duration would end that way (Kafka's 18 s from 2.5), the broker
        comes back `duration_ms` after its session has expired instead, so that crashes can
        bring brokers back at all. A shorter session keeps the draws as they are, both paths
        among them (a search that moved them all past the session found fewer of the
        self-test's bugs: docs/explore.md). By the start of the settle window at the latest
        (`undo_at`)."""
        broker = target in self.brokers or target in self.roles()
        if broker and self.broker_session_ms >= MAX_DURATION_SLOTS * SLOT_MS:
            duration_ms += self.broker_session_ms
        return self.undo_at(start_ms, duration_ms)

    def latest(self, start_ms: int, margin_ms: int) -> int:
        """`start_ms`, moved earlier if needed to leave `margin_ms` before the window closes."""
        return max(0, min(start_ms, (self.window_ms - margin_ms) // SLOT_MS * SLOT_MS - SLOT_MS))

    def follow_up(self, start_ms: int, after_slots: int) -> int:
        """A second action of an episode `after_slots` later, still inside the fault window."""
        return min(start_ms + after_slots * SLOT_MS, self.window_ms - SLOT_MS)

    def roles(self) -> tuple:
        return tuple(f"{role}:{tp}" for tp in self.tps for role in ("leader", "follower"))

    def group(self, name: str) -> tuple:
        return {"brokers": self.brokers, "controllers": self.controllers,
                "producers": self.producers, "clients": self.producers + self.consumers,
                "fetchers": self.brokers + self.consumers,
                "metadata_fetchers": self.brokers + self.controllers}[name]

    def nodes(self) -> tuple:
        return self.brokers + self.controllers + self.producers + self.consumers

    def links(self) -> tuple:
        """Directed links a `block` may cut, control links first and twice."""
        control = tuple((c, b) for c in self.controllers for b in self.brokers)
        back = tuple((b, c) for b in self.brokers for c in self.controllers)
        data = tuple((a, b) for a in self.brokers for b in self.brokers if a != b)
        clients = tuple((c, b) for c in self.producers + self.consumers for b in self.brokers)
        return control * 2 + back + data + clients


def _kinds_for_mode(kinds: tuple, kraft: bool, elects: bool = True,
                    dynamic: bool = False) -> tuple:
    """`kinds` without those that cannot act in the run's mode, nor `elect_leaders` when the
    controllers' release takes no ElectLeaders request (`elects` false: before 2.2), nor
    `voter_change` without a dynamic quorum (`dynamic` false); an error when none is left."""
    other_mode = ((ZK_ONLY_KINDS if kraft else KRAFT_ONLY_KINDS) + (() if elects
                                                                    else ("elect_leaders",))
                  + (() if dynamic else ("voter_change",)))
    left = tuple(k for k in kinds if k not in other_mode)
    if not left:
        mode = ("a KRaft cluster (cluster.mode = \"kraft\")" if kraft
                else "a ZooKeeper-mode cluster") + ("" if elects else " of this release")
        if kraft and not dynamic:
            mode += " (voter_change needs cluster.initial_controllers on 3.9 or later)"
        raise ValueError(f"--faults {','.join(kinds)}: none of these acts on {mode}; add a kind "
                         f"such as crash or isolate")
    return left


def _gaps(space: FaultSpace):
    """Slots from the previous episode's start: mostly short, so faults meet (the stories
    that break these protocols are a few steps within a second or two of each other)."""
    return st.one_of(st.integers(0, 5), st.integers(0, 20), st.integers(0, space.slots))


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
    refuses any other (`scenarios.clients.idempotence_supported`)."""
    explicit = idempotence_explicit(producer, protocol)
    out = {}
    for key, choices in WORKLOAD_CHOICES.items():
        base = getattr(producer, key)
        others = () if key == "acks" and explicit else tuple(c for c in choices if c != base)
        out[key] = (base,) + others
    return out


def cut_name(space: FaultSpace, index: int) -> str:
    """The cut name of a case's `index`-th episode: `e<index>`, or, when the story already
    names a cut so (a counterexample explored again), `e<index>-<n>` with the first free n."""
    used = {s.params.get("cut") for s in space.story}
    name, n = f"e{index}", 1
    while name in used:
        name, n = f"e{index}-{n}", n + 1
    return name


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
    kinds = [k for k in enabled if k in KIND_NAMES] or list(space.kinds)
    starts = draw(st.lists(_gaps(space), min_size=1, max_size=space.max_faults))
    steps, slot = [], 0
    for index, gap in enumerate(starts):
        slot = min(slot + gap, space.slots - 1)
        kind = draw(st.sampled_from(kinds))
        steps += _name_cut(draw(episode(kind, space, slot * SLOT_MS)), cut_name(space, index))
    seed = space.base_seed + draw(st.integers(0, 2**16 - 1))
    workload = draw(_workload(space)) if "workload" in enabled else ()
    steps = sorted_schedule(list(space.story) + steps)
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
