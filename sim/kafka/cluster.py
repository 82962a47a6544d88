"""Build one simulated Kafka cluster from resolved scenario options, and run it.

Contract: `Cluster(options, steps, seed, trace)` wires kernel, network, store, controllers,
brokers and clients into a `World`, each node on its own profile's switches
(`Options.protocol_of`; controllers on the run's), records the inter-broker protocol version
in the store, creates the scenario's topics, and arms the nemesis with
the fault schedule (each action's `apply` from `sim.kafka.faults`, bound to this cluster).
The actions reach the cluster through `brokers`, `store`, `world`, `kernel` and
`active_controller()`. Role targets resolve when a step fires: "controller" (the active one), "leader:<tp>", "follower:<tp>".
`run()` returns the kernel's outcome after recording the `end` event.
"""

from __future__ import annotations

from sim.core import netquery
from sim.core.actor import Actor
from sim.core.faults import Nemesis
from sim.core.kernel import Kernel
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.world import World
from sim.kafka import vocab as V
from sim.kafka.broker import Broker
from sim.kafka.controller import Controller
from sim.kafka.faults import UNDO_ACTIONS, UNDO_OF, handlers
from sim.kafka.options import LinkOptions, NetworkOptions, Options
from sim.kafka.producer import Producer
from sim.kafka.store import Store


def link_spec(spec: NetworkOptions | LinkOptions) -> LinkSpec:
    return LinkSpec(latency=spec.latency, jitter_us=int(spec.jitter_ms * 1000),
                    drop=float(spec.drop), duplicate=float(spec.duplicate))


def _newest(controllers):
    """Of KRaft controllers, the one of the highest quorum epoch (None if none)."""
    return max(controllers, key=lambda c: (c.quorum_epoch, c.name), default=None)


