"""KRaft broker: the broker's control plane in KRaft mode (KIP-500, KIP-631).

Contract (a `Broker` whose control plane is the metadata log): it registers with the active
controller (its broker epoch is the one the registration's answer gives), heartbeats every
`broker_heartbeat_interval_ms` with the offset of the last metadata record it applied, and
fetches the metadata log from the quorum leader as an observer, from the end of its own copy:
it keeps the uncommitted records it fetched, and a new leader's divergence truncates them
(`KafkaRaftClient`'s follower path; `sim.kafka.kraft_metadata_fetch`). Until the controller unfences it, it reads no request
(its ports are closed from 3.5, KAFKA-14658). It applies only committed records, in log order, each
costing `metadata_apply_us` (plus `metadata_delay_us`, which the `slow_metadata` fault sets):
its metadata offset lags the controller's by its fetch round trip and its apply time. Partition
records are applied as `ReplicaManager.applyDelta` does: a replica becomes leader or follower
(`Partition.makeLeader` / `makeFollower`, taking an equal partition epoch, KAFKA-13790,
`rules.kraft_broker_takes_partition`); a removed topic's replicas are deleted. Metadata
answers come from this broker's own applied image. AlterPartition goes to the active
controller it last heard of; when that one dies, the unanswered ones wait for the next it learns
of, the same node restarted too (`NodeToControllerRequestThread` re-queues them and forgets
the controller's address). The data plane is `Broker`'s. Nothing of ZooKeeper is used.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import kraft_messages as K
from sim.kafka import vocab as V
from sim.kafka.broker import Broker
from sim.kafka.kraft_messages import BrokerHeartbeat, BrokerRegistration
from sim.kafka.kraft_metadata_fetch import MetadataLogFetcher
from sim.kafka.metadata_image import MetadataImage
from sim.kafka.rules import kraft as kraft_rules

RETRY_BACKOFF_US = V.META_RETRY_BACKOFF_US
SHUTDOWN_HEARTBEAT_US = 50_000
FENCED_HEARTBEAT_US = 10_000  # quorum.retry.backoff.ms is 20 ms; a little longer keeps traces short


class KraftBroker(MetadataLogFetcher, Broker):
    kraft = True

    def __init__(self, world, broker_id: int, options, protocol, store, voters: list[str]):
        self.voters = voters
        self.metadata_delay_us = 0  # set by the slow_metadata fault; survives a restart
        # the last metadata Fetch's correlation id; never reset, so no answer to a Fetch of an
        # earlier incarnation matches one of this one
        self.meta_corr = 0
        # on disk: the broker epoch a clean shutdown wrote in the log dirs' clean-shutdown
        # files (`LogManager.shutdown`), -1 for none; read and deleted as the broker starts
        self.clean_shutdown_epoch = -1
        self.previous_broker_epoch = -1  # what this process's registrations carry
        super().__init__(world, broker_id, options, protocol, store)

    def _reset_volatile(self) -> None:
        super()._reset_volatile()
        self.image = MetadataImage()
        self.applied = 0  # the next metadata offset to apply
        self.applied_epoch = 0  # the epoch of the last record applied
        # the local metadata log beyond what was applied: fetched records, uncommitted when
        # fetched, as (offset, epoch, record); the next Fetch starts at its end (`_log_end`)
        self.meta_tail: list[tuple] = []
        self.meta_hw = -1  # the highest high watermark a Fetch answer has carried
        self.meta_leader: str | None = None
        # the quorum epoch this observer knows, which its Fetches carry (Kafka's
        # `quorum.epoch()`): learned from answers, 0 until one comes
        self.meta_epoch = 0
        self.meta_token = 0  # names the Fetch in flight (a timeout for an older one is void)
        self.meta_dst: str | None = None  # the voter the last metadata Fetch went to
        self.meta_ok_us = 0  # a metadata Fetch last answered without an error, or a newer epoch learned
        self.applying = False
        self.awaiting = False  # a metadata Fetch is out, unanswered
        self.registered = False
        self.bootstrap = 0
        self.heartbeat_token = 0
        self.want_shutdown = False  # asked for a controlled shutdown (`BrokerLifecycleManager`)
        self.shutdown_answered = False  # a heartbeat answer came since it asked
        self.published = False  # its first metadata publish since it started is done
        # request processing (`SocketServer.enableRequestProcessing`) has not begun: see
        # `serve`; until then its ports are closed (3.5+) or the requests wait (3.3-3.4)
        self.processing = False
        self.port_closed = self.protocol.kraft_port_opens_when_unfenced
        self.held_requests: list = []

    def cached_broker_epoch(self, replica_id: int) -> int | None:
        """The broker epoch this broker's image holds for an unfenced broker
        (`KRaftMetadataCache.getAliveBrokerEpoch`), or None."""
        reg = self.image.brokers.get(replica_id)
        return reg.epoch if reg is not None and not reg.fenced else None

    # -- registration and heartbeats -------------------------------------------------------
    def _register(self) -> None:
        # `BrokerServer.startup` reads the clean-shutdown epoch; log loading deletes the files,
        # so a crash of this process leaves none
        self.previous_broker_epoch, self.clean_shutdown_epoch = self.clean_shutdown_epoch, -1
        self.broker_epoch = -1
        # proposal `kraft_replicates_once_registered`: this incarnation sends no replica Fetch
        # until its registration is accepted. Kafka's replicates from its first metadata
        # publish, while its registration is refused as long as the previous incarnation's
        # session is valid: it acts under that incarnation's ISR membership, and the unclean
        # shutdown its registration reports then takes it out of an ELR that its own fetches
        # earned (`finding-elr-restarted-replica-dropped`)
        self.fetch_held = self.protocol.kraft_replicates_once_registered
        self._schedule_heartbeat(0)
        self._arm_timers()
        self.set_timer(0, "meta_fetch")

    def _controller_guess(self) -> str:
        if self.meta_leader is not None:
            return self.meta_leader
        self.bootstrap += 1
        return self.voters[self.bootstrap % len(self.voters)]

    def _heartbeat(self) -> None:
        dst = self._controller_guess()
        if not self.registered:
            self.send(dst, "BrokerRegistration", BrokerRegistration(
                self.id, self.incarnation, self.previous_broker_epoch))
        else:
            self.send(dst, "BrokerHeartbeat",
                      BrokerHeartbeat(self.id, self.broker_epoch, self.applied - 1,
                                      self.want_shutdown))
        self._schedule_heartbeat(self.cluster.broker_heartbeat_interval_ms * 1000)

    def _schedule_heartbeat(self, delay_us: int) -> None:
        """The next registration or heartbeat in `delay_us`, replacing the one scheduled."""
        self.heartbeat_token += 1
        self.set_timer(delay_us, "heartbeat", self.heartbeat_token)

    def on_registration_response(self, msg) -> None:
        resp = msg.body
        if resp.incarnation != self.incarnation or self.registered:
            return
        if resp.error:  # refused: try again soon (after-failure backoff)
            if resp.error == E.NOT_CONTROLLER:  # ... at another controller
                self.meta_leader = None
            self._schedule_heartbeat(RETRY_BACKOFF_US)
            return
        self.registered, self.broker_epoch = True, resp.broker_epoch
        if self.fetch_held:
            self.fetch_held = False
            for leader in sorted(self.fetchers):
                self._maybe_fetch(leader)
        self._learn_controller(msg.src)
        self._schedule_heartbeat(0)  # `BrokerLifecycleManager`: a heartbeat at once

    def on_heartbeat_response(self, msg) -> None:
        resp = msg.body
        if resp.error == E.STALE_BROKER_EPOCH:
            self.registered = False  # the controller lost this incarnation: register again
        elif resp.error == E.NONE and resp.should_shutdown:
            self.stop_cleanly()  # the controller let it go: its leaderships have moved
        elif resp.error == E.NONE:
            self._learn_controller(resp.leader)
            if not resp.fenced:
                self.serve()
            if resp.fenced:  # catching up: `BrokerLifecycleManager` asks again after 10 ms
                self._schedule_heartbeat(FENCED_HEARTBEAT_US)
            elif self.want_shutdown and not self.shutdown_answered:
                # the first answer in controlled shutdown: ask again after 50 ms
                # (`BrokerLifecycleManager.HeartbeatResponseEvent` at 3.7.0)
                self.shutdown_answered = True
                self._schedule_heartbeat(SHUTDOWN_HEARTBEAT_US)
        else:
            self.meta_leader = resp.leader if resp.leader != msg.src else None
            self._schedule_heartbeat(RETRY_BACKOFF_US)

    def _learn_controller(self, name: str | None) -> None:
        """The active controller is `name`: AlterPartitions go there, the unanswered ones again."""
        if name is None or name == self.controller:
            return
        self.controller = name
        self.resend_alters()

    # -- request processing ----------------------------------------------------------------
    def refuses(self, kind: str) -> bool:
        """While its ports are closed, what comes to them is refused: requests. Answers come
        back on the connections this broker opened (to controllers and leaders)."""
        return not kind.endswith("Response")

    def serve(self) -> None:
        """Request processing begins, once the controller has unfenced this broker (its first
        heartbeat answer saying so). From 3.5 (`kraft_port_opens_when_unfenced`, KAFKA-14658)
        its ports open only now; before, they were open from the start and the requests that
        came since, held unread, are read now in the order they came. Kafka 3.3-3.4 begins
        once the controller says it caught up, one heartbeat before it unfences it; the
        model's controller does both on the same heartbeat."""
        if self.processing:
            return
        self.processing, self.port_closed = True, False
        held, self.held_requests = self.held_requests, []
        for msg in held:
            Broker.on_message(self, msg)

    def on_message(self, msg) -> None:
        if not self.processing and self.refuses(msg.kind):  # a request, not an answer
            self.held_requests.append(msg)  # unread in its socket until processing begins
            return
        Broker.on_message(self, msg)

    def on_disconnect(self, peer: str) -> None:
        self.held_requests = [m for m in self.held_requests if m.src != peer]
        if peer == self.controller and not self.peer_alive(peer):  # its AlterPartitions wait
            self.controller = None  # for the next one learned, be it this node restarted
        Broker.on_disconnect(self, peer)

    def begin_shutdown(self) -> None:
        """`BrokerServer.shutdown` begins: in controlled shutdown (`isInControlledShutdown`)."""
        Broker.begin_shutdown(self)
        self.begin_controlled_shutdown()

    def begin_controlled_shutdown(self) -> None:
        """`BrokerServer.shutdown` with controlled.shutdown.enable: from now on its heartbeats
        ask to shut down (WantShutDown), the first at once; it stops when an answer says
        ShouldShutDown, or when the fault's stop comes first (Kafka waits up to 5 minutes)."""
        self.want_shutdown = True
        self._schedule_heartbeat(0)

    def stop_cleanly(self) -> None:
        """A clean stop: HWs checkpointed, logs flushed, the clean-shutdown files written with
        its broker epoch (`LogManager.shutdown`), the process exits (fenced by the controlled
        shutdown, else when its session expires)."""
        if self.alive:
            self.checkpoint_hws()
            self.close_logs()
            self.clean_shutdown_epoch = self.broker_epoch
            self.exit_process()

    # -- the metadata log ------------------------------------------------------------------
    def on_timer(self, name: str, data) -> None:
        if name == "heartbeat":
            if data == self.heartbeat_token:
                self._heartbeat()
        elif name == "meta_fetch":
            self._meta_fetch()
        elif name == "meta_fetch_timeout":
            if data == self.meta_token and not self.applying:
                self._meta_fetch_timed_out()
        elif name == "meta_apply":
            self._apply(data)
        elif name == "allocate_pids_timeout":
            self.allocate_pids_timeout(data)
        elif name == "pid_block_wait":
            self.pid_block_wait_timeout(data)
        else:
            super().on_timer(name, data)

    def _apply(self, committed: list) -> None:
        start = self.applied
        touched, alive_changed = [], False
        for offset, epoch, record in committed:
            tps, brokers = self.image.replay(offset, record)
            self.applied, self.applied_epoch = offset + 1, epoch
            self.controller_epoch = max(self.controller_epoch, epoch)
            alive_changed |= brokers
            touched += [tp for tp in tps if tp not in touched]
            if record.kind == K.TOPIC:
                topic = self.store.topics.get(record.get("name"))
                self.formats[record.get("name")] = topic.message_format if topic else 2
        # the metadata cache takes the new image before the replicas meet the delta
        # (`BrokerMetadataPublisher.onMetadataUpdate`: `metadataCache.setImage`, then
        # `replicaManager.applyDelta`, 3.7.0), so a leader made or changed here already sees
        # a broker fenced or shutting down in the same batch as ISR-ineligible
        if alive_changed and self.image.usable() != self.alive_brokers:
            self.alive_brokers = self.image.usable()
            self.touch_all_sessions()
        else:
            alive_changed = False
        # one delta per batch, as `MetadataLoader` publishes: a replica meets the batch's
        # final state of each partition, not every step of it (a restart replays the log)
        changes = self._publish(touched)
        self.emit(V.METADATA_APPLY, {"from_offset": committed[0][0], "to_offset": self.applied,
                                     "expected_offset": start,
                                     "records": [r.kind for _o, _e, r in committed]})
        if changes or alive_changed:
            self.emit(V.METADATA, {"controller_epoch": self.controller_epoch, "changes": changes,
                                   "alive": list(self.alive_brokers)})
        self.flush_hw()
        self.applying = False
        self._meta_fetch()

    def _publish(self, touched: list[str]) -> list:
        """Apply a batch's partition changes; on the first publish since the broker started,
        delete its stray logs too, before or after making its replicas as its release does
        (`rules.kraft.replica_made_before_strays_go`, KAFKA-14616). The model's first publish
        is its first applied batch, which holds every committed record its first Fetch got
        (Kafka's `MetadataLoader` publishes once caught up to the high watermark)."""
        first, self.published = not self.published, True
        strays = kraft_rules.stray_logs(
            self.id, {tp: held[0] for tp, held in self.logs.items()}, self.image.parts) \
            if first else []
        if not kraft_rules.replica_made_before_strays_go(self.protocol, first):
            self._delete_strays(strays)
            return self._apply_partitions(touched)
        # the replica over another topic id's log dir fails to be made
        changes = self._apply_partitions(touched, blocked=set(strays))
        self._delete_strays(strays)
        return changes

    def _delete_strays(self, tps: list[str]) -> None:
        """`LogManager.findStrayReplicas`' logs go, with any partition hosted under them."""
        for tp in tps:
            if tp in self.logs:
                self._remove_local(tp, {"reason": "stray"})

    def _apply_partitions(self, tps: list[str], blocked: set = frozenset()) -> list:
        """`ReplicaManager.applyDelta` for the partitions a batch changed (none of `blocked`
        is made); returns the metadata cache's changes."""
        changes = []
        for tp in tps:
            st = self.image.parts.get(tp)
            if st is None:  # removed with its topic
                self._remove_local(tp)
                if self.metadata.pop(tp, None) is not None:
                    self.touch_sessions(tp)
                    changes.append([tp, -1, -2])
                continue
            entry = (st.topic_id, st.leader, st.leader_epoch)
            if self.metadata.get(tp) != entry:
                self.metadata[tp] = entry
                self.touch_sessions(tp)
                changes.append([tp, st.leader, st.leader_epoch])
            if self.id not in st.replicas:
                # `TopicDelta.localChanges` deletes: a reassignment took this broker out
                if tp in self.partitions or (tp in self.logs and self.logs[tp][0] == st.topic_id):
                    self._remove_local(tp)
                continue
            p = self.partitions.get(tp)
            if self.rules.kraft_skips_follower_delta(
                    self.protocol, self.shutting_down, st.leader == self.id,
                    p is not None and p.leader == self.id):
                continue  # KAFKA-14296: a leader moved away stays leader while it shuts down
            if not self.on_failed_disk(tp) and tp not in blocked:
                if p is None or p.topic_id != st.topic_id or self.rules.kraft_broker_takes_partition(
                        p.leader_epoch, p.partition_epoch, st.leader_epoch, st.partition_epoch):
                    self._become(st)
        return changes

    def _remove_local(self, tp: str, fields: dict | None = None) -> None:
        """A partition whose topic was removed (or a stray log): its replica here stops and is
        deleted, the `log_deleted` event carrying `fields`."""
        p = self.partitions.get(tp)
        if p is None and tp not in self.logs:
            return
        self.remove_from_fetchers(tp)
        if p is not None:
            self.fail_waiters(tp)
        self._delete_replica(tp, self.logs[tp][0] if tp in self.logs else p.topic_id, None,
                             fields)

    _handlers = {**Broker._handlers,
                 "QuorumFetchResponse": MetadataLogFetcher.on_quorum_fetch_response,
                 "BrokerRegistrationResponse": on_registration_response,
                 "BrokerHeartbeatResponse": on_heartbeat_response,
                 "AllocateProducerIdsResponse": Broker.on_allocate_producer_ids_response}

