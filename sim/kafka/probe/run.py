"""Run one probe: a node set to a starting state, sent one message per step, then judged.

Contract: `run_probe(options, probe, seed, trace)` builds a world holding only the node under
test (a ZooKeeper-mode or KRaft broker, a `Producer`, a `Consumer`, or a ZooKeeper-mode or
KRaft controller, active or one voter of its quorum, the model's own classes) and, for every
other name it may talk to (the other brokers, the controllers, the clients, each step's sender), a `Peer` that records
what it is sent and answers nothing, as a unit test's mocks do. It sets the node's starting
state (`sim.kafka.probe.state`, `sim.kafka.probe.voter_state`), then for each step in turn: records a `probe_step` event, sends
the step's message from its sender through the simulated network (or, for an act such as
the operator's or the application's, `Kind.act`, acts on the node itself, what the act
returns being the step's answer (an admin request's); a wait step delivers nothing), lets the
step's `wait_ms` pass (a producer's Sender thread runs meanwhile: `Producer.run_send_loop`), and records one `probe_check` event per expectation (Kafka's value, the model's, agree or
not); what a check reads includes every partition a broker (re)added to its fetchers during
the step (`fetcher_added`). Returns the `ProbeOutcome`: the checks, and the kernel's run outcome.
Same inputs, same trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.core.actor import Actor
from sim.core.kernel import Kernel, RunOutcome
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.trace import Trace
from sim.core.world import World
from sim.kafka import vocab as V
from sim.kafka.broker import Broker
from sim.kafka.consumer import Consumer
from sim.kafka.controller import Controller
from sim.kafka.kraft_broker import KraftBroker
from sim.kafka.kraft_controller import KraftController
from sim.kafka.probe import observe
from sim.kafka.probe.consumer_state import set_consumer
from sim.kafka.probe.context import Context
from sim.kafka.probe.spec import PSEUDO_SENDERS, Probe
from sim.kafka.probe.state import (
    set_broker,
    set_controller,
    set_producer,
    set_zk_controller,
)
from sim.kafka.probe.voter_state import set_voter
from sim.kafka.probe.wire import KINDS
from sim.kafka.probe.wire_app import check_app_steps, check_producer_steps
from sim.kafka.probe.wire_voters import ADMIN_VOTER_KINDS
from sim.kafka.producer import Producer
from sim.kafka.store import Store

# the request each deliverable answer answers
ANSWERS = {"FetchResponse": "Fetch", "AlterPartitionResponse": "AlterPartition",
           "ProduceResponse": "Produce", "MetadataResponse": "Metadata",
           "OffsetsForLeaderEpochResponse": "OffsetsForLeaderEpoch",
           "ListOffsetsResponse": "ListOffsets", "MetadataFetchResponse": "QuorumFetch",
           "VoteResponse": "Vote", "QuorumFetchResponse": "QuorumFetch",
           "BeginQuorumEpochResponse": "BeginQuorumEpoch",
           "EndQuorumEpochResponse": "EndQuorumEpoch",
           "InitProducerIdResponse": "InitProducerId",
           "AllocateProducerIdsResponse": "AllocateProducerIds",
           "ElectLeadersResult": "ElectLeaders",
           "QuorumApiVersionsResponse": "QuorumApiVersions"}


class Peer(Actor):
    """A node the probe plays: it records every message it is sent, with its arrival time.
    `profile` is the release it plays (`[protocol.brokers]`), which the node under test reads
    as a broker's ApiVersions answer."""

    def __init__(self, name: str, world: World):
        super().__init__(name, world)
        self.profile = world.options.node_profile(name)
        self.inbox: list[tuple[int, object]] = []

    def on_message(self, msg) -> None:
        self.inbox.append((self.now_us, msg))


@dataclass
class ProbeOutcome:
    checks: list = field(default_factory=list)  # dicts: step, check, kafka, model, agree
    run: RunOutcome | None = None

    @property
    def agree(self) -> bool:
        return all(c["agree"] for c in self.checks)