class Cluster:
    def __init__(self, options: Options, steps: list, seed: int, trace, kernel: Kernel | None = None):
        self.options = options
        run = options.run
        self.protocol = options.protocol
        # `kernel`: another scheduler for the run (a live run's is paced by the wall clock)
        self.kernel = kernel or Kernel(run.duration_ms * 1000, run.max_events)
        network = Network(link_spec(options.network), options.network.partition)
        self.world = World(self.kernel, trace, Streams(seed), network)
        self.world.options = options
        self.world.wire_batches = {}  # batch id -> a real client's bytes (sim.kafka.wire)
        self.store = Store(ibp_profile=options.ibp, ibp=options.ibp_protocol(options.ibp))
        Actor("zk", self.world)  # the metadata store's place on the network, for reachability
        if options.kraft:
            self._kraft_nodes(options)
        else:
            self.controllers = [Controller(self.world, f"c{i}", options, self.protocol, self.store)
                                for i in range(1, options.cluster.controllers + 1)]
            self.brokers = {i: Broker(self.world, i, options, options.protocol_of(f"b{i}"),
                                      self.store) for i in range(1, options.cluster.brokers + 1)}
        for t in options.topics:
            self.store.create_topic(t.name, t.assignment, t.message_format,
                                    t.retention_ms, t.segment_ms)
        topics = {t.name: t for t in options.topics}
        self.clients = [self._producer(p, topics[p.topic], i)
                        for i, p in enumerate(options.producers, start=1)]
        self.clients += self._consumers(topics)
        for link in options.network.links:
            self.world.network.set_link(link.src, link.dst, link_spec(link))
        self.nemesis = Nemesis(self.world, steps, handlers(self), self.resolve, UNDO_ACTIONS,
                               UNDO_OF)

    def _producer(self, spec, topic, index: int):
        protocol = self.options.protocol_of(spec.name)
        if spec.client == "aiokafka":  # imported only when asked for: it loads the library
            from sim.kafka.wire.aioproducer import AiokafkaProducer
            return AiokafkaProducer(self.world, spec, topic, protocol, index)
        return Producer(self.world, spec, topic, protocol, index)

    def _kraft_nodes(self, options: Options) -> None:
        """KRaft mode: the controllers are the quorum's voters, the brokers its observers; the
        store keeps only the scenario's topic configs (and the IBP, read as metadata.version)."""
        from sim.kafka.kraft_broker import KraftBroker
        from sim.kafka.kraft_controller import KraftController
        voters = [f"c{i}" for i in range(1, options.cluster.controllers + 1)]
        # KIP-853: a cluster formatted with c1..cN; the other controllers start as observers
        formatted = voters[:options.cluster.initial_controllers or len(voters)]
        self.controllers = [KraftController(self.world, v, options, self.protocol, self.store,
                                            list(formatted)) for v in voters]
        self.brokers = {i: KraftBroker(self.world, i, options, options.protocol_of(f"b{i}"),
                                       self.store, voters)
                        for i in range(1, options.cluster.brokers + 1)}

    def _consumers(self, topics: dict) -> list:
        if not self.options.consumers:
            return []
        from sim.kafka.consumer import Consumer
        out = []
        for c in self.options.consumers:
            protocol = self.options.protocol_of(c.name)
            if c.client == "aiokafka":  # imported only when asked for: it loads the library
                from sim.kafka.wire.aioconsumer import AiokafkaConsumer
                out.append(AiokafkaConsumer(self.world, c, topics[c.topic], protocol))
            else:
                out.append(Consumer(self.world, c, topics[c.topic], protocol))
        return out

    # -- targets -------------------------------------------------------------------------
    def active_controller(self) -> Controller | None:
        """The live active controller (ZooKeeper: the one the store names; KRaft: of those
        that think they are active, the one of the highest quorum epoch, since before
        check-quorum a leader cut from the other voters keeps believing it)."""
        if not self.options.kraft:
            return next((c for c in self.controllers
                         if c.alive and c.active and c.name == self.store.active), None)
        return _newest(c for c in self.controllers if c.alive and c.active)

    def resolve(self, target: str) -> str | None:
        if target == "controller":
            if self.options.kraft:
                active = self.active_controller()
                return active.name if active is not None else None
            return self.store.active
        role, _, tp = target.partition(":")
        if role in ("leader", "follower") and tp:
            st = self._partition_truth(tp)
            if st is None:
                return None
            if role == "leader":
                return f"b{st.leader}" if st.leader >= 0 else None
            followers = [r for r in st.replicas if r != st.leader]
            return f"b{followers[0]}" if followers else None
        return target

    def _partition_truth(self, tp: str):
        """A partition's state as the controller knows it (KRaft: the active controller's
        image; None without an active controller)."""
        if self.options.kraft:
            active = self.active_controller()
            return active.image.parts.get(tp) if active is not None else None
        found = self.store.partition(tp)
        return found[1] if found is not None else None

    def partition_states(self) -> list:
        """Every partition's state as the controller knows it, in partition order (KRaft: the
        active controller's image, none without an active controller)."""
        if self.options.kraft:
            active = self.active_controller()
            parts = active.image.parts if active is not None else {}
            return [parts[tp] for tp in sorted(parts)]
        return [self.store.partition(tp)[1] for tp in self.store.all_tps()]

    def under_replicated(self) -> int | None:
        """How many partitions have a replica outside the ISR, as the controller knows them
        (what an operator reads as UnderReplicatedPartitions); None without an active
        controller, when nobody can tell."""
        if self.active_controller() is None:
            return None
        return sum(1 for st in self.partition_states() if set(st.isr) != set(st.replicas))

    def _undelivered_control(self, end_t: int, live: set) -> list[list[str]]:
        """The [controller, broker] links on which a controller's message to a live broker has
        not arrived by `end_t`: due after it, stalled on a cut, or kept by a `hold` rule."""
        network = self.world.network
        srcs = [c.name for c in self.controllers]
        pairs = {tuple(p) for p in network.due_after(end_t, srcs) + netquery.kept_from(network, srcs)}
        return [list(p) for p in sorted(pairs) if p[1] in live]

    def _metadata_reach(self, end_t: int, live: set) -> dict:
        """KRaft: the live quorum leader of the highest epoch (two may think they lead, before
        check-quorum), and for each live broker whether it reaches that leader both ways and
        whether `slow_metadata` slows it; `slowed`: a delay or reorder rule in force."""
        network = self.world.network
        leader = _newest(c for c in self.controllers if c.alive and c.role == "leader")
        brokers = [[b.name, leader is not None and netquery.open_both_ways(network, b.name, leader.name),
                    b.metadata_delay_us > 0]
                   for _id, b in sorted(self.brokers.items()) if b.name in live]
        return {"leader": leader.name if leader else None,
                "epoch": leader.quorum_epoch if leader else 0,
                "brokers": brokers, "slowed": netquery.slowed(network, end_t)}

    # -- running -------------------------------------------------------------------------
    def run(self):
        self.nemesis.start()
        outcome = self.world.run()
        settled = outcome.stopped_by in ("until", "idle")  # not cut short by a bound
        end_t = outcome.end_us if outcome.stopped_by != "until" else self.kernel.until_us
        unhealed = self.world.network.unhealed(end_t)
        if unhealed:  # liveness rules judge only a healed network (invariants/recovery.py)
            self.world.trace.emit(end_t, "harness", V.UNHEALED, unhealed)
        live = {b.name for b in self.brokers.values() if self.world.is_alive(b.name)}
        late = self._undelivered_control(end_t, live)
        if late:  # stray_replica judges only once the controller's requests have arrived
            self.world.trace.emit(end_t, "harness", V.UNSETTLED, {"links": late})
        if self.options.kraft:  # broker_metadata_stalled judges the brokers that reach it
            self.world.trace.emit(end_t, "harness", V.METADATA_REACH, self._metadata_reach(end_t, live))
        self.world.trace.emit(end_t, "harness", V.END, {"end_us": outcome.end_us, "events": outcome.events,
                                                        "stopped_by": outcome.stopped_by, "settled": settled})
        return outcome
