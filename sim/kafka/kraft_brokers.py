"""Brokers' registrations, heartbeats and sessions on a KRaft controller (mixin of
`KraftController`), as `ClusterControlManager`, `BrokerHeartbeatManager` and
`ReplicationControlManager` handle them (read at 3.3.0-3.7.0).

Contract:
- a BrokerRegistration writes a RegisterBrokerRecord (fenced; its offset is the broker epoch)
  unless `rules.kraft_duplicate_registration` refuses it (DUPLICATE_BROKER_REGISTRATION);
- a BrokerHeartbeat of the registered epoch moves its broker to the state
  `rules.kraft_next_broker_state` decides and writes what that takes (`_heartbeat_moves`); one
  of another epoch is STALE_BROKER_EPOCH; an answer reporting a change waits for its commit;
- `_check_sessions` (every controller tick) fences each unfenced broker silent for
  broker.session.timeout.ms, one at a time in the order of their last contact.
The host provides `image`, `heartbeats`, `heartbeat_offsets`, `shutdown_offsets`, `rules`,
`cluster`, `now_us`, `name`, `leader`, `send`, `_write`, `_written_last`, `_change_broker`,
`change_partition`, `_answer_when_committed` and `_not_controller`.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import kraft_messages as K
from sim.kafka.kraft_messages import BrokerHeartbeatResponse, BrokerRegistrationResponse
from sim.kafka.rules import kraft_elr
from sim.kafka.rules.kraft import CONTROLLED_SHUTDOWN, FENCED, SHUTDOWN_NOW, UNFENCED


class KraftBrokers:
    def on_broker_registration(self, msg) -> None:
        req = msg.body
        if self._not_controller(msg, "BrokerRegistrationResponse",
                                BrokerRegistrationResponse(E.NOT_CONTROLLER, -1, req.incarnation)):
            return
        reg = self.image.brokers.get(req.broker)
        if self.rules.kraft_duplicate_registration(
                reg is not None, reg is not None and reg.incarnation == req.incarnation,
                reg is not None and not reg.fenced and self._heard_within_session(req.broker)):
            self.send(msg.src, "BrokerRegistrationResponse", BrokerRegistrationResponse(
                E.DUPLICATE_BROKER_REGISTRATION, -1, req.incarnation))
            return
        if reg is None or reg.incarnation != req.incarnation:
            self._handle_shutdown(req.broker, reg, req.previous_broker_epoch)
        offset = self._write(K.MetadataRecord.of(K.REGISTER_BROKER, broker=req.broker,
                                                 fenced=True, incarnation=req.incarnation))
        self.heartbeats[req.broker] = self.now_us
        self._answer_when_committed(offset, msg.src, "BrokerRegistrationResponse",
                                    BrokerRegistrationResponse(E.NONE, offset, req.incarnation))

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
        req = msg.body
        if self._not_controller(msg, "BrokerHeartbeatResponse",
                                BrokerHeartbeatResponse(E.NOT_CONTROLLER, True, self.leader)):
            return
        reg = self.image.brokers.get(req.broker)
        if reg is None or reg.epoch != req.broker_epoch:
            self.send(msg.src, "BrokerHeartbeatResponse",
                      BrokerHeartbeatResponse(E.STALE_BROKER_EPOCH, True, self.name))
            return
        state = self.rules.kraft_next_broker_state(
            self._broker_state(reg), req.want_shutdown, req.metadata_offset >= reg.epoch,
            self.image.has_leaderships(req.broker), self.shutdown_offsets.get(req.broker, -1),
            self._lowest_active())
        self.heartbeats[req.broker] = self.now_us
        self.heartbeat_offsets[req.broker] = req.metadata_offset
        self._heartbeat_moves(msg.src, req.broker, reg, state)

    def _broker_state(self, reg) -> str:
        """`BrokerHeartbeatManager.currentBrokerState`: CONTROLLED_SHUTDOWN, FENCED or UNFENCED."""
        if reg.in_controlled_shutdown and not reg.fenced:
            return CONTROLLED_SHUTDOWN
        return FENCED if reg.fenced else UNFENCED

    def _heartbeat_moves(self, src: str, broker: int, reg, state: str) -> None:
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
                E.NONE, reg.fenced, self.name))
            return
        if state == UNFENCED:
            self._change_broker(broker, reg, fenced=False)
            self._partition_changes(broker, leaving=False)
            self.send(src, "BrokerHeartbeatResponse", BrokerHeartbeatResponse(
                E.NONE, False, self.name))
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
                                                            self.name, state == SHUTDOWN_NOW))

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
        limit = self.cluster.broker_session_timeout_ms * 1000
        return self.now_us - self.heartbeats.get(broker, 0) <= limit

    def _check_sessions(self) -> None:
        """Fence every unfenced broker silent for broker.session.timeout.ms, one at a time in
        the order of their last contact, each followed by the partition changes it brings, so
        that the next sees them (`ReplicationControlManager.maybeFenceOneStaleBroker` at
        3.7.0, `BrokerHeartbeatManager.findOneStaleBroker`)."""
        stale = sorted((self.heartbeats.get(b, 0), b) for b, reg in self.image.brokers.items()
                       if not reg.fenced and not self._heard_within_session(b))
        for _, b in stale:
            self._change_broker(b, self.image.brokers[b], fenced=True)
            self._partition_changes(b, leaving=True)

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
