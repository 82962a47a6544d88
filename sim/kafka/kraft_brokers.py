"""Brokers' registrations, heartbeats and sessions on a KRaft controller (mixin of
`KraftController`), as `ClusterControlManager`, `BrokerHeartbeatManager` and
`ReplicationControlManager` handle them (read at 3.3.0-3.9.0-rc3).

Contract:
- a BrokerRegistration writes a RegisterBrokerRecord (`kraft_sessions.registration_record`:
  its broker epoch the offset of the registration's first record, fenced unless the same
  incarnation's state is kept) unless `rules.kraft_duplicate_registration` refuses it
  (DUPLICATE_BROKER_REGISTRATION);
- a BrokerHeartbeat of the registered epoch moves its broker to the state
  `rules.kraft_next_broker_state` decides and writes what that takes (`_heartbeat_moves`); one
  of another epoch is STALE_BROKER_EPOCH; an answer reporting a change waits for its commit;
- a check scheduled for when the longest-silent unfenced broker's session runs out
  (`reschedule_fence_check`, `on_fence_check`) fences it, then looks again at once: stale
  brokers are fenced one at a time in the order of their last contact;
- a heartbeat that expired in the controller's queue (a probe's) only renews the session.
The host provides `image`, `heartbeats`, `heartbeat_offsets`, `shutdown_offsets`,
`fence_token`, `active`, `rules`, `protocol`, `cluster`, `now_us`, `name`, `leader`,
`next_offset`, `send`, `set_timer`, `_write`, `_written_last`, `_change_broker`,
`change_partition`, `_answer_when_committed` and `_not_controller`.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import kraft_messages as K
from sim.kafka.kraft_messages import BrokerHeartbeatResponse, BrokerRegistrationResponse
from sim.kafka.rules import kraft_elr, kraft_sessions
from sim.kafka.rules.kraft import CONTROLLED_SHUTDOWN, FENCED, SHUTDOWN_NOW, UNFENCED


class KraftBrokers:
    def on_broker_registration(self, msg) -> None:
        """`QuorumController.registerBroker` / `ClusterControlManager.registerBroker`: refuse a
        new incarnation while the registered one's session is valid; else write the unclean
        shutdown's changes (a new incarnation, KIP-966), then the RegisterBrokerRecord
        `kraft_sessions.registration_record` gives, whose broker epoch is the offset of the
        first record written; the session starts afresh (a new incarnation's old session is
        removed: `heartbeatManager.remove`, then `register`) and the answer waits for the
        commit."""
        req = msg.body
        if self._not_controller(msg, "BrokerRegistrationResponse",
                                BrokerRegistrationResponse(E.NOT_CONTROLLER, -1, req.incarnation)):
            return
        reg = self.image.brokers.get(req.broker)
        same = reg is not None and reg.incarnation == req.incarnation
        if self.rules.kraft_duplicate_registration(
                reg is not None, same,
                reg is not None and not reg.fenced and self._heard_within_session(req.broker)):
            self.send(msg.src, "BrokerRegistrationResponse", BrokerRegistrationResponse(
                E.DUPLICATE_BROKER_REGISTRATION, -1, req.incarnation))
            return
        first = self.next_offset  # `offsetControl.nextWriteOffset()`: the new broker epoch
        if not same:
            self._handle_shutdown(req.broker, reg, req.previous_broker_epoch)
        rec = kraft_sessions.registration_record(self.protocol, reg, same, first)
        offset = self._write(K.MetadataRecord.of(
            K.REGISTER_BROKER, broker=req.broker, fenced=rec.fenced, incarnation=req.incarnation,
            broker_epoch=rec.broker_epoch, in_controlled_shutdown=rec.in_controlled_shutdown))
        self._register_session(req.broker, reg if same else None, rec.fenced)
        self.reschedule_fence_check()
        self._answer_when_committed(offset, msg.src, "BrokerRegistrationResponse",
                                    BrokerRegistrationResponse(E.NONE, rec.broker_epoch,
                                                               req.incarnation))

    def _register_session(self, broker: int, kept, fenced: bool) -> None:
        """`BrokerHeartbeatManager.register` after a registration: the session of the
        registration `kept` (same incarnation), or a new one, touched now as `fenced` (a
        fenced session leaves controlled shutdown), its metadata offset as
        `kraft_sessions.registered_session_offset` says."""
        offset = kraft_sessions.registered_session_offset(
            None if kept is None else kept.fenced, fenced, self.heartbeat_offsets.get(broker, -1))
        self._touch(broker, offset)
        if fenced or kept is None:
            self.shutdown_offsets.pop(broker, None)

    def _touch(self, broker: int, metadata_offset: int) -> None:
        """`BrokerHeartbeatManager.touch`: last contact now, the offset reported; the broker
        goes to the end of the last-contact order (re-inserted: the dict keeps touch order,
        which breaks ties of equal contact times as Kafka's list does)."""
        self.heartbeats.pop(broker, None)
        self.heartbeats[broker] = self.now_us
        self.heartbeat_offsets[broker] = metadata_offset

    def _handle_shutdown(self, broker: int, reg, previous_broker_epoch: int) -> None:
        """A new incarnation registers: with `eligible_leader_replicas` (KIP-966,
        `ReplicationControlManager.handleBrokerShutdown`, written before its
        RegisterBrokerRecord) the partition changes its last shutdown brings: after an
        unclean one (`rules.kraft_elr.clean_shutdown`) it leaves every ISR and ELR it is in
        and may lead none (`handleBrokerUncleanShutdown`); after a clean one it leaves the
        ISRs as a fenced broker does. Without ELR nothing is written: partitions the previous
        incarnation led or followed in keep it, fenced, until a change touches them
        (3.3.0-3.9.0; 4.x's arm that takes it out of the ISRs without ELR is not modelled)."""
        if not self.protocol.eligible_leader_replicas:
            return
        clean = kraft_elr.clean_shutdown(reg.epoch if reg else None, previous_broker_epoch)
        in_isr = [tp for tp in sorted(self.image.parts) if broker in self.image.parts[tp].isr]
        for tp in in_isr:
            st = self.image.parts[tp]
            self.change_partition(st, tuple(r for r in st.isr if r != broker), without=broker,
                                  unclean_shutdown=() if clean else (broker,))
        if clean:
            return
        for tp in sorted(self.image.parts):
            st = self.image.parts[tp]
            if broker in st.elr:
                self.change_partition(st, st.isr, without=broker, unclean_shutdown=(broker,))

    def on_broker_heartbeat(self, msg) -> None:
        """`ReplicationControlManager.processBrokerHeartbeat`: STALE_BROKER_EPOCH unless the
        registration has the heartbeat's epoch; else the next state
        (`rules.kraft_next_broker_state`; caught up means at its RegisterBrokerRecord's offset,
        `registerBrokerRecordOffset`), the session touched, and the move written. A heartbeat
        that expired in the controller's queue (`expired`) goes to `_expired_heartbeat`."""
        req = msg.body
        if self._not_controller(msg, "BrokerHeartbeatResponse",
                                BrokerHeartbeatResponse(E.NOT_CONTROLLER, True, self.leader)):
            return
        reg = self.image.brokers.get(req.broker)
        if req.expired:
            self._expired_heartbeat(msg.src, req, reg)
            return
        if reg is None or reg.epoch != req.broker_epoch:
            self.send(msg.src, "BrokerHeartbeatResponse",
                      BrokerHeartbeatResponse(E.STALE_BROKER_EPOCH, True, self.name))
            return
        caught_up = req.metadata_offset >= reg.registered_at
        state = self.rules.kraft_next_broker_state(
            self._broker_state(reg), req.want_shutdown, caught_up,
            self.image.has_leaderships(req.broker), self.shutdown_offsets.get(req.broker, -1),
            self._lowest_active())
        self._touch(req.broker, req.metadata_offset)
        self._heartbeat_moves(msg.src, req.broker, reg, state, caught_up)
        self.reschedule_fence_check()

    def _expired_heartbeat(self, src: str, req, reg) -> None:
        """A heartbeat that waited in the controller's event queue past its deadline
        (broker.heartbeat.interval.ms / 2, `ControllerApis.handleBrokerHeartBeatRequest`): the
        event fails with a TimeoutException, answered REQUEST_TIMED_OUT, and with
        `kraft_expired_heartbeat_touches` (KAFKA-15019, 3.6) the session is renewed
        (`processExpiredBrokerHeartbeat`: `touch` with the registration's fenced state, so a
        fenced one leaves controlled shutdown) and nothing is written. The model's controller
        has no queue: only a probe sends one."""
        epoch = None if reg is None else reg.epoch
        if kraft_sessions.expired_heartbeat_renews(self.protocol, epoch, req.broker_epoch):
            self._touch(req.broker, req.metadata_offset)
            if reg.fenced:
                self.shutdown_offsets.pop(req.broker, None)
        self.send(src, "BrokerHeartbeatResponse",
                  BrokerHeartbeatResponse(E.REQUEST_TIMED_OUT, True, self.name))

    def _broker_state(self, reg) -> str:
        """`BrokerHeartbeatManager.currentBrokerState`: CONTROLLED_SHUTDOWN, FENCED or UNFENCED."""
        if reg.in_controlled_shutdown and not reg.fenced:
            return CONTROLLED_SHUTDOWN
        return FENCED if reg.fenced else UNFENCED

    def _heartbeat_moves(self, src: str, broker: int, reg, state: str, caught_up: bool) -> None:
        """Write what moving `broker` to `state` takes and answer its heartbeat
        (`ReplicationControlManager.processBrokerHeartbeat` at 3.3.0-3.7.0): nothing when the
        state stays; unfencing (a BrokerRegistrationChangeRecord, then the partition changes
        it lets happen); entering controlled shutdown (`handleBrokerInControlledShutdown`: the
        record, and the changes that move its leaderships and take it out of the ISRs, the
        batch's last offset its `controlledShutdownOffset`); SHUTDOWN_NOW fences it
        (`handleBrokerFenced`: the record is written even for a broker already fenced). An
        answer reporting a change waits for its commit."""
        if state == self._broker_state(reg):
            self.send(src, "BrokerHeartbeatResponse", BrokerHeartbeatResponse(
                E.NONE, reg.fenced, self.name, is_caught_up=caught_up))
            return
        if state == UNFENCED:
            self._change_broker(broker, reg, fenced=False)
            self._partition_changes(broker, leaving=False)
            self.send(src, "BrokerHeartbeatResponse", BrokerHeartbeatResponse(
                E.NONE, False, self.name, is_caught_up=caught_up))
            return
        if state == CONTROLLED_SHUTDOWN:
            self._change_broker(broker, reg, fenced=False, in_controlled_shutdown=True)
            self._partition_changes(broker, leaving=True)
            # the last offset of the batch just written (`processBatchEndOffset`)
            self.shutdown_offsets[broker] = self._written_last()
        else:  # SHUTDOWN_NOW
            self._change_broker(broker, reg, fenced=True)
            self._partition_changes(broker, leaving=True)
        self._answer_when_committed(self._written_last(), src, "BrokerHeartbeatResponse",
                                    BrokerHeartbeatResponse(E.NONE, state == SHUTDOWN_NOW,
                                                            self.name, state == SHUTDOWN_NOW,
                                                            caught_up))

    def unregister_broker(self, broker: int) -> str | None:
        """UnregisterBroker (`ReplicationControlManager.unregisterBroker`,
        `handleBrokerUnregistered` at 3.3.0-3.7.0): BROKER_ID_NOT_REGISTERED for a broker with
        no registration; else the partition changes that take it out of every ISR (one it led
        gets another leader from the rest of its ISR, or none), then an UnregisterBrokerRecord
        of its broker epoch: the registration is gone, and its session with it
        (`BrokerHeartbeatManager.remove`)."""
        reg = self.image.brokers.get(broker)
        if reg is None:
            return f"BROKER_ID_NOT_REGISTERED: Broker ID {broker} is not currently registered"
        self._partition_changes(broker, leaving=True)
        self._write(K.MetadataRecord.of(K.UNREGISTER_BROKER, broker=broker, broker_epoch=reg.epoch))
        for session in (self.heartbeats, self.heartbeat_offsets, self.shutdown_offsets):
            session.pop(broker, None)
        return None

    def _lowest_active(self) -> int:
        """`BrokerHeartbeatManager.lowestActiveOffset`: the lowest metadata offset an active
        (unfenced, not shutting down) broker last reported; -1 for one not heard from yet."""
        active = [self.heartbeat_offsets.get(b, -1) for b in self.image.usable()]
        return min(active) if active else 1 << 62

    def _heard_within_session(self, broker: int) -> bool:
        """Whether `broker` heartbeated (or registered) within broker.session.timeout.ms: an
        unfenced broker's session is then valid (`BrokerHeartbeatManager.hasValidSession`)."""
        return kraft_sessions.session_valid(self.heartbeats.get(broker, 0), self._session_us(),
                                            self.now_us)

    def _session_us(self) -> int:
        return self.cluster.broker_session_timeout_ms * 1000

    def unfenced_order(self) -> list[tuple[int, int]]:
        """`BrokerHeartbeatManager.unfenced()`: (last contact, broker) of each unfenced
        registered broker, by last contact, equal ones in the order they were touched."""
        return sorted(((self.heartbeats[b], b) for b in self.heartbeats
                       if b in self.image.brokers and not self.image.brokers[b].fenced),
                      key=lambda contact_broker: contact_broker[0])

    def reschedule_fence_check(self) -> None:
        """`QuorumController.rescheduleMaybeFenceStaleBrokers` (3.3.0-3.9.0), called after
        every registration and heartbeat, on activation and after each check: the next check
        at `BrokerHeartbeatManager.nextCheckTimeNs` (replacing the one scheduled), none while
        no broker is unfenced."""
        self.fence_token += 1
        at = kraft_sessions.next_check_us([c for c, _ in self.unfenced_order()],
                                          self._session_us())
        if at is not None:
            self.set_timer(max(0, at - self.now_us), "fence", self.fence_token)

    def on_fence_check(self, token: int) -> None:
        """The scheduled check (`maybeFenceOneStaleBroker`): fence the broker
        `kraft_sessions.one_stale_broker` finds, if any, with the partition changes it brings
        (`handleBrokerFenced`), then schedule the next check, at once if another is stale
        ("we will process fencing one at a time so that the effect of fencing each broker is
        visible to the system prior to processing the next one", 3.7.0)."""
        if not self.active or token != self.fence_token:
            return
        stale = kraft_sessions.one_stale_broker(self.unfenced_order(), self._session_us(),
                                                self.now_us)
        if stale is not None:
            self._change_broker(stale, self.image.brokers[stale], fenced=True)
            self._partition_changes(stale, leaving=True)
        self.reschedule_fence_check()

    def _partition_changes(self, broker: int, leaving: bool) -> None:
        """The partition changes a broker's move brings (`generateLeaderAndIsrUpdates`): for
        one `leaving` (fenced, or entering controlled shutdown), each partition with it in
        its ISR gets the ISR without it (`partitionsWithBrokerInIsr`); for one unfenced, each
        partition without a leader may get one (`partitionsWithNoLeader`). Other partitions
        are left alone, a fenced leader's too (see `on_broker_registration`)."""
        for tp in sorted(self.image.parts):
            st = self.image.parts[tp]
            if leaving and broker in st.isr:
                self.change_partition(st, tuple(r for r in st.isr if r != broker))
            elif not leaving and st.leader == E.NO_LEADER:
                self.change_partition(st, st.isr)
