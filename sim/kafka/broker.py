"""Broker actor: control plane (LeaderAndIsr, UpdateMetadata, StopReplica), sessions, dispatch.

Contract: a broker hosts replicas (`Partition`) over durable logs, keeps its own metadata cache
(which may lag the controller), answers Metadata from it, and applies control requests with the
checks of ref §1.4 (LeaderAndIsr) and §1.5 (StopReplica). Volatile state (partitions, metadata
cache, controller epoch, fetchers, pending requests) is lost on crash; logs survive, and a
restart reads each log's HW from its last checkpoint and its producer state from its last
snapshot and the log above it. Logs sit in `cluster.log_dirs` directories (`LogDirs`); producer
ids: `producer_ids`; an admin's ElectLeaders: `ElectLeadersPurgatory`. Each broker runs its own
profile (`protocol`; `upgrade` changes it while down); what it sends other brokers is bounded by
the inter-broker protocol (`store.ibp`). The data plane is `BrokerData` / `Fetcher`.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import vocab as V
from sim.kafka.broker_control import ControlPlane
from sim.kafka.broker_data import BrokerData
from sim.kafka.broker_elect_leaders import ElectLeadersPurgatory
from sim.kafka.broker_storage import LogDirs
from sim.kafka.connection import RequestQueue
from sim.kafka.delete_records import DeleteRecordsHandler
from sim.kafka.fetcher import Fetcher
from sim.kafka.fetcher_reset import FetcherReset
from sim.kafka.follower_hw import FollowerHw
from sim.kafka.idempotence import (
    evict_below_log_start,
    expire_producers,
    reload_producer_state,
    take_snapshot,
)
from sim.kafka.isr import IsrManager
from sim.kafka.leader_fetch import LeaderFetch
from sim.kafka.leader_sessions import LeaderSessions
from sim.kafka.log import Log
from sim.kafka.options import Options
from sim.kafka.partition import Partition
from sim.kafka.producer_ids import ProducerIdManager
from sim.kafka.rules import rules_for
from sim.kafka.rules.inter_broker import replication_view
from sim.kafka.wire.frontend import WireFrontEnd

HEARTBEAT_US = 500_000


class Broker(RequestQueue, ControlPlane, BrokerData, LeaderFetch, LeaderSessions, IsrManager,
             Fetcher, FetcherReset, FollowerHw, LogDirs, DeleteRecordsHandler, WireFrontEnd,
             ProducerIdManager, ElectLeadersPurgatory, Actor):
    kraft = False  # a ZooKeeper-mode broker (`KraftBroker` is the KRaft one)

    def __init__(self, world, broker_id: int, options: Options, protocol, store):
        super().__init__(f"b{broker_id}", world)
        self.id = broker_id
        self.profile = options.node_profile(self.name)
        self.cluster = options.cluster_on(self.profile)
        self.options = options
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.store = store
        self.logs: dict[str, tuple[int, Log]] = {}  # durable: tp -> (topic_id, log)
        # durable: tp -> (topic_id, leader epoch) of a replica deleted by StopReplica, kept only
        # with `leader_and_isr_delete_fence`
        self.deleted_epochs: dict[str, tuple[int, int]] = {}
        # the registration the broker's ZooKeeper session holds, and the epoch its request
        # handlers know (`KafkaController.brokerEpoch`): they differ while a registration made
        # after a session expiry waits for ZooKeeper's answer
        self.session_epoch = self.broker_epoch = -1
        self._replication = (None, None, None)  # (protocol, ibp, their replication view)
        self.init_log_dirs()
        # fetch session ids handed out so far: sessions die with the process, their ids are
        # not reused (Kafka draws them at random)
        self.fetch_session_ids = 0
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
        self.init_wire()
        self.init_producer_ids()
        self.shutting_down = False  # in controlled shutdown: follows no new leader
        self.init_offline()

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._register()

    def on_disconnect(self, peer: str) -> None:
        """A connection closed under this broker: a client's (its unread requests go), a
        leader's (the follower fetcher backs off), or the controller's (unanswered
        AlterPartitions go again at once: BrokerToControllerChannelManager re-queues them)."""
        self.connection_closed(peer)
        self.wire_peer_closed(peer)
        Fetcher.on_disconnect(self, peer)
        # A controller that died refuses the new connection, so nothing would reach it (and a
        # send to a dead node closes the connection again at once): the next controller gets
        # the requests when it takes over (`resend_alters`).
        if peer == self.controller and self.peer_alive(peer):
            self.resend_alters()

    def on_crash(self) -> None:
        if not self._checkpoint_interval_us():  # every HW change is durable at once
            self.checkpoint_hws()
        self._reset_volatile()

    def on_restart(self) -> None:
        self.restore_log_dirs()
        self._load_producer_state()
        self._recover_hws()
        self._register()

    def _load_producer_state(self) -> None:
        """Each log's producer state as `LogManager.loadLogs` leaves it, by this broker's code
        (`idempotence.reload_producer_state`); what the process had in memory is gone."""
        evicts = self.rules.evicts_producer_state_on_retention(self.protocol)
        for tp in sorted(self.logs):
            reload_producer_state(self.logs[tp][1], self.now_us,
                                  self.protocol.producer_id_expiration_ms,
                                  self.protocol.idempotent_batches, evicts)

    def close_logs(self) -> None:
        """`LogManager.shutdown`: each log is flushed with a snapshot at its end (`Log.close`)."""
        for _topic_id, log in self.logs.values():
            log.flush()
            take_snapshot(log)

    def begin_shutdown(self) -> None:
        """`KafkaServer.shutdown` with controlled.shutdown.enable begins: the replica manager is
        shutting down from now on (`isShuttingDown`; a restart clears it)."""
        self.shutting_down = True

    def stop_cleanly(self) -> None:
        """Shut down as `KafkaServer.shutdown` does (after a controlled shutdown, or on a fatal
        error that exits the JVM through its shutdown hook): the HWs are checkpointed first,
        and the ZooKeeper session is closed (`zkClient.close()`), so the controller sees the
        broker gone at once rather than after broker_session_timeout_ms, if zk is reachable."""
        if self.alive:
            self.checkpoint_hws()
            self.close_logs()
            if self.can_reach("zk"):
                self.store.close_session(self.id, self.session_epoch)
            self.exit_process()

    def run_profile(self, profile: str, protocol) -> None:
        """From now on run `profile`'s code, with `protocol` its switches (a rolling upgrade
        installs it while the broker is down): the logs, the producer state in them and the
        HW checkpoint are what the old code left on disk. Recorded as an `upgrade` event, so
        the invariants judge this broker by its new switches from here on."""
        self.profile = profile
        self.protocol = protocol
        self.cluster = self.options.cluster_on(profile)  # its own config's release defaults
        self.rules = rules_for(protocol)
        for _topic_id, log in self.logs.values():  # the cache's code is the new release's
            log.resolves_epoch_conflicts = protocol.epoch_cached_on_election
        self.emit(V.UPGRADE, {"profile": profile, "protocol": protocol.to_json()})

    @property
    def replication(self):
        """The switches this broker replicates by under the cluster's IBP
        (`inter_broker.replication_view`: the IBP bounds `follower_truncation`); worked out
        again only when this broker's profile or the IBP changed, since every Fetch asks."""
        protocol, ibp, view = self._replication
        if protocol is not self.protocol or ibp is not self.store.ibp:
            view = replication_view(self.protocol, self.store.ibp)
            self._replication = (self.protocol, self.store.ibp, view)
        return view

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
                log.set_hw(hw)
                hws.append((tp, topic_id, hw, log.epochs[-1][0] if log.epochs else -1))
        if hws:
            self.emit(V.HW, {"role": "recovered", "hws": hws})

    def _register(self) -> None:
        """A starting broker registers before it serves any request (`KafkaServer.startup`
        calls `registerBroker` before it starts the socket server), so it knows its epoch. A
        broker restarted while the ZooKeeper session of its previous process still holds its
        registration cannot register and exits (`_fail_start`)."""
        held = self._live_registration()
        if held is not None:
            self._fail_start(held)
            return
        self.session_epoch = self.broker_epoch = self.store.register_broker(
            self.id, self.now_us, self._session_timeout_us())
        self.claim_zk_producer_id_block()  # the transaction coordinator starts after this
        self.set_timer(self._heartbeat_us(), "heartbeat")
        self._arm_timers()

    def _live_registration(self):
        """The registration (`store.BrokerSession`) of this broker id whose ZooKeeper session
        has not expired, or None. A crashed process's session, and its ephemeral
        /brokers/ids/<id>, live on until ZooKeeper expires the session."""
        held = self.store.brokers.get(self.id)
        if held is None or self.store.session_expired(self.id, held.epoch, self.now_us):
            return None
        return held

    def _fail_start(self, held) -> None:
        """`registerBroker`'s create of /brokers/ids/<id> fails with NODEEXISTS while another
        session's znode `held` is there (`KafkaZkClient`'s `CheckedEphemeral.getAfterNodeExists`,
        1.1.0-3.7.0; `ZkUtils`' `ZKCheckedEphemeral` at 0.10.2-1.0: "A broker is already
        registered on the path ... restarted it faster than the zookeeper timeout").
        `KafkaServer.startup` (3.7.0) recovers the logs before it registers, then fails and shuts
        down: the logs flushed, no HW checkpointed (no partition is loaded before a
        LeaderAndIsr), the process exits."""
        self.emit(V.BROKER_START_FAILED, {
            "error": "NODEEXISTS", "registered_epoch": held.epoch,
            "expires_in_us": held.renewed_us + held.timeout_us - self.now_us})
        self.close_logs()
        self.exit_process()

    def _heartbeat_us(self) -> int:
        """How often the broker's ZooKeeper client is heard from: every HEARTBEAT_US, or a
        third of the session timeout if that is sooner (ZooKeeper's client pings when idle for
        half its read timeout, two thirds of the session's), so a short session does not
        expire between two renewals."""
        return min(HEARTBEAT_US, max(1, self._session_timeout_us() // 3))

    def _session_timeout_us(self) -> int:
        """The ZooKeeper session timeout this broker asks for (its own config's)."""
        return self.cluster.broker_session_timeout_ms * 1000

    def _keep_session(self) -> None:
        """Renew the ZooKeeper session, or, if ZooKeeper expired it while the broker was cut
        off, register again in a new session (`RegisterBrokerAndReelect`): a new znode, so a
        new broker epoch (its czxid). The znode exists at once, so the controller may act on
        it; the broker learns the epoch when ZooKeeper's answer reaches its controller-event
        thread (`processRegisterBrokerAndReelect`), `cluster.broker_registration_ms` later."""
        if not self.store.session_expired(self.id, self.session_epoch, self.now_us):
            self.store.renew_broker(self.id, self.session_epoch, self.now_us)
            return
        previous, self.session_epoch = self.session_epoch, self.store.register_broker(
            self.id, self.now_us, self._session_timeout_us())
        delay_us = self.cluster.broker_registration_ms * 1000
        self.emit(V.BROKER_REGISTERED, {"broker_epoch": self.session_epoch,
                                        "previous_epoch": previous, "reason": "session_expired",
                                        "known_in_us": delay_us})
        if delay_us:
            self.set_timer(delay_us, "registered", self.session_epoch)
        else:
            self.broker_epoch = self.session_epoch

    def _arm_timers(self) -> None:
        """The broker's periodic work: ISR checks, producer expiry, HW checkpoints, retention."""
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
            if self.can_reach("zk"):
                self._keep_session()
                self.propagate_log_dir_event()
            self.set_timer(self._heartbeat_us(), "heartbeat")
        elif name == "registered":
            if data == self.session_epoch:  # not replaced by a later registration meanwhile
                self.broker_epoch = data
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
        to it; producer state is rebuilt. What recovery kept is on disk, but the recovery
        point stays: the restart recovers from it, deleting the snapshots above it."""
        now = self.now_us
        for tp in sorted(self.logs):
            topic_id, log = self.logs[tp]
            keep = (log.written_back(now, unflushed_us, V.DIRTY_WRITEBACK_US) if writeback
                    else log.unflushed_from(now - unflushed_us))
            recovery_point = log.recovery_point
            self.truncate_log(tp, topic_id, log, keep, "power_loss")
            log.flush()
            log.recovery_point = min(recovery_point, log.leo)

    # -- retention (ref §2.3) ------------------------------------------------------------
    def apply_retention(self, tp: str, log_start_offset: int | None = None) -> None:
        """Delete whole batches below `log_start_offset` (or older than the topic's
        retention.ms), never past the HW; on profiles <= 2.3 the producer state of producers
        left wholly below the new log start is evicted."""
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
        self.raise_log_start(tp, topic_id, log, min(log_start_offset, log.hw))

    def raise_log_start(self, tp: str, topic_id: int, log, offset: int) -> None:
        """`maybeIncrementLogStartOffset`: move the log start up to `offset` (nothing when it
        is not higher), with a `log_start` event; on profiles <= 2.3 the producer state of
        producers left wholly below it is evicted (`ProducerStateManager.truncateHead`)."""
        if log.advance_start(offset):
            self.touch_sessions(tp)
            self.fetch_state_changed(tp)
            self.emit(V.LOG_START, {"tp": tp, "topic_id": topic_id,
                                    "log_start_offset": log.log_start_offset})
            if self.rules.evicts_producer_state_on_retention(self.protocol):
                evict_below_log_start(log)

    def _arm_producer_expiration(self) -> None:
        """`removeExpiredProducers` runs every producer.id.expiration.check.interval.ms
        whether or not the topic has retention (ref §2.3)."""
        interval_ms = self.cluster.producer_id_expiration_check_interval_ms
        self.set_timer(interval_ms * 1000, "producer_expiration")

    # -- dispatch ------------------------------------------------------------------------
    def on_message(self, msg) -> None:
        if not self.enqueue_request(msg):  # client requests wait their turn (connection.py)
            self.dispatch(msg)

    def dispatch(self, msg) -> None:
        handler = self._handlers.get(msg.kind)
        if handler is not None:
            handler(self, msg)

    _handlers = {
        "LeaderAndIsr": ControlPlane.on_leader_and_isr,
        "UpdateMetadata": ControlPlane.on_update_metadata,
        "StopReplica": ControlPlane.on_stop_replica,
        "Metadata": ControlPlane.on_metadata,
        "Produce": BrokerData.on_produce,
        "Fetch": LeaderFetch.on_fetch,
        "OffsetsForLeaderEpoch": LeaderFetch.on_offsets_for_leader_epoch,
        "ListOffsets": LeaderFetch.on_list_offsets,
        "DeleteRecords": DeleteRecordsHandler.on_delete_records,
        "ElectLeaders": ElectLeadersPurgatory.on_elect_leaders,
        "ElectLeadersResult": ElectLeadersPurgatory.on_elect_leaders_result,
        "InitProducerId": ProducerIdManager.on_init_producer_id,
        "FetchResponse": Fetcher.on_fetch_response,
        "ListOffsetsResponse": FetcherReset.on_list_offsets_response,
        "AlterPartitionResponse": IsrManager.on_alter_partition_response,
        "WireRequest": WireFrontEnd.on_wire_request,
        "WireClose": WireFrontEnd.on_wire_close,
    }
