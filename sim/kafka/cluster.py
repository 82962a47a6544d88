"""Build one simulated Kafka cluster from resolved scenario options, and run it.

Contract: `Cluster(options, steps, seed, trace)` wires kernel, network, store, controllers,
brokers and clients into a `World`, creates the scenario's topics, and arms the nemesis with
the fault schedule (core network/crash actions plus the Kafka actions below). Role targets
resolve when a step fires: "controller" (the active one), "leader:<tp>", "follower:<tp>".
`run()` returns the kernel's outcome after recording the `end` event.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.core.faults import Nemesis, network_handlers
from sim.core.kernel import Kernel
from sim.core.latency import LatencyDist
from sim.core.network import LinkSpec, Network
from sim.core.rng import Streams
from sim.core.world import World
from sim.kafka import vocab as V
from sim.kafka.broker import Broker
from sim.kafka.controller import Controller
from sim.kafka.producer import Producer
from sim.kafka.profiles import Protocol
from sim.kafka.store import Store

CONTROLLED_SHUTDOWN_US = 500_000


def link_spec(spec: dict) -> LinkSpec:
    return LinkSpec(latency=LatencyDist.parse(spec["latency"]),
                    jitter_us=int(spec.get("jitter_ms", 0) * 1000),
                    drop=float(spec.get("drop", 0.0)), duplicate=float(spec.get("duplicate", 0.0)))


class Cluster:
    def __init__(self, options: dict, steps: list, seed: int, trace):
        self.options = options
        run = options["run"]
        proto = {k: v for k, v in options["protocol"].items() if k != "profile"}
        self.protocol = Protocol(**proto)
        self.kernel = Kernel(run["duration_ms"] * 1000, run["max_events"])
        network = Network(link_spec(options["network"]), options["network"].get("partition", "drop"))
        self.world = World(self.kernel, trace, Streams(seed), network)
        self.world.options = options
        self.store = Store()
        Actor("zk", self.world)  # the metadata store's place on the network, for reachability
        self.controllers = [Controller(self.world, f"c{i}", options, self.protocol, self.store)
                            for i in range(1, options["cluster"]["controllers"] + 1)]
        self.brokers = {i: Broker(self.world, i, options, self.protocol, self.store)
                        for i in range(1, options["cluster"]["brokers"] + 1)}
        for t in options["topics"]:
            self.store.create_topic(t["name"], t["assignment"], t["message_format"],
                                    t["retention_ms"], t["segment_ms"])
        topics = {t["name"]: t for t in options["topics"]}
        self.clients = [Producer(self.world, p, topics[p["topic"]], self.protocol, i)
                        for i, p in enumerate(options["producers"], start=1)]
        self.clients += self._consumers(topics)
        for link in options["network"].get("links", []):
            self.world.network.set_link(link["src"], link["dst"], link_spec(link))
        self.nemesis = Nemesis(self.world, steps, self._handlers(), self.resolve)

    def _consumers(self, topics: dict) -> list:
        if not self.options.get("consumers"):
            return []
        from sim.kafka.consumer import Consumer
        return [Consumer(self.world, c, topics[c["topic"]], self.protocol)
                for c in self.options["consumers"]]

    # -- targets -------------------------------------------------------------------------
    def active_controller(self) -> Controller | None:
        for c in self.controllers:
            if c.alive and c.active and c.name == self.store.active:
                return c
        return None

    def resolve(self, target: str) -> str | None:
        if target == "controller":
            return self.store.active
        role, _, tp = target.partition(":")
        if role in ("leader", "follower") and tp:
            found = self.store.partition(tp)
            if found is None:
                return None
            st = found[1]
            if role == "leader":
                return f"b{st.leader}" if st.leader >= 0 else None
            followers = [r for r in st.replicas if r != st.leader]
            return f"b{followers[0]}" if followers else None
        return target

    # -- Kafka fault actions -------------------------------------------------------------
    def _with_controller(self, op):
        def handler(target, params):
            controller = self.active_controller()
            if controller is None:
                return "no active controller"
            return op(controller, target, params)
        return handler

    def _handlers(self) -> dict:
        h = network_handlers(self.world)
        wc = self._with_controller
        h.update({
            "controlled_shutdown": self._controlled_shutdown,
            "power_loss": self._power_loss,
            "move_leader": wc(lambda c, t, p: c.move_leader(t, p.get("to", "next"))),
            "move_all_leaders": wc(lambda c, t, p: c.move_all_leaders(int(t[1:]))),
            "preferred_election": wc(lambda c, t, p: c.preferred_election(
                [t] if t else self.store.all_tps())),
            "reassign": wc(lambda c, t, p: c.reassign(t, list(p["replicas"]))),
            "cancel_reassignment": wc(lambda c, t, p: c.cancel_reassignment(t)),
            "delete_topic": wc(lambda c, t, p: c.delete_topic(t)),
            "create_topic": wc(lambda c, t, p: c.create_topic(
                p["name"], p.get("partitions", 1), p.get("replication_factor", 1),
                p.get("message_format", 2))),
            "upgrade_format": wc(self._upgrade_format),
            "retention": self._retention,
        })
        return h

    def _controlled_shutdown(self, target, params):
        broker = self.brokers[int(target[1:])]
        if broker.alive:
            broker.shutting_down = True  # the broker asked to shut down; a restart clears it
        controller = self.active_controller()
        outcome = controller.controlled_shutdown(int(target[1:])) if controller else "no active controller"
        self.kernel.call_later(CONTROLLED_SHUTDOWN_US, broker.stop_cleanly)
        return outcome

    def _power_loss(self, target, params):
        """The broker's machine loses power: its unflushed batches go, and it is down (if it
        was already, its OS still held them in memory until now)."""
        self.brokers[int(target[1:])].lose_unflushed(int(params["unflushed_ms"] * 1000),
                                                     params.get("flush") == "writeback")
        return None if self.world.crash(target) else "already down"

    def _upgrade_format(self, controller, topic, params):
        t = self.store.topics.get(topic)
        if t is None:
            return f"no topic {topic}"
        t.message_format = params["message_format"]
        controller.send_update_metadata(self.store.all_tps())
        return None

    def _retention(self, target, params):
        """Advance logStartOffset on every replica (DeleteRecords / segment deletion)."""
        tps = [target] if self.store.partition(target) else \
            [tp for tp in self.store.all_tps() if tp.rpartition("-")[0] == target]
        if not tps:
            return f"no partition or topic {target}"
        for broker in self.brokers.values():
            if broker.alive:
                for tp in tps:
                    broker.apply_retention(tp, params.get("log_start_offset"))
        return None

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
        late = [pair for pair in self.world.network.due_after(end_t, [c.name for c in self.controllers])
                if pair[1] in live]
        if late:  # stray_replica judges only once the controller's requests have arrived
            self.world.trace.emit(end_t, "harness", V.UNSETTLED, {"links": late})
        self.world.trace.emit(end_t, "harness", V.END, {"end_us": outcome.end_us, "events": outcome.events,
                                                        "stopped_by": outcome.stopped_by, "settled": settled})
        return outcome