class ProbeRun:
    def __init__(self, options, probe: Probe, seed: int, trace):
        self.options, self.probe = options, probe
        self.step_starts: list[int] = []  # when each step judged so far began
        until_us = sum(s.wait_ms for s in probe.steps) * 1000 + 1
        self.kernel = Kernel(until_us, options.run.max_events)
        net = Network(LinkSpec(latency=options.network.latency), options.network.partition)
        self.world = World(self.kernel, trace, Streams(seed), net)
        self.world.options = options
        self.store = Store(ibp_profile=options.ibp, ibp=options.ibp_protocol(options.ibp))
        for t in options.topics:
            self.store.create_topic(t.name, t.assignment, t.message_format, t.retention_ms,
                                    t.segment_ms)
        self.zk = Peer("zk", self.world)  # ZooKeeper: the sender of its notifications
        self.node = self._node()
        self.node_sent: list[tuple[str, str, object]] = []  # (dst, kind, body), as sent
        self._record_sends()
        self.fetcher_adds: list[tuple[str, int]] = []  # (tp, leader), as the node added them
        self._record_fetcher_adds()
        self.peers = {"zk": self.zk,
                      **{name: Peer(name, self.world) for name in self._peer_names()}}
        if probe.role == "broker":  # an admin client's requests to a broker go on the wire
            self.peers["admin"] = Peer("admin", self.world)
        self.ctx = Context(self)
        self.outcome = ProbeOutcome()
        self.act_answer = None  # what the step's act answered (an admin request's answer)
        self.events: list = []
        trace.observe(self._on_event)

    def _node(self):
        o, name = self.options, self.probe.node
        voters = [f"c{i}" for i in range(1, o.cluster.controllers + 1)]  # KRaft's quorum
        if self.probe.role == "voter" and self.probe.state.get("voters"):
            voters = list(self.probe.state["voters"])  # the node may be left out: an observer
        if self.probe.role in ("controller", "voter"):
            return KraftController(self.world, name, o, o.protocol, self.store, voters)
        if self.probe.role == "zk_controller":
            return Controller(self.world, name, o, o.protocol, self.store)
        if self.probe.role == "broker" and o.kraft:
            return KraftBroker(self.world, int(name[1:]), o, o.protocol_of(name), self.store,
                               voters)
        if self.probe.role == "broker":
            return Broker(self.world, int(name[1:]), o, o.protocol_of(name), self.store)
        if self.probe.role == "consumer":
            spec = next(c for c in o.consumers if c.name == name)
            topic = next(t for t in o.topics if t.name == spec.topic)
            return Consumer(self.world, spec, topic, o.protocol_of(name))
        spec = next(p for p in o.producers if p.name == name)
        topic = next(t for t in o.topics if t.name == spec.topic)
        return Producer(self.world, spec, topic, o.protocol_of(name),
                        1 + [p.name for p in o.producers].index(name))

    def _peer_names(self) -> list[str]:
        o = self.options
        names = [f"b{i}" for i in range(1, o.cluster.brokers + 1)]
        names += [f"c{i}" for i in range(1, o.cluster.controllers + 1)]
        names += [c.name for c in o.producers + o.consumers]
        names += [s.src for s in self.probe.steps if s.src]  # a wait step has no sender
        # an admin's KIP-853 request is a message, answered to `admin` (`wire_voters`)
        messages = {s.src for s in self.probe.steps if s.kind in ADMIN_VOTER_KINDS}
        out = []
        for n in names:
            if n not in (self.probe.node, *PSEUDO_SENDERS) or n in messages:
                if n not in out:
                    out.append(n)
        return out

    def _on_event(self, ev: dict) -> None:
        if ev["node"] == self.probe.node:
            self.events.append(ev)

    # -- what the node sent ----------------------------------------------------------------
    def _record_sends(self) -> None:
        """Keep every message the node sends, at the moment it sends it: an answer the probe
        writes names the node's last request even while that request is still on the wire
        (a follower's first Fetch goes out at time 0, as the first step is delivered)."""
        send = self.node.send

        def recorded(dst: str, kind: str, body):
            self.node_sent.append((dst, kind, body))
            return send(dst, kind, body)
        self.node.send = recorded

    def _record_fetcher_adds(self) -> None:
        """Keep every partition a broker (re)adds to its fetchers (Kafka's
        `removeFetcherForPartitions` then `addFetcherForPartitions`), with the leader it fetches
        from: whether a change restarts the fetcher is what some tests assert."""
        add = getattr(self.node, "add_to_fetcher", None)
        if add is None:
            return

        def recorded(tp: str, leader: int, *args, **kwargs):
            self.fetcher_adds.append((tp, leader))
            return add(tp, leader, *args, **kwargs)
        self.node.add_to_fetcher = recorded

    def last_request(self, peer: str, kind: str):
        """The body of the node's last `kind` message to `peer`, sent or delivered, or None."""
        for dst, sent_kind, body in reversed(self.node_sent):
            if dst == peer and sent_kind == kind:
                return body
        return None

    def preset_corr(self, peer: str, kind: str) -> int | None:
        """A producer's batches set in flight to `peer` by the starting state: their request's
        correlation id (the lowest, when several); for Metadata, the request a client's state
        put in flight there."""
        if self.probe.role == "broker" or not peer[1:].isdigit():
            return None
        if kind == "Metadata":  # the state's `metadata_in_flight_to`
            node = self.node
            return node.meta_inflight if node.meta_node == int(peer[1:]) else None
        if kind != "Produce" or self.probe.role != "producer":
            return None
        held = self.node.inflight.get(int(peer[1:]), {})
        return min(held) if held else None

    # -- running ---------------------------------------------------------------------------
    def prepare(self) -> None:
        """Start the node and give it the probe's starting state (FieldProblem when the node
        cannot take it)."""
        self.node.start() if self.probe.role == "broker" else None
        setter = {"broker": set_broker, "producer": set_producer, "consumer": set_consumer,
                  "controller": set_controller, "zk_controller": set_zk_controller,
                  "voter": set_voter}[self.probe.role]
        setter(self.node, self.probe.state, self.ctx)
        if self.probe.role == "producer":
            self.node.run_send_loop()  # its Sender thread runs, as Kafka's would

    def run(self) -> ProbeOutcome:
        self.prepare()
        self.kernel.call_later(0, self._step, 0)
        self.outcome.run = self.kernel.run()
        return self.outcome

    def _step(self, i: int) -> None:
        if i >= len(self.probe.steps):
            return
        step = self.probe.steps[i]
        self.ctx.src = step.src
        kind = KINDS.get(step.kind)  # None: a wait step, which delivers nothing
        body = kind.build(step.fields, self.ctx) if kind is not None else None
        start = self.kernel.now_us
        marks = {name: len(p.inbox) for name, p in self.peers.items()}
        # a consumer's first step also sees what it did as its state was set (its first
        # requests reach the peers during the step; an exception it surfaced is an event)
        first = i == 0 and self.probe.role == "consumer"
        seen_before = 0 if first else len(self.events), len(self.fetcher_adds)
        fields = {"step": i, "deliver": step.kind, "from": step.src, "to": self.probe.node,
                  "body": _brief(body)}
        asked = ANSWERS.get(step.kind)
        if asked and self.last_request(step.src, asked) is None \
                and self.preset_corr(step.src, asked) is None:
            fields["unsolicited"] = True  # the node asked the sender nothing: it may ignore it
        self.world.trace.emit(start, "harness", V.PROBE_STEP, fields)
        if kind is None:
            pass  # time passes, the node's own timers running
        elif kind.act is not None and self.probe.role not in kind.message_to:
            # an act's answer, if it has one (an admin request's), is the step's answer
            self.act_answer = kind.act(self.node, step.src, step.fields)
        else:
            self.peers[step.src].send(self.probe.node, kind.wire_kind or step.kind, body)
        self.kernel.call_later(step.wait_ms * 1000, self._judge, i, marks, seen_before, start)

    def _judge(self, i: int, marks: dict, seen_before: tuple, start_us: int) -> None:
        step = self.probe.steps[i]
        self.step_starts.append(start_us)
        seen = observe.Seen(self.node, events=self.events[seen_before[0]:],
                            step_starts=tuple(self.step_starts),
                            fetcher_added=self.fetcher_adds[seen_before[1]:])
        arrived = sorted((t, msg.mid, name, msg) for name, p in self.peers.items()
                         for t, msg in p.inbox[marks[name]:])
        seen.answer, self.act_answer = self.act_answer, None
        for _t, _mid, name, msg in arrived:
            seen.sent.append((name, msg.kind, msg.body))
            if seen.answer is None and _is_answer(step, name, msg.kind):
                seen.answer = msg.body
        for key, raw in step.expect:
            kafka = observe.expected(self.probe.role, key, raw)
            model = observe.value(self.probe.role, key, seen)
            row = {"step": i, "check": key, "kafka": kafka, "model": model, "agree": kafka == model}
            self.outcome.checks.append(row)
            self.world.trace.emit(self.kernel.now_us, "harness", V.PROBE_CHECK, row)
        self._step(i + 1)


