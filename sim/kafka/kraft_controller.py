"""KRaft controller: one voter of the controller quorum; the active one (the quorum leader,
once its epoch's first record commits) runs the cluster by appending metadata records.

Contract: brokers register (RegisterBrokerRecord, fenced; its broker epoch the offset of the
registration's first record), heartbeat every `broker_heartbeat_interval_ms`, are unfenced
once caught up to their registration (`rules.kraft_next_broker_state`, `KraftBrokers`), and
fenced when silent for `broker_session_timeout_ms` (BrokerRegistrationChangeRecord), one at a
time, by a check scheduled for when the next session runs out. Every change of the usable
broker set is followed by the partition changes it implies (`rules.kraft_assignment_change`: elections, ISR shrinks, and a
reassignment that can then complete).
AlterPartition is validated by `rules.kraft_alter_partition_error`; its change is built like
any other, so an ISR shrink bumps the leader epoch only while `kraft_isr_shrink_bumps_epoch`
(to 3.5), and a reassignment it completes may move the leader (NEW_LEADER_ELECTED). The
active controller replays each record into its image as it appends it (`QuorumController`
does, with a snapshot to revert to); answers that report a change wait for its commit, and
fail with NOT_CONTROLLER if it loses its leadership first (`renounce`). A new
active controller rebuilds its image from its log, gives every registered broker a fresh
session, and creates the scenario's topics once their brokers are unfenced (or
a session timeout after it took over). The `partition_state` event is recorded when a
partition record commits: that is the truth brokers can learn. Operator actions are in
`KraftAdmin` (leader moves, topic deletion and creation, reassignment). `topic_deleted` is
recorded when a RemoveTopicRecord commits. AllocateProducerIds gives a registered broker of
that epoch the next block of 1000 producer ids (a ProducerIdsRecord, answered on commit).
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import errors as E
from sim.kafka import kraft_messages as K
from sim.kafka import vocab as V
from sim.kafka.kraft_admin import KraftAdmin
from sim.kafka.kraft_brokers import KraftBrokers
from sim.kafka.kraft_messages import BrokerHeartbeatResponse, BrokerRegistrationResponse
from sim.kafka.kraft_rebalance import KraftRebalance
from sim.kafka.messages import AlterPartitionResponse
from sim.kafka.metadata_image import MetadataImage, partition_record
from sim.kafka.quorum import RAFT_TICK_US, RaftQuorum
from sim.kafka.rules import kraft_admin as admin_rules
from sim.kafka.rules import producer_ids, rules_for


class KraftController(KraftAdmin, KraftBrokers, KraftRebalance, RaftQuorum, Actor):
    def __init__(self, world, name: str, options, protocol, store, voters: list[str]):
        super().__init__(name, world)
        self.cluster = options.cluster
        self.options = options
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.store = store  # the scenario's topic configs only
        self.init_raft(voters, 1 if options.cluster.initial_controllers else 0)
        # the scheduled stale-broker check's token (`reschedule_fence_check`); never reset, so
        # a check scheduled in an earlier term is never taken for a later one's
        self.fence_token = 0
        self._reset_controller()

    def _reset_controller(self) -> None:
        self.active = False
        self.image = MetadataImage()
        self.heartbeats: dict[int, int] = {}  # broker -> last contact, in the order touched
        self.heartbeat_offsets: dict[int, int] = {}  # broker -> metadata offset it last reported
        self.shutdown_offsets: dict[int, int] = {}  # broker -> its controlledShutdownOffset
        self.claimed_us = 0
        self.claim_epoch = -1  # the quorum epoch it became active in
        self.waiting: list[tuple[int, str, str, object]] = []  # (offset, dst, kind, body)
        self.reset_balance()

    @property
    def controller_epoch(self) -> int:
        return self.quorum_epoch

    def start(self) -> None:
        self.set_timer(RAFT_TICK_US, "tick")

    def on_crash(self) -> None:
        self._reset_controller()

    def on_restart(self) -> None:
        self.restart_raft()
        self.set_timer(RAFT_TICK_US, "tick")

    def on_timer(self, name: str, data) -> None:
        if name == "tick":
            self.raft_tick()
            if self.active:
                self._maybe_create_topics()
            self.set_timer(RAFT_TICK_US, "tick")
        elif name == "linger":
            self.on_linger_end(data)
        elif name == "noop":
            self._write_no_op(data)
        elif name == "balance":
            self.on_balance(data)
        elif name == "fence":
            self.on_fence_check(data)

    def _schedule_no_op(self) -> None:
        interval_ms = self.cluster.metadata_max_idle_interval_ms
        if interval_ms:
            self.set_timer(interval_ms * 1000, "noop", self.quorum_epoch)

    def _write_no_op(self, epoch: int) -> None:
        """KIP-835 (3.3+): the active controller writes a NoOpRecord every
        `metadata_max_idle_interval_ms`, the next scheduled as each is written
        (`QuorumController.maybeScheduleNextWriteNoOpRecord`), so the log's end and its high
        watermark move even when nothing changes."""
        if self.active and epoch == self.quorum_epoch:
            self._write(K.MetadataRecord.of(K.NO_OP))
            self._schedule_no_op()

    def on_message(self, msg) -> None:
        handler = self._handlers.get(msg.kind)
        if handler is not None:
            handler(self, msg)

    # -- leadership --------------------------------------------------------------------------
    def on_leadership(self, claimed: bool) -> None:
        if not claimed:
            if self.active:
                # the epoch it led in (`curClaimEpoch`): the quorum's may have moved past it
                self.emit(V.CONTROLLER_RESIGNED, {"controller_epoch": self.claim_epoch,
                                                  "reason": "quorum leadership lost"})
                self._fail_waiting()
            self._reset_controller()
            return
        self.image = MetadataImage()
        for offset, (_epoch, record) in enumerate(self.entries):
            self.image.replay(offset, record)
        self.active, self.claimed_us, self.claim_epoch = True, self.now_us, self.quorum_epoch
        self.heartbeats = {b: self.now_us for b in sorted(self.image.brokers)}
        self.heartbeat_offsets, self.shutdown_offsets = {}, {}
        self.reschedule_fence_check()
        self.emit(V.CONTROLLER_ELECTED, {"controller_epoch": self.quorum_epoch})
        self._schedule_no_op()
        self._maybe_create_topics()
        self.maybe_schedule_balance()

    def on_committed(self, entries: list) -> None:
        """Record the partitions' committed truth and send the answers that waited on it."""
        for _offset, _epoch, record in entries:
            if record.kind in (K.PARTITION, K.PARTITION_CHANGE):
                get = record.get
                # KIP-966's ELR and LastKnownElr only when the record holds some
                elr = {k: list(get(k)) for k in ("elr", "last_known_elr") if get(k)}
                self.emit(V.PARTITION_STATE, {
                    "tp": get("tp"), "topic_id": get("topic_id"), "leader": get("leader"),
                    "leader_epoch": get("leader_epoch"), "partition_epoch": get("partition_epoch"),
                    "isr": list(get("isr")), "replicas": list(get("replicas")), **elr,
                    "reason": get("reason", record.kind), "controller_epoch": self.quorum_epoch})
            elif record.kind == K.REMOVE_TOPIC:
                self.emit(V.TOPIC_DELETED, {"topic": record.get("name"),
                                            "topic_id": record.get("topic_id")})
        ready = [w for w in self.waiting if w[0] < self.hw]
        self.waiting = [w for w in self.waiting if w[0] >= self.hw]
        for _offset, dst, kind, body in ready:
            self.send(dst, kind, body)

    def _fail_waiting(self) -> None:
        """`QuorumController.renounce` (3.3.0-3.7.0): the operations still waiting for their
        records to commit fail with NOT_CONTROLLER (`deferredEventQueue.failAll`), so their
        senders try the next controller; the records themselves may yet commit, or not."""
        for _offset, dst, kind, body in self.waiting:
            self.send(dst, kind, not_controller_answer(kind, body, self.leader))
        self.waiting = []

    def _answer_when_committed(self, offset: int, dst: str, kind: str, body) -> None:
        """Answer once the record at `offset` is committed: at once if it already is (a quorum
        of one with no linger commits inside `append`, before this is called), else from
        `on_committed`."""
        if offset < self.hw:
            self.send(dst, kind, body)
        else:
            self.waiting.append((offset, dst, kind, body))

    def _written_last(self) -> int:
        """The offset whose commit an answer waits for: the last record written."""
        return self.rules.kraft_answer_offset(self.next_offset, self.end_offset)

    def _write(self, record: K.MetadataRecord) -> int:
        offset = self.append(record)
        self.image.replay(offset, record)
        if record.kind in (K.PARTITION, K.PARTITION_CHANGE):
            self.maybe_schedule_balance((record.get("tp"),))
        return offset

    def _change_broker(self, broker: int, reg, **fields) -> int:
        """Write a BrokerRegistrationChangeRecord for `broker`'s registration `reg`."""
        return self._write(K.MetadataRecord.of(K.BROKER_CHANGE, broker=broker,
                                               broker_epoch=reg.epoch, **fields))

    # -- topics and partitions -------------------------------------------------------------
    def _maybe_create_topics(self) -> None:
        """Create the scenario's topics (CreateTopics at start) once the brokers they name are
        unfenced, or a session timeout after this controller took over, as long as each
        partition has an unfenced replica: Kafka refuses the topic otherwise
        (`admin_rules.partition_without_active_replica`), and the creator asks again."""
        todo = [t for t in self.options.topics if t.name not in self.image.named]
        if not todo:
            return
        usable = self.image.usable()
        waited = self.now_us - self.claimed_us > self.cluster.broker_session_timeout_ms * 1000
        for t in todo:
            named = sorted({b for replicas in t.assignment for b in replicas})
            if not waited and any(b not in usable for b in named):
                continue
            if admin_rules.partition_without_active_replica(t.assignment, usable) is not None:
                continue
            self.write_topic(t.name, self.store.topics[t.name].topic_id, t.assignment)

    def write_topic(self, name: str, topic_id: int, assignment: list) -> None:
        """A TopicRecord and a PartitionRecord per partition: the ISR is the usable replicas,
        the leader the first of them. Every partition has a usable replica (the callers
        refuse the topic otherwise, as Kafka's `createTopic` does)."""
        usable = self.image.usable()
        self._write(K.MetadataRecord.of(K.TOPIC, name=name, topic_id=topic_id))
        for i, replicas in enumerate(assignment):
            isr = tuple(r for r in replicas if r in usable)
            assert isr, f"{name}-{i}: created with no usable replica"
            self._write(K.MetadataRecord.of(
                K.PARTITION, tp=f"{name}-{i}", topic_id=topic_id, leader=isr[0],
                leader_epoch=0, partition_epoch=0, isr=isr, replicas=tuple(replicas)))

    def unclean_enabled(self) -> bool:
        """`ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic`: the cluster's
        unclean.leader.election.enable from 3.9 (KAFKA-12670); at 3.3.0-3.8.0 it returns false
        ("TODO: support configuring unclean leader election"), so only an admin's ElectLeaders
        (UNCLEAN) elects uncleanly. 3.9's scheduled check of leaderless partitions
        (`maybeElectUncleanLeaders`, every unclean.leader.election.interval.ms, 5 min) only
        matters when the config changes, which the model's does not."""
        return self.protocol.kraft_unclean_election_config and self.cluster.unclean_leader_election

    def change_partition(self, st, target_isr: tuple, target: tuple | None = None,
                         moving: tuple | None = None, reason: str = "",
                         unclean: bool | None = None, without: int = E.NO_LEADER,
                         unclean_shutdown: tuple = ()):
        """Write the PartitionChangeRecord that takes `st` to `target_isr` and the replicas
        `target` with `moving` (adding, removing) in progress (default: as they are), as
        `rules.kraft_assignment_change` builds it, or with `eligible_leader_replicas` (KIP-966)
        `rules.kraft_elr_change`; returns the change, or None when there is none. `without`
        is a broker no leader may be (one being fenced or re-registering: Kafka's
        `brokerToRemove`), `unclean_shutdown` the brokers whose unclean shutdown it handles.
        A reassignment that completes is recorded as `reassign_complete`, also one that
        completes in its first record (a new order of the same replicas)."""
        now = self.image.moving(st.tp)
        adding, removing = now if moving is None else moving
        unclean = self.unclean_enabled() if unclean is None else unclean
        usable = tuple(b for b in self.image.usable() if b != without)
        if self.protocol.eligible_leader_replicas:
            change = self.rules.kraft_elr_change(
                self.protocol, st, usable, target_isr, st.replicas if target is None else target,
                adding, removing, unclean, now, self._min_isr(st.tp), unclean_shutdown)
        else:
            change = self.rules.kraft_assignment_change(
                self.protocol, st.leader, st.leader_epoch, st.partition_epoch, st.isr,
                st.replicas, usable, target_isr, st.replicas if target is None else target,
                adding, removing, unclean, now)
        if change is None:
            return None
        running = bool(change.adding or change.removing)
        done = not running and (bool(adding or removing) or reason == "reassign_start")
        new = st._replace(leader=change.leader, leader_epoch=change.leader_epoch,
                          partition_epoch=change.partition_epoch, isr=change.isr,
                          replicas=change.replicas, elr=getattr(change, "elr", ()),
                          last_known_elr=getattr(change, "last_known_elr", ()))
        why = "reassign_complete" if done and reason != "reassign_cancel" else reason
        self._write(partition_record(K.PARTITION_CHANGE, new, (change.adding, change.removing),
                                     why))
        return change

    def _min_isr(self, tp: str) -> int:
        """The topic's effective min.insync.replicas (`getTopicEffectiveMinIsr`): the cluster's,
        at most the replicas of its partition 0."""
        first = self.image.parts.get(f"{tp.rpartition('-')[0]}-0") or self.image.parts[tp]
        return self.rules.kraft_effective_min_isr(self.cluster.min_insync_replicas,
                                                  len(first.replicas))

    # -- brokers -----------------------------------------------------------------------------
    def _not_controller(self, msg, kind: str, body) -> bool:
        if self.active:
            return False
        self.send(msg.src, kind, body)
        return True

    # -- AlterPartition ----------------------------------------------------------------------
    def on_alter_partition(self, msg) -> None:
        req = msg.body
        st = self.image.parts.get(req.tp) if self.active else None
        usable = self.image.usable()
        registered = {b: reg.epoch for b, reg in self.image.brokers.items()}
        lookup = self.rules.alter_partition_topic_error(
            self.protocol, req.topic_id, self.image.topics.get(req.tp.rpartition("-")[0]),
            st is not None)
        if lookup != E.NONE:
            st = None
        error = self.rules.kraft_alter_partition_error(
            self.protocol, self.active, lookup, st.leader if st else -1,
            st.leader_epoch if st else -1, st.partition_epoch if st else -1, req.broker,
            req.leader_epoch, req.partition_epoch, req.isr, usable, st.replicas if st else (),
            registered, req.broker_epoch, req.isr_epochs)
        self.emit(V.ALTER_PARTITION, {"tp": req.tp, "from": req.broker,
                                      "leader_epoch": req.leader_epoch,
                                      "partition_epoch": req.partition_epoch,
                                      "isr": list(req.isr), "error": error})
        if error:
            self.send(msg.src, "AlterPartitionResponse",
                      AlterPartitionResponse(req.corr, req.tp, error, -1, -1, ()))
            return
        change = self.change_partition(st, tuple(req.isr), unclean=False)
        if change is None:  # the ISR asked for is the one it has: answer it as it stands
            change = st
        # a reassignment that completed and moved the leader away answers NEW_LEADER_ELECTED
        error = E.NONE if change.leader == req.broker else E.NEW_LEADER_ELECTED
        self._answer_when_committed(self._written_last(), msg.src, "AlterPartitionResponse",
                                    AlterPartitionResponse(req.corr, req.tp, error,
                                                           change.leader_epoch,
                                                           change.partition_epoch, change.isr))

    # -- AllocateProducerIds -----------------------------------------------------------------
    def on_allocate_producer_ids(self, msg) -> None:
        """A block of producer ids for a registered broker of that epoch: the next 1000 from
        the image's, in a ProducerIdsRecord, answered once it commits
        (`QuorumController.allocateProducerIds`, `ProducerIdControlManager`, 3.9.0-rc3)."""
        req = msg.body
        if self._not_controller(msg, "AllocateProducerIdsResponse", K.AllocateProducerIdsResponse(
                req.corr, E.NOT_CONTROLLER, -1, 0)):
            return
        reg = self.image.brokers.get(req.broker)
        error = producer_ids.allocate_producer_ids_error(reg.epoch if reg else None,
                                                         req.broker_epoch)
        if error:
            self.send(msg.src, "AllocateProducerIdsResponse",
                      K.AllocateProducerIdsResponse(req.corr, error, -1, 0))
            return
        start, size = self.image.next_producer_id, producer_ids.PRODUCER_ID_BLOCK_SIZE
        offset = self._write(K.MetadataRecord.of(K.PRODUCER_IDS, broker=req.broker,
                                                 broker_epoch=req.broker_epoch,
                                                 next_producer_id=start + size))
        self._answer_when_committed(offset, msg.src, "AllocateProducerIdsResponse",
                                    K.AllocateProducerIdsResponse(req.corr, E.NONE, start, size))

    _handlers = {
        "Vote": RaftQuorum.on_vote,
        "VoteResponse": RaftQuorum.on_vote_response,
        "BeginQuorumEpoch": RaftQuorum.on_begin_quorum_epoch,
        "BeginQuorumEpochResponse": RaftQuorum.on_begin_quorum_epoch_response,
        "EndQuorumEpoch": RaftQuorum.on_end_quorum_epoch,
        "EndQuorumEpochResponse": RaftQuorum.on_end_quorum_epoch_response,
        "QuorumFetch": RaftQuorum.on_quorum_fetch,
        "QuorumFetchResponse": RaftQuorum.on_quorum_fetch_response,
        "AddRaftVoter": RaftQuorum.on_add_raft_voter,
        "RemoveRaftVoter": RaftQuorum.on_remove_raft_voter,
        "QuorumApiVersions": RaftQuorum.on_quorum_api_versions,
        "QuorumApiVersionsResponse": RaftQuorum.on_quorum_api_versions_response,
        "BrokerRegistration": KraftBrokers.on_broker_registration,
        "BrokerHeartbeat": KraftBrokers.on_broker_heartbeat,
        "AlterPartition": on_alter_partition,
        "AllocateProducerIds": on_allocate_producer_ids,
    }


def not_controller_answer(kind: str, body, leader: str | None):
    """The NOT_CONTROLLER answer to the request whose waiting answer was `body` (of `kind`)."""
    if kind == "AlterPartitionResponse":
        return AlterPartitionResponse(body.corr, body.tp, E.NOT_CONTROLLER, -1, -1, ())
    if kind == "AllocateProducerIdsResponse":
        return body._replace(error=E.NOT_CONTROLLER, start=-1, length=0)
    if kind == "BrokerHeartbeatResponse":
        return BrokerHeartbeatResponse(E.NOT_CONTROLLER, True, leader)
    return BrokerRegistrationResponse(E.NOT_CONTROLLER, -1, body.incarnation)
