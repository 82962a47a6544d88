"""Controller actor: ZooKeeper-mode controller with a controller epoch and failover.

Contract: at most one controller may write the store at a time (it must be the store's active
controller at its own controller epoch and reach "zk"); its election, failover and resignation
are `ElectionOps`' (`sim.kafka.controller_election`). A zombie that lost its session can still have requests in
flight; brokers fence them with STALE_CONTROLLER_EPOCH (ref §1.4.1). Leader epochs are bumped
only here (ref §1.4: elections, controller-initiated ISR removal, reassignment); AlterPartition
never bumps them. Control requests are retried until answered while the broker is alive.
Operations (elections, broker changes, topic and partition creation) live in `ControllerOps`,
reassignment in `ReassignmentOps`, topic deletion in `TopicDeletionOps`, failed log
directories in `LogDirFailureOps`, the automatic preferred-leader rebalance in `RebalanceOps`.
UpdateMetadata names each partition's offline replicas from IBP 1.0 (`metadata_state_of`).
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.controller_deletion import TopicDeletionOps
from sim.kafka.controller_elect_leaders import ElectLeadersOps
from sim.kafka.controller_election import CONTROLLER_EVENTS, TICK_US, ElectionOps
from sim.kafka.controller_log_dirs import LogDirFailureOps
from sim.kafka.controller_ops import ControllerOps
from sim.kafka.controller_reassign import ReassignmentOps
from sim.kafka.controller_rebalance import RebalanceOps
from sim.kafka.defaults import release_default
from sim.kafka.messages import (
    AlterPartitionResponse,
    ControlledShutdownResponse,
    LeaderAndIsr,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from sim.kafka.options import Options
from sim.kafka.rules import rules_for
from sim.kafka.rules.inter_broker import (
    control_carries_broker_epoch,
    update_metadata_carries_offline_replicas,
)

ZK_NOTIFICATIONS = ("BrokerChange", "TopicChange", "PartitionModifications",
                    "PreferredReplicaElection", "PartitionReassignment", "TopicDeletion")


class Controller(ElectionOps, ControllerOps, ReassignmentOps, TopicDeletionOps, LogDirFailureOps,
                 RebalanceOps, ElectLeadersOps, Actor):
    def __init__(self, world, name: str, options: Options, protocol, store):
        super().__init__(name, world)
        self.cluster = options.cluster
        # the format of a topic created without one: the brokers' default on the run's release
        self.created_format = release_default("topics", "message_format", options.profile)
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.store = store
        self.active = False
        self.controller_epoch = -1
        self.last_renew_us = 0
        self.live: dict[int, int] = {}  # broker id -> broker epoch
        self.shutting_down: set[int] = set()  # asked for a controlled shutdown, not yet gone
        self.outstanding: dict[int, tuple] = {}
        self.corr = 0
        self.dirty: list[str] = []
        self.init_offline_replicas()

    def start(self) -> None:
        self.set_timer(0, "tick")

    def on_crash(self) -> None:
        self.active = False
        self.outstanding = {}
        self.dirty = []
        self.shutting_down = set()  # memory only: lost with the process
        self.init_offline_replicas()

    # -- sessions and failover -----------------------------------------------------------
    def on_timer(self, name: str, data) -> None:
        if name == "tick":
            self._tick()
            self.set_timer(TICK_US, "tick")
        elif name == "retry":
            self._retry(data)
        elif name == "auto_rebalance":
            self.on_auto_rebalance(data)

    def check_brokers(self) -> None:
        """`processBrokerChange` (2.2.0-3.7.0) over ZooKeeper's registrations: new brokers
        start first, then bounced ones (registered again, a newer broker epoch) fail and start,
        then the dead ones fail, each step seeing the brokers of the steps before it live."""
        current = self._registered_live()
        new = sorted(b for b in current if b not in self.live)
        bounced = sorted(b for b in current if b in self.live and current[b] != self.live[b])
        dead = sorted(b for b in self.live if b not in current)
        if new:
            self.live.update({b: current[b] for b in new})
            self.on_brokers_startup(new)
        if bounced:
            self._remove_live(bounced)
            self.live.update({b: current[b] for b in bounced})
            self.on_brokers_startup(bounced)
        if dead:
            self._remove_live(dead)

    def _remove_live(self, brokers: list[int]) -> None:
        """`removeLiveBrokers` and `onBrokerFailure` (which forgets their controlled shutdown)."""
        for b in brokers:
            del self.live[b]
            self.shutting_down.discard(b)
        self.on_brokers_failure(brokers)

    # -- sending -------------------------------------------------------------------------
    def _send_control(self, broker: int, kind: str, make) -> None:
        self.corr += 1
        body = make(self.corr)
        self.outstanding[self.corr] = (broker, kind, body)
        self.send(f"b{broker}", kind, body)
        self.set_timer(self.cluster.controller_request_retry_ms * 1000, "retry", self.corr)

    def _retry(self, corr: int) -> None:
        """An unanswered control request is due again: `RequestSendThread` closes the
        connection of a failed send and sends it again. Kafka's channel sends a broker one
        request at a time, in order, so it never sends old state after newer; the model's sends
        several, so a LeaderAndIsr or an UpdateMetadata goes again with its partitions'
        *current* state, as a new request. A stale LeaderAndIsr would resurrect replicas
        deleted since; a stale UpdateMetadata, arriving after a newer one, would take the
        broker's metadata cache back (a ZooKeeper-mode broker applies it wholesale)."""
        entry = self.outstanding.get(corr)
        if entry is None or not self.active:
            return
        broker, kind, body = entry
        if broker not in self.live:
            del self.outstanding[corr]
            return
        self.reset_connection(f"b{broker}")
        if kind == "LeaderAndIsr":
            del self.outstanding[corr]
            tps = [p.tp for p in body.partitions if self.store.partition(p.tp) is not None
                   and broker in self.store.partition(p.tp)[1].replicas]
            if tps:
                self.send_leader_and_isr(broker, tps)
            return
        if kind == "UpdateMetadata":
            del self.outstanding[corr]
            self.send_update_metadata([p.tp for p in body.partitions
                                       if self.store.partition(p.tp) is not None],
                                      body.deleted, [broker])
            return
        self.send(f"b{broker}", kind, body)
        self.set_timer(self.cluster.controller_request_retry_ms * 1000, "retry", corr)

    def state_of(self, tp: str) -> PartitionState:
        """`tp`'s state as ZooKeeper holds it, a topic queued for deletion's too."""
        topic, st = self.store.partition(tp) or self.deleted_partition(tp)
        return PartitionState(tp, topic.topic_id, st.leader, st.leader_epoch, st.partition_epoch,
                              st.isr, st.replicas)

    def metadata_state_of(self, tp: str, offline: bool) -> PartitionState:
        """`tp`'s state as UpdateMetadata sends it: with `offline`, its replicas that
        `isReplicaOnline` (shutting-down brokers not counted) says are not online
        (`ControllerBrokerRequestBatch.addUpdateMetadataRequestForBrokers` at 3.7.0)."""
        state = self.state_of(tp)
        if not offline:
            return state
        online = self._election_live(tp, state.replicas, False)
        return state._replace(offline_replicas=tuple(r for r in state.replicas if r not in online))

    def broker_epoch_of(self, broker: int) -> int:
        """The broker epoch a control request to `broker` carries: the one this controller
        knows, from IBP 2.2 (KIP-380); -1, absent, before."""
        if not control_carries_broker_epoch(self.protocol, self.store.ibp):
            return -1
        return self.live.get(broker, -1)

    def send_leader_and_isr(self, broker: int, tps: list[str], full: bool = False) -> None:
        states = tuple(self.state_of(tp) for tp in tps)
        epoch = self.broker_epoch_of(broker)
        self._send_control(broker, "LeaderAndIsr", lambda corr: LeaderAndIsr(
            self.name, self.controller_epoch, epoch, corr, states, full))

    def send_assignments(self, broker: int) -> None:
        """LeaderAndIsr for every partition assigned to `broker` (on its startup and on a
        controller failover), and its `OnlineReplica` replicas of topics queued for deletion
        (`deleted_online_on`). With `full_leader_and_isr` it is a FULL request (KIP-516 Type
        2), sent even when empty, from which the broker removes its stray logs."""
        mine = [tp for tp in self.store.all_tps() if broker in self.store.partition(tp)[1].replicas]
        mine += self.deleted_online_on(broker)
        full = self.protocol.full_leader_and_isr
        if mine or full:
            self.send_leader_and_isr(broker, mine, full)

    def send_update_metadata(self, tps: list[str], deleted: tuple = (),
                             brokers: list[int] | None = None) -> None:
        """UpdateMetadata with the current state of `tps` (and the `deleted` partitions) to
        `brokers`, by default every live one."""
        offline = update_metadata_carries_offline_replicas(self.protocol, self.store.ibp)
        states = tuple(self.metadata_state_of(tp, offline) for tp in tps)
        alive = tuple(sorted(self.live))
        formats = tuple((name, t.message_format) for name, t in sorted(self.store.topics.items()))
        for broker in sorted(self.live) if brokers is None else brokers:
            self._send_control(broker, "UpdateMetadata", lambda corr, b=broker: UpdateMetadata(
                self.name, self.controller_epoch, corr, states, alive, deleted, formats,
                self.broker_epoch_of(b)))

    def send_stop_replica(self, broker: int, parts: tuple) -> None:
        epoch = self.broker_epoch_of(broker)
        self._send_control(broker, "StopReplica", lambda corr: StopReplica(
            self.name, self.controller_epoch, epoch, corr, parts))

    def send_full_state(self, brokers: list[int]) -> None:
        """`onControllerFailover`'s first requests: UpdateMetadata to every live broker, so
        that each knows the live brokers before it handles a LeaderAndIsr (`makeFollowers`
        leaves a partition alone whose leader its cache does not list alive): every
        partition's state before 2.2, none from 2.2 (`sendUpdateMetadataRequest(..., Set.empty)`
        once an empty set meant none, KAFKA-7537; read at 0.10.2.0, 2.1.0, 2.2.0 and 3.7.0).
        Then `ReplicaStateMachine.startup`'s: LeaderAndIsr of its partitions to each of
        `brokers`, and UpdateMetadata of every partition to every live broker."""
        first = [] if self.protocol.startup_metadata_to_new_brokers_only else self.store.all_tps()
        self.send_update_metadata(first, deleted=self.deleting_tps() if first else ())
        for b in brokers:
            self.send_assignments(b)
        self.send_update_metadata(self.store.all_tps(), deleted=self.deleting_tps())

    def flush(self, leader_and_isr: bool = True, without: int | None = None) -> None:
        """Propagate partitions changed since the last flush: LeaderAndIsr to their replicas
        but `without` (the replica `OfflineReplica` took out), then UpdateMetadata to all."""
        tps, self.dirty = sorted(set(self.dirty)), []
        if not tps:
            return
        if leader_and_isr:
            for b in sorted(b for b in self.live if b != without):
                # not to a replica in a failed log directory (`isReplicaOnline`)
                mine = [tp for tp in tps if b in self.store.partition(tp)[1].replicas
                        and self.replica_online(b, tp)]
                if mine:
                    self.send_leader_and_isr(b, mine)
        self.send_update_metadata(tps)

    # -- messages ------------------------------------------------------------------------
    def on_message(self, msg) -> None:
        if msg.kind == "AlterPartition":
            self.on_alter_partition(msg)
        elif msg.kind == "ControlledShutdown":
            self.on_controlled_shutdown(msg)
        elif msg.kind == "ElectLeaders":  # a broker hands over an admin's request
            self.on_elect_leaders(msg)
        elif msg.kind in CONTROLLER_EVENTS:
            self.on_controller_event(msg.kind)
        elif msg.kind in ZK_NOTIFICATIONS and self.fenced_write(msg.kind, msg.body):
            self.sends_before_fenced_write(msg.kind, msg.body)
            self.maybe_resign()  # ControllerMovedException: `KafkaController.process`
        elif msg.kind in ZK_NOTIFICATIONS and self._can_write():
            self.on_zk_notification(msg.kind, msg.body)
        elif msg.kind.endswith("Response"):
            entry = self.outstanding.pop(msg.body.corr, None)
            if entry is not None and msg.kind == "StopReplicaResponse":
                self.on_stop_replica_response(entry[0], entry[2], msg.body)
            elif entry is not None and msg.kind == "LeaderAndIsrResponse":
                self.on_leader_and_isr_response(entry[0], entry[2], msg.body)

    def on_zk_notification(self, kind: str, body) -> None:
        """A ZooKeeper watch fired (a probe's step; a run's controller reads the store every
        tick instead): registered brokers changed, a topic was created or its assignment
        rewritten, partitions were named for a preferred leader election or for a
        reassignment, or topics for deletion."""
        if kind == "BrokerChange":
            self.check_brokers()
        elif kind == "TopicChange" and body.topic not in self.store.topics:
            a = body.assignment
            self.create_topic(body.topic, len(a), len(a[0]), self.created_format,
                              [list(r) for r in a])
        elif kind == "PartitionModifications":
            self.add_partitions(body.topic, [list(r) for r in body.assignment])
        elif kind == "PreferredReplicaElection":
            self.preferred_election(list(body.partitions))
        elif kind == "PartitionReassignment":
            for tp, target in body.reassignments:
                self.reassign(tp, list(target))
        elif kind == "TopicDeletion":
            self.on_topic_deletion_notification(body.topics)

    def on_controlled_shutdown(self, msg) -> None:
        """`KafkaApis.handleControlledShutdownRequest`: the controller's `controlled_shutdown`,
        answered with the refusal's error, or with the partitions the broker still leads."""
        req = msg.body
        error = self.controlled_shutdown_error(req.broker, req.broker_epoch)
        if error == E.NONE:
            self.controlled_shutdown(req.broker, req.broker_epoch)
        remaining = tuple(self.leads_after_shutdown(req.broker)) if error == E.NONE else ()
        self.send(msg.src, "ControlledShutdownResponse",
                  ControlledShutdownResponse(req.corr, error, remaining))

    def on_alter_partition(self, msg) -> None:
        """KIP-497 AlterPartition, validated as in ref §1.4 (never bumps the leader epoch), in
        KafkaController.processAlterPartition's order (`zk_alter_partition_error`). A request
        that asks for the state the partition already has (same leader, leader epoch and ISR)
        is answered with that state: it is a retry whose first answer was lost
        (`LeaderAndIsr.equalsAllowStalePartitionEpoch`; before AlterPartition, the leader's own
        conditional ZK write took a write of equal data as its own the same way)."""
        req = msg.body
        writable = self._can_write()
        found = self.store.partition(req.tp) if writable else None
        st = found[1] if found else None
        isr = tuple(r for r in req.isr if r in st.replicas) if st else ()
        already = False
        if not writable:
            error = E.NOT_CONTROLLER
        elif self.rules.zk_alter_partition_epoch_stale(req.broker_epoch, self.live.get(req.broker)):
            error = E.STALE_BROKER_EPOCH
        elif (error := self.rules.alter_partition_topic_error(
                self.protocol, req.topic_id, self.store.topic_id(req.tp), st is not None)):
            st = None
        else:
            # KIP-841's eligibility: `isr -- liveBrokerIds`, which leaves out those shutting down
            ineligible = any(r not in self.live or r in self.shutting_down for r in isr)
            error, already = self.rules.zk_alter_partition_error(
                self.protocol, req.broker, req.leader_epoch, req.partition_epoch, isr, st,
                ineligible)
        fields = {"tp": req.tp, "from": req.broker, "leader_epoch": req.leader_epoch,
                  "partition_epoch": req.partition_epoch, "isr": list(req.isr), "error": error}
        self.emit(V.ALTER_PARTITION, {**fields, "already": True} if already else fields)
        if error == E.NONE and not already:
            self.change(req.tp, "alter_partition", isr=isr, bump_epoch=False)
            self.flush(leader_and_isr=False)
            self.check_reassignments([req.tp])  # the ISR change watch of a reassigning partition
        elif writable and error != E.STALE_BROKER_EPOCH and req.broker_epoch != -1:
            # a request past the whole-request checks sends UpdateMetadata for its partitions,
            # whatever became of them, to every live or shutting-down broker (an unknown one
            # adds none): `processUpdateNotifications` at 2.7.0, `sendUpdateMetadataRequest`
            # in `processAlterPartition` at 3.7.0. (The stand-in for a pre-2.7 leader's own
            # ZooKeeper write, broker epoch -1, notifies the controller only of a write.)
            self.send_update_metadata([req.tp] if st is not None else [])
        if error == E.NONE:
            resp = AlterPartitionResponse(req.corr, req.tp, E.NONE, st.leader_epoch, st.partition_epoch, st.isr)
        else:
            resp = AlterPartitionResponse(req.corr, req.tp, error, -1, -1, ())
        self.send(msg.src, "AlterPartitionResponse", resp)