def _is_answer(step, dst: str, kind: str) -> bool:
    """Whether a message the node sent to `dst` is the answer the step's checks read: its
    answer to the step's message, or with `answer_to` its first answer to that node."""
    if step.answer_to:
        return dst == step.answer_to and kind.endswith("Response")
    return dst == step.src and kind == step.kind + "Response"


def _brief(body) -> dict:
    if body is None:  # an act on the node, or a wait step: not a message
        return {}
    if isinstance(body, dict):  # the application's call: its fields
        return body
    brief = getattr(body, "brief", None)
    return brief() if brief is not None else {"corr": body.corr}


def run_probe(options, probe: Probe, seed: int, trace) -> ProbeOutcome:
    return ProbeRun(options, probe, seed, trace).run()


def check_probe_state(options, probe: Probe) -> None:
    """Build the node with its starting state as a run would, and run nothing, so that a
    state the node cannot take (a HW outside its log, a batch of another topic, ...) raises
    FieldProblem when the scenario loads, not in the middle of its run; so are a consumer's
    application calls (`wire_app.check_app_steps`) and a producer's sends
    (`check_producer_steps`)."""
    probe_run = ProbeRun(options, probe, 0, Trace({}))
    probe_run.prepare()
    if probe.role == "consumer":
        check_app_steps(probe.steps, probe_run.node.assigned, probe_run.node.tps,
                        probe_run.node.protocol, lambda i: f"probe.steps[{i}]",
                        probe_run.node.polls_when_told)
    if probe.role == "producer":
        check_producer_steps(probe.steps, probe_run.node, lambda i: f"probe.steps[{i}]")
