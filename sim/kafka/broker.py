"""Broker actor: control plane (LeaderAndIsr, UpdateMetadata, StopReplica), sessions, dispatch.

Contract: a broker hosts replicas (`Partition`) over durable logs, keeps its own metadata cache
(which may lag the controller), answers Metadata from that cache, and applies control requests
with the checks of ref §1.4 (LeaderAndIsr) and §1.5 (StopReplica). Volatile state (hosted
partitions, metadata cache, controller epoch, fetchers, pending requests) is lost on crash; logs
survive, and a restart reads each log's high watermark back from its last checkpoint.
Data-plane handling lives in `BrokerData` / `Fetcher`.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.broker_data import BrokerData
from sim.kafka.connection import RequestQueue
from sim.kafka.fetcher import Fetcher
from sim.kafka.idempotence import evict_below_log_start, expire_producers
from sim.kafka.log import Log
from sim.kafka.messages import ControlResponse, MetadataResponse
from sim.kafka.options import Options
from sim.kafka.partition import Partition

HEARTBEAT_US = 500_000


class Broker(RequestQueue, BrokerData, Fetcher, Actor):
    def __init__(self, world, broker_id: int, options: Options, protocol, store):
        super().__init__(f"b{broker_id}", world)
        self.id = broker_id
        self.cluster = options.cluster
        self.protocol = protocol
        self.store = store
        self.logs: dict[str, tuple[int, Log]] = {}  # durable: tp -> (topic_id, log)
        # durable: tp -> (topic_id, leader epoch) of a replica deleted by StopReplica, kept only
        # with `leader_and_isr_delete_fence`
        self.deleted_epochs: dict[str, tuple[int, int]] = {}
        self.broker_epoch = -1
        self._reset_volatile()

    def _reset_volatile(self) -> None:
        self.partitions: dict[str, Partition] = {}
        self.metadata: dict[str, tuple] = {}  # tp -> (topic_id, leader, leader_epoch)
        self.alive_brokers: tuple = ()
        self.formats: dict[str, int] = {}
        # with `update_metadata_fence`: (controller epoch, corr) of the UpdateMetadata that last
        # set each partition's state, and the live-broker list and formats
        self.metadata_stamps: dict[str, tuple[int, int]] = {}
        self.alive_stamp: tuple[int, int] = (-1, -1)
        self.controller_epoch = -1
        self.controller: str | None = None
        self.init_data_plane()
        self.init_fetchers()
        self.init_request_queue()
        self.shutting_down = False  # in controlled shutdown: follows no new leader

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._register()

    def on_disconnect(self, peer: str) -> None:
        """A connection closed under this broker: a client's (its unread requests go), a
        leader's (the follower fetcher backs off), or the controller's (unanswered
        AlterPartitions are sent again at once, as BrokerToControllerChannelManager re-queues
        a request whose connection dropped)."""
        self.connection_closed(peer)
        Fetcher.on_disconnect(self, peer)
        # A controller that died refuses the new connection, so nothing would reach it (and a
        # send to a dead node closes the connection again at once): the next controller gets
        # the requests when it takes over (`resend_alters`).
        if peer == self.controller and self.world.is_alive(peer):
            self.resend_alters()

    def on_crash(self) -> None:
        if not self._checkpoint_interval_us():  # every HW change is durable at once
            self.checkpoint_hws()
        self._reset_volatile()

    def on_restart(self) -> None:
        self._recover_hws()
        self._register()

    def stop_cleanly(self) -> None:
        """Shut down as `KafkaServer.shutdown` does (after a controlled shutdown, or on a fatal
        error that exits the JVM through its shutdown hook): the HWs are checkpointed first,
        and the ZooKeeper session is closed (`zkClient.close()`), so the controller sees the
        broker gone at once rather than after broker_session_timeout_ms, if zk is reachable."""
        if self.alive:
            self.checkpoint_hws()
            for _topic_id, log in self.logs.values():  # LogManager.shutdown flushes every log
                log.flush()
            if self.world.network.reachable(self.name, "zk"):
                self.store.close_session(self.id, self.broker_epoch)
            self.world.crash(self.name)

    # -- high watermark checkpoints ----------------------------------------------------
    def _checkpoint_interval_us(self) -> int:
        return self.cluster.replica_high_watermark_checkpoint_interval_ms * 1000

    def checkpoint_hws(self) -> None:
        """`ReplicaManager.checkpointHighWatermarks`: every log's HW goes to
        replication-offset-checkpoint (written with fsync, so it survives a power loss too)."""
        for _topic_id, log in self.logs.values():
            log.checkpointed_hw = log.hw

    def _recover_hws(self) -> None:
        """A restarting broker knows only the checkpointed HWs, clamped to each log's start
        and end (`UnifiedLog.updateHighWatermark`). After a crash they trail the HWs the broker
        had by up to the checkpoint interval, so a 0.10 follower truncates further back
        (`ReplicaManager.makeFollowers` truncates to this HW) and a new leader starts lower."""
        hws = []
        for tp in sorted(self.logs):
            topic_id, log = self.logs[tp]
            hw = max(log.log_start_offset, min(log.checkpointed_hw, log.leo))
            if hw != log.hw:
                log.hw = hw
                hws.append((tp, topic_id, hw, log.epochs[-1][0] if log.epochs else -1))
        if hws:
            self.emit(V.HW, {"role": "recovered", "hws": hws})

    def _register(self) -> None:
        self.broker_epoch = self.store.register_broker(self.id, self.now_us)
        self.set_timer(HEARTBEAT_US, "heartbeat")
        self.set_timer(self.cluster.replica_lag_time_max_ms * 500, "isr_check")
        self._arm_producer_expiration()
        if self._checkpoint_interval_us():
            self.set_timer(self._checkpoint_interval_us(), "hw_checkpoint")
        segment_ms = min((t.segment_ms for t in self.store.topics.values() if t.retention_ms),
                         default=0)
        if segment_ms:
            self.set_timer(segment_ms * 1000, "retention", segment_ms)

    def on_timer(self, name: str, data) -> None:
        if name == "heartbeat":
            if self.world.network.reachable(self.name, "zk"):
                self.store.renew_broker(self.id, self.broker_epoch, self.now_us)
            self.set_timer(HEARTBEAT_US, "heartbeat")
        elif name == "isr_check":
            self.check_isr_shrink()
            self.set_timer(self.cluster.replica_lag_time_max_ms * 500, "isr_check")
        elif name == "hw_checkpoint":
            self.checkpoint_hws()
            self.set_timer(self._checkpoint_interval_us(), "hw_checkpoint")
        elif name == "producer_expiration":
            for _tp, (_topic_id, log) in sorted(self.logs.items()):
                expire_producers(log, self.now_us, self.protocol.producer_id_expiration_ms)
            self._arm_producer_expiration()
        elif name == "retention":
            for tp in sorted(self.logs):
                self.apply_retention(tp)
            self.set_timer(data * 1000, "retention", data)
        elif name == "request_served":
            self.on_request_served(data)
        else:
            self.on_data_timer(name, data)

    # -- power loss ----------------------------------------------------------------------
    def lose_unflushed(self, unflushed_us: int, writeback: bool = False) -> None:
        """A power loss: every log loses what the OS had not yet written to disk (Kafka leaves
        flushing to the OS by default: `log.flush.interval.messages` and `.ms` are unbounded),
        never what Kafka flushed itself (a clean shutdown flushes every log). By default that
        is the batches appended in the last `unflushed_us`; with `writeback`, what each log
        got since the kernel last wrote it back, `unflushed_us` being the dirty-page expiry
        (`Log.written_back`). Log recovery then trims the leader-epoch cache, written with
        fsync on every change, to the new log end (`LogLoader`: `truncateFromEnd`), and the HW
        to it; producer state is rebuilt. What recovery kept is on disk."""
        now = self.now_us
        for tp in sorted(self.logs):
            topic_id, log = self.logs[tp]
            keep = (log.written_back(now, unflushed_us, V.DIRTY_WRITEBACK_US) if writeback
                    else log.unflushed_from(now - unflushed_us))
            self.truncate_log(tp, topic_id, log, keep, "power_loss")
            log.flush()

    # -- retention (ref §2.3) ------------------------------------------------------------
    def apply_retention(self, tp: str, log_start_offset: int | None = None) -> None:
        """Delete whole batches below `log_start_offset` (or older than the topic's
        retention.ms), never past the HW; on profiles <= 2.3 (and the `spurious_out_of_order`
        mutant) the producer state of producers left wholly below the new log start is evicted."""
        held = self.logs.get(tp)
        if held is None:
            return
        topic_id, log = held
        if not log.entries:
            return
        if log_start_offset is None:
            topic = self.store.topics.get(tp.rpartition("-")[0])
            if topic is None or not topic.retention_ms:
                return
            horizon = self.now_us - topic.retention_ms * 1000
            old = [e for e in log.entries if e[3].created_us < horizon]
            log_start_offset = old[-1][0] + old[-1][1] if old else log.log_start_offset
        # an expired active segment is rolled and deleted too, so everything below the HW may go
        target = min(log_start_offset, log.hw)
        if log.advance_start(target):
            self.emit(V.LOG_START, {"tp": tp, "topic_id": topic_id,
                                    "log_start_offset": log.log_start_offset})
            if self.protocol.evict_state_on_retention or self.protocol.mutant == "spurious_out_of_order":
                evict_below_log_start(log)

    def _arm_producer_expiration(self) -> None:
        """`removeExpiredProducers` runs every producer.id.expiration.check.interval.ms
        whether or not the topic has retention (ref §2.3)."""
        interval_ms = self.cluster.producer_id_expiration_check_interval_ms
        self.set_timer(interval_ms * 1000, "producer_expiration")

    # -- dispatch ------------------------------------------------------------------------
    def on_message(self, msg) -> None:
        # client requests and follower fetches wait their turn (connection.py)
        if not self.enqueue_request(msg):
            self.dispatch(msg)

    def dispatch(self, msg) -> None:
        handler = self._handlers.get(msg.kind)
        if handler is not None:
            handler(self, msg)

    def _reply(self, msg, kind: str, body) -> None:
        self.send(msg.src, kind, body)

    def _fenced_controller(self, msg) -> bool:
        """STALE_BROKER_EPOCH / STALE_CONTROLLER_EPOCH for a whole control request, in that
        order: KafkaApis checks the broker epoch before ReplicaManager sees the controller
        epoch (ref §1.4 broker step 1)."""
        req = msg.body
        error = E.NONE
        if self.protocol.broker_epoch_check \
                and getattr(req, "broker_epoch", -1) not in (-1, self.broker_epoch) \
                and req.broker_epoch < self.broker_epoch:
            error = E.STALE_BROKER_EPOCH
        elif req.controller_epoch < self.controller_epoch:
            error = E.STALE_CONTROLLER_EPOCH
            self.emit(V.STALE_CONTROLLER, {"request": msg.kind,
                                           "req_controller_epoch": req.controller_epoch,
                                           "local_controller_epoch": self.controller_epoch})
        if error:
            self._reply(msg, msg.kind + "Response", ControlResponse(req.corr, error))
            return True
        if req.controller_epoch > self.controller_epoch and any(
                p.alter_request is not None for p in self.partitions.values()):
            # a new controller: unanswered AlterPartitions go to it once this request is handled
            self.set_timer(0, "resend_alters")
        self.controller_epoch = req.controller_epoch
        self.controller = req.controller_id
        return False

    # -- LeaderAndIsr (ref §1.4 broker steps 1-4) ------------------------------------------
    def on_leader_and_isr(self, msg) -> None:
        if self._fenced_controller(msg):
            return
        req = msg.body
        errors, rejected = [], []
        older_ok = self.protocol.mutant == "lai_accepts_older_epoch"
        stamp = (req.controller_epoch, req.corr)
        for st in req.partitions:
            p = self.partitions.get(st.tp)
            local = p.leader_epoch if p is not None else self._deleted_epoch(st)
            if p is not None and p.topic_id != st.topic_id:
                errors.append((st.tp, E.INCONSISTENT_TOPIC_ID))
                continue
            if st.leader_epoch > local or (older_ok and st.leader_epoch != local):
                if self.id not in st.replicas:  # judged only for a newer epoch (ref §1.4 step 2)
                    errors.append((st.tp, E.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                self._become(st, force=older_ok)
                self.partitions[st.tp].lai_stamp = stamp
            elif self._isr_change_only(p, st) and self.id in st.replicas:
                self._become(st)
                self.partitions[st.tp].lai_stamp = stamp
            else:
                rejected.append([st.tp, st.leader_epoch, local, E.STALE_CONTROLLER_EPOCH])
                errors.append((st.tp, E.STALE_CONTROLLER_EPOCH))
        if rejected:
            self.emit(V.LAI_REJECTED, {"controller_epoch": req.controller_epoch, "partitions": rejected})
        if req.full:
            self._remove_strays({st.tp for st in req.partitions}, stamp)
        self._reply(msg, "LeaderAndIsrResponse", ControlResponse(req.corr, E.NONE, tuple(errors)))

    def _remove_strays(self, assigned: set, stamp: tuple) -> None:
        """FULL LeaderAndIsr (KAFKA-15605): a local replica the request does not list is a
        stray: it is stopped and its log goes, as `ReplicaManager` does with the strays of a
        FULL request. Kafka's controller channel keeps its requests in order; this network may
        not, so a replica that a later LeaderAndIsr (`stamp`: controller epoch, correlation id)
        brought online stays."""
        for tp in sorted(self.logs):
            p = self.partitions.get(tp)
            if tp in assigned or (p is not None and p.lai_stamp > stamp):
                continue
            if p is not None:
                self.remove_from_fetchers(tp)
                self.fail_waiters(tp)
            self._delete_replica(tp, self.logs[tp][0], p.leader_epoch if p else None,
                                 {"reason": "stray"})

    def _deleted_epoch(self, st) -> int:
        """The epoch a LeaderAndIsr for an unhosted replica must exceed: -1 (anything goes, as
        in every release), or with `leader_and_isr_delete_fence` the epoch at which this broker
        deleted the replica, so a LeaderAndIsr reordered behind that StopReplica cannot
        re-create it (a topic deletion, -2, fences every epoch of that topic id)."""
        tomb = self.deleted_epochs.get(st.tp)
        if tomb is None or tomb[0] != st.topic_id:
            return -1
        return tomb[1]

    def _isr_change_only(self, p, st) -> bool:
        """A newer partition epoch at the same leader epoch: with `isr_shrink_bumps_epoch` off
        (KRaft, KAFKA-15021) an ISR removal is applied as KRaft brokers apply a partition
        change (`makeLeader` / `makeFollower` skip only an older partition epoch, ref §1.4)."""
        return (not self.protocol.isr_shrink_bumps_epoch and p is not None
                and st.leader_epoch == p.leader_epoch and st.partition_epoch > p.partition_epoch)

    def _become(self, st, force: bool = False) -> None:
        p = self.partitions.get(st.tp)
        if p is None:
            p = Partition(st.tp, st.topic_id, self._log_for(st.tp, st.topic_id), self.id)
            self.partitions[st.tp] = p
        if force:
            p.partition_epoch = -1
            p.leader_epoch = min(p.leader_epoch, st.leader_epoch - 1)
        if st.leader == self.id:
            if p.make_leader(st, self.now_us, self.protocol.epoch_cached_on_election):
                for f in p.followers.values():
                    f.reset(p.log.leo, self.now_us)
            self.remove_from_fetchers(st.tp)
        else:
            leader_changed = p.leader != st.leader
            new_epoch = p.make_follower(st)
            self.fail_waiters(st.tp)
            if st.leader >= 0 and not self.shutting_down:  # ReplicaManager.makeFollowers: a
                # shutting-down broker adds no fetcher, so it cannot rejoin the ISR (cf. KIP-841)
                self.add_to_fetcher(st.tp, st.leader, leader_changed, new_epoch)
            else:
                self.remove_from_fetchers(st.tp)
        self.emit(V.REPLICA_STATE, {"tp": st.tp, "topic_id": st.topic_id,
                                    "role": "leader" if st.leader == self.id else "follower",
                                    "leader": st.leader, "leader_epoch": p.leader_epoch,
                                    "partition_epoch": p.partition_epoch, "isr": list(st.isr),
                                    "controller_epoch": self.controller_epoch})
        if st.leader == self.id:
            self.maybe_advance_hw(p)
            self.flush_hw()

    def _log_for(self, tp: str, topic_id: int) -> Log:
        held = self.logs.get(tp)
        if held is not None and held[0] == topic_id:
            return held[1]
        log = Log()
        self.logs[tp] = (topic_id, log)
        self.emit(V.LOG_CREATED, {"tp": tp, "topic_id": topic_id})
        return log

    # -- UpdateMetadata --------------------------------------------------------------------
    def on_update_metadata(self, msg) -> None:
        """Apply an UpdateMetadata to the metadata cache, wholesale as a ZK broker does
        (`ZkMetadataCache.updateMetadata` checks no epoch). With `update_metadata_fence`, each
        part (a partition's state, the live-broker list with the formats) is taken only if no
        UpdateMetadata the controller sent later already set it: the order Kafka's in-order
        controller channel keeps, which a reordered or held request breaks."""
        if self._fenced_controller(msg):
            return
        req = msg.body
        fence = self.protocol.update_metadata_fence
        stamp = (req.controller_epoch, req.corr)
        stamps = self.metadata_stamps
        changes, skipped = [], []
        for st in req.partitions:
            if fence and stamps.get(st.tp, stamp) > stamp:
                skipped.append(st.tp)
                continue
            stamps[st.tp] = stamp
            entry = (st.topic_id, st.leader, st.leader_epoch)
            if self.metadata.get(st.tp) != entry:
                self.metadata[st.tp] = entry
                changes.append([st.tp, st.leader, st.leader_epoch])
        for tp in req.deleted:
            if fence and stamps.get(tp, stamp) > stamp:
                skipped.append(tp)
                continue
            stamps[tp] = stamp
            if self.metadata.pop(tp, None) is not None:
                changes.append([tp, -1, -2])
        stale_alive = fence and self.alive_stamp > stamp
        alive_changed = not stale_alive and self._apply_alive(req, stamp)
        if changes or alive_changed:
            self.emit(V.METADATA, {"controller_epoch": req.controller_epoch, "changes": changes,
                                   "alive": list(self.alive_brokers)})
        if skipped or stale_alive:
            self.emit(V.METADATA_FENCED, {"controller_epoch": req.controller_epoch,
                                          "corr": req.corr, "tps": skipped, "alive": stale_alive})
        self._reply(msg, "UpdateMetadataResponse", ControlResponse(req.corr, E.NONE))

    def _apply_alive(self, req, stamp: tuple[int, int]) -> bool:
        """Take the live-broker list and the formats of `req`; whether the list changed."""
        self.alive_stamp = stamp
        self.formats.update(dict(req.formats))
        changed = self.alive_brokers != req.alive
        self.alive_brokers = req.alive
        return changed

    # -- StopReplica (ref §1.5) ------------------------------------------------------------
    def on_stop_replica(self, msg) -> None:
        if self._fenced_controller(msg):
            return
        req = msg.body
        errors = []
        for sp in req.partitions:
            errors.append((sp.tp, self._stop_one(sp)))
        self._reply(msg, "StopReplicaResponse", ControlResponse(req.corr, E.NONE, tuple(errors)))

    def _stop_replica_allowed(self, req_epoch: int, cur_epoch: int) -> bool:
        proto = self.protocol
        if proto.mutant == "no_stop_replica_epoch_check":
            return True
        equal_ok = proto.stop_replica_equal_epoch == "accept"
        if proto.mutant == "stop_replica_equal_epoch_flipped":
            equal_ok = not equal_ok
        return (req_epoch in (E.NO_EPOCH, E.EPOCH_DURING_DELETE) or req_epoch > cur_epoch
                or (req_epoch == cur_epoch and equal_ok))

    def _stop_one(self, sp) -> int:
        p = self.partitions.get(sp.tp)
        fields = {"tp": sp.tp, "topic_id": sp.topic_id, "delete": sp.delete,
                  "req_epoch": sp.leader_epoch, "issued_epoch": sp.issued_epoch,
                  "local_epoch": p.leader_epoch if p else -1,
                  "controller_epoch": self.controller_epoch}
        if p is not None and not self._stop_replica_allowed(sp.leader_epoch, p.leader_epoch):
            self.emit(V.STOP_REPLICA, {**fields, "result": "fenced", "error": E.FENCED_LEADER_EPOCH})
            return E.FENCED_LEADER_EPOCH
        self.emit(V.STOP_REPLICA, {**fields, "result": "applied" if p else "not_hosted",
                                   "error": E.NONE})
        # `ReplicaManager.stopPartitions`: the fetcher goes; a deleted replica's partition goes
        # too, so its parked requests complete with an error. Without delete the partition is
        # left as it is, a leader still leading: `completeDelayedFetchOrProduceRequests` then
        # completes only what can complete, so its parked requests wait on
        self.remove_from_fetchers(sp.tp)
        if sp.delete:
            self.fail_waiters(sp.tp)
            self._delete_replica(sp.tp, sp.topic_id, self._delete_fence_epoch(sp, p))
        return E.NONE

    def _delete_replica(self, tp: str, topic_id: int, fence_epoch: int | None,
                        fields: dict | None = None) -> None:
        """Delete a stopped replica (no fetcher, no parked requests): its partition state and
        its log, with a `log_deleted` event (plus `fields`) when there was a log. With
        `leader_and_isr_delete_fence` the broker remembers `fence_epoch` (None: nothing), so a
        LeaderAndIsr reordered behind the deletion cannot re-create the replica."""
        self.partitions.pop(tp, None)
        if fence_epoch is not None and self.protocol.leader_and_isr_delete_fence:
            self.deleted_epochs[tp] = (topic_id, fence_epoch)
        held = self.logs.pop(tp, None)
        if held is not None:
            self.emit(V.LOG_DELETED, {"tp": tp, "topic_id": held[0], **(fields or {})})

    @staticmethod
    def _delete_fence_epoch(sp, p) -> int | None:
        """The epoch a StopReplica(delete) fences: none for -1, every epoch for -2 (the topic is
        gone), else the request's, or the replica's own when newer."""
        if sp.leader_epoch == E.NO_EPOCH:
            return None
        epoch = sp.leader_epoch if sp.leader_epoch >= 0 else 2**31 - 1
        return max(epoch, p.leader_epoch) if p is not None else epoch

    # -- Metadata --------------------------------------------------------------------------
    def on_metadata(self, msg) -> None:
        parts = tuple((tp, tid, leader, epoch)
                      for tp, (tid, leader, epoch) in sorted(self.metadata.items()))
        formats = tuple(sorted(self.formats.items()))
        self._reply(msg, "MetadataResponse",
                    MetadataResponse(msg.body.corr, self.alive_brokers, parts, formats))

    _handlers = {
        "LeaderAndIsr": on_leader_and_isr,
        "UpdateMetadata": on_update_metadata,
        "StopReplica": on_stop_replica,
        "Metadata": on_metadata,
        "Produce": BrokerData.on_produce,
        "Fetch": BrokerData.on_fetch,
        "OffsetsForLeaderEpoch": BrokerData.on_offsets_for_leader_epoch,
        "FetchResponse": Fetcher.on_fetch_response,
        "AlterPartitionResponse": BrokerData.on_alter_partition_response,
    }
