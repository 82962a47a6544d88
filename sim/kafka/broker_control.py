"""Broker control plane: how a broker applies the controller's requests and answers Metadata.

Contract (mixin of `Broker`): LeaderAndIsr, UpdateMetadata and StopReplica are fenced as a whole
by `control_request_error` (KIP-380's broker epoch, then the controller epoch), then judged per
partition by the rules of `sim.kafka.rules.control` (ref §1.4, §1.5): a LeaderAndIsr makes the
broker leader or follower (`_become`), a FULL one removes strays (KAFKA-15605); an
UpdateMetadata replaces the metadata cache wholesale, or part by part under
`update_metadata_fence`; a StopReplica stops the fetcher and, with delete, deletes the replica.
A partition in a failed log directory answers both with KAFKA_STORAGE_ERROR, and a deletion
whose I/O fails answers it too and takes its directory offline (`ReplicaManager.stopReplicas`
catching KafkaStorageException, 2.6.0 and 3.7.0; `LogDirs`).
Metadata is answered from the broker's own, possibly stale, cache, naming no leader (-1) for
a leader the cache does not list alive.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.log import Log
from sim.kafka.messages import ControlResponse, MetadataResponse
from sim.kafka.partition import Partition
from sim.kafka.rules import control, inter_broker
from sim.kafka.rules.replication import follower_fetch_change


class ControlPlane:
    def _reply(self, msg, kind: str, body) -> None:
        self.send(msg.src, kind, body)

    def controlled_shutdown_broker_epoch(self) -> int:
        """The BrokerEpoch of this broker's ControlledShutdown: the epoch it last registered
        with from v2 (KIP-380, IBP 2.2; `KafkaServer.controlledShutdown`), else -1."""
        carried = inter_broker.control_carries_broker_epoch(self.protocol, self.store.ibp)
        return self.broker_epoch if carried else E.NO_EPOCH

    def _fenced_controller(self, msg) -> bool:
        """STALE_BROKER_EPOCH / STALE_CONTROLLER_EPOCH for a whole control request, in that
        order: KafkaApis checks the broker epoch before ReplicaManager sees the controller
        epoch (ref §1.4 broker step 1)."""
        req = msg.body
        error = self.rules.control_request_error(self.protocol, getattr(req, "broker_epoch", -1),
                                                 self.broker_epoch, req.controller_epoch,
                                                 self.controller_epoch)
        if error == E.STALE_CONTROLLER_EPOCH:
            self.emit(V.STALE_CONTROLLER, {"request": msg.kind,
                                           "req_controller_epoch": req.controller_epoch,
                                           "local_controller_epoch": self.controller_epoch})
        if error:
            self._reply(msg, msg.kind + "Response", ControlResponse(req.corr, error))
            return True
        if req.controller_epoch > self.controller_epoch and self.alters_to_resend():
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
        errors, rejected, unavailable = [], [], []
        stamp = (req.controller_epoch, req.corr)
        decide = self.rules.leader_and_isr_partition
        for st in req.partitions:
            if self.on_failed_disk(st.tp):  # `HostedPartition.Offline`: left alone
                errors.append((st.tp, E.KAFKA_STORAGE_ERROR))
                continue
            p = self.partitions.get(st.tp)
            local = p.leader_epoch if p is not None else self._deleted_epoch(st)
            decision = decide(self.protocol, p is not None,
                              p is not None and p.topic_id == st.topic_id, local,
                              p.partition_epoch if p is not None else -1, st.leader_epoch,
                              st.partition_epoch, self.id in st.replicas)
            if decision.become and st.leader != self.id and st.leader not in self.alive_brokers:
                self._host(st)
                unavailable.append([st.tp, st.leader, st.leader_epoch, local])
                errors.append((st.tp, E.NONE))
                continue
            if decision.become:
                self._become(st, force=decision.reset_epochs)
                self.partitions[st.tp].lai_stamp = stamp
                errors.append((st.tp, E.NONE))  # the response lists every partition it names
                continue
            if decision.error == E.STALE_CONTROLLER_EPOCH:
                rejected.append([st.tp, st.leader_epoch, local, E.STALE_CONTROLLER_EPOCH])
            errors.append((st.tp, decision.error))
        if rejected:
            self.emit(V.LAI_REJECTED, {"controller_epoch": req.controller_epoch, "partitions": rejected})
        if unavailable:
            self.emit(V.LAI_LEADER_UNAVAILABLE, {"controller_epoch": req.controller_epoch,
                                                 "partitions": unavailable})
        if req.full and self.protocol.full_leader_and_isr:
            # Kafka's broker removes them only in the ZooKeeper migration, from a KRaft
            # controller (`becomeLeaderOrFollower` at 3.7.0, KAFKA-15605): not modelled
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
            if not control.is_stray(tp in assigned, p.lai_stamp if p is not None else None, stamp):
                continue
            if p is not None:
                self.remove_from_fetchers(tp)
                self.fail_waiters(tp)
            self._delete_replica(tp, self.logs[tp][0], p.leader_epoch if p else None,
                                 {"reason": "stray"})
            if not self.alive:
                return  # the deletion failed in the broker's last log directory: it halted

    def _deleted_epoch(self, st) -> int:
        """The epoch a LeaderAndIsr for an unhosted replica must exceed: -1 (anything goes, as
        in every release), or with `leader_and_isr_delete_fence` the epoch at which this broker
        deleted the replica, so a LeaderAndIsr reordered behind that StopReplica cannot
        re-create it (a topic deletion, -2, fences every epoch of that topic id)."""
        tomb = self.deleted_epochs.get(st.tp)
        if tomb is None or tomb[0] != st.topic_id:
            return -1
        return tomb[1]

    def _host(self, st) -> Partition:
        """The partition `st` names, created with its log if this broker hosts none. Alone, it
        is what `makeFollowers` does with a follower's LeaderAndIsr whose leader the metadata
        cache does not list alive (leader -1 after an election that found no one among
        them): it changes nothing of the partition, neither its epoch nor its fetcher, and
        only creates the replica's log (KAFKA-1647), answering NONE (0.10.2.0 to 3.7.0)."""
        p = self.partitions.get(st.tp)
        if p is None:
            p = Partition(st.tp, st.topic_id, self._log_for(st.tp, st.topic_id), self.id)
            self.partitions[st.tp] = p
        return p

    def _become(self, st, force: bool = False) -> None:
        p = self._host(st)
        # the fetch sessions holding it read it again: before the parked Fetches that
        # `fail_waiters` answers, and after every change made here
        self.touch_sessions(st.tp)
        if force:
            p.partition_epoch = -1
            p.leader_epoch = min(p.leader_epoch, st.leader_epoch - 1)
        if st.leader == self.id:
            p.make_leader(st, self.now_us, self.protocol.epoch_cached_on_election)
            self.remove_from_fetchers(st.tp)
        else:
            leader_changed = p.leader != st.leader
            new_epoch = p.make_follower(st)
            change = follower_fetch_change(self.protocol, self.kraft, self.shutting_down,
                                           st.leader, self.id in st.isr, leader_changed,
                                           new_epoch)
            if change != "keep":
                self.fail_waiters(st.tp)
            if change == "restart":
                self.add_to_fetcher(st.tp, st.leader, leader_changed, new_epoch)
            elif change == "stop":
                self.remove_from_fetchers(st.tp)
        self.touch_sessions(st.tp)
        self.fetch_state_changed(st.tp)
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
        log = Log(self.protocol.epoch_cached_on_election)
        self.logs.pop(tp, None)
        self.place_log(tp)
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
        stamp = (req.controller_epoch, req.corr)
        stamps = self.metadata_stamps
        changes, skipped = [], []
        taken = self.rules.update_metadata_part_taken
        for st in req.partitions:
            if not taken(self.protocol, stamps.get(st.tp), stamp):
                skipped.append(st.tp)
                continue
            stamps[st.tp] = stamp
            entry = (st.topic_id, st.leader, st.leader_epoch)
            if self.metadata.get(st.tp) != entry:
                self.metadata[st.tp] = entry
                self.touch_sessions(st.tp)
                changes.append([st.tp, st.leader, st.leader_epoch])
        for tp in req.deleted:
            if not taken(self.protocol, stamps.get(tp), stamp):
                skipped.append(tp)
                continue
            stamps[tp] = stamp
            if self.metadata.pop(tp, None) is not None:
                self.touch_sessions(tp)
                changes.append([tp, -1, -2])
        stale_alive = not taken(self.protocol, self.alive_stamp, stamp)
        alive_changed = not stale_alive and self._apply_alive(req, stamp)
        if alive_changed:
            self.touch_all_sessions()
        if changes or alive_changed:
            self.emit(V.METADATA, {"controller_epoch": req.controller_epoch, "changes": changes,
                                   "alive": list(self.alive_brokers)})
        if skipped or stale_alive:
            self.emit(V.METADATA_FENCED, {"controller_epoch": req.controller_epoch,
                                          "corr": req.corr, "tps": skipped, "alive": stale_alive})
        if self.elections:  # `hasDelayedElectionOperations`: the partitions it names
            self.try_complete_elections([st.tp for st in req.partitions])
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
            if not self.alive:
                return  # a deletion failed in the broker's last log directory: it halted
        self._reply(msg, "StopReplicaResponse", ControlResponse(req.corr, E.NONE, tuple(errors)))

    def _stop_one(self, sp) -> int:
        p = self.partitions.get(sp.tp)
        fields = {"tp": sp.tp, "topic_id": sp.topic_id, "delete": sp.delete,
                  "req_epoch": sp.leader_epoch, "issued_epoch": sp.issued_epoch,
                  "local_epoch": p.leader_epoch if p else -1,
                  "controller_epoch": self.controller_epoch}
        if sp.tp in self.offline:  # `HostedPartition.Offline`: nothing is stopped
            self.emit(V.STOP_REPLICA, {**fields, "result": "offline",
                                       "error": E.KAFKA_STORAGE_ERROR})
            return E.KAFKA_STORAGE_ERROR
        if p is not None and not self.rules.stop_replica_epoch_allowed(
                self.protocol, sp.leader_epoch, p.leader_epoch):
            self.emit(V.STOP_REPLICA, {**fields, "result": "fenced", "error": E.FENCED_LEADER_EPOCH})
            return E.FENCED_LEADER_EPOCH
        # a deletion whose I/O fails (`stopPartitions` catching KafkaStorageException) still
        # stops and removes the partition, then answers KAFKA_STORAGE_ERROR
        error = E.KAFKA_STORAGE_ERROR if sp.delete and self.delete_fails(sp.tp) else E.NONE
        result = "storage_error" if error else "applied" if p else "not_hosted"
        self.emit(V.STOP_REPLICA, {**fields, "result": result, "error": error})
        # `ReplicaManager.stopPartitions`: the fetcher goes; a deleted replica's partition goes
        # too, and only then are its parked requests completed (`stopReplica` at 2.5,
        # `stopPartitions` from 2.6), so a parked Fetch is read again without the partition
        # and answered NOT_LEADER_OR_FOLLOWER. Without delete the partition is left as it is,
        # a leader still leading: `completeDelayedFetchOrProduceRequests` then completes only
        # what can complete, so its parked requests wait on
        self.remove_from_fetchers(sp.tp)
        if sp.delete:
            self._delete_replica(sp.tp, sp.topic_id, control.delete_fence_epoch(
                sp.leader_epoch, p.leader_epoch if p is not None else None))
            if self.alive:  # a failed deletion in its last log directory halted it
                self.fail_waiters(sp.tp)
        return error

    def _delete_replica(self, tp: str, topic_id: int, fence_epoch: int | None,
                        fields: dict | None = None) -> None:
        """Delete a stopped replica (no fetcher, no parked requests): its partition state and
        its log, with a `log_deleted` event (plus `fields`) when there was a log. With
        `leader_and_isr_delete_fence` the broker remembers `fence_epoch` (None: nothing), so a
        LeaderAndIsr reordered behind the deletion cannot re-create the replica."""
        self.partitions.pop(tp, None)
        self.touch_sessions(tp)
        if fence_epoch is not None and self.protocol.leader_and_isr_delete_fence:
            self.deleted_epochs[tp] = control.kept_delete_fence(
                self.deleted_epochs.get(tp), topic_id, fence_epoch)
        if self.delete_fails(tp):
            self.fail_delete(tp)
            return
        held = self.logs.pop(tp, None)
        if held is not None:
            self.log_dir_of.pop(tp, None)
            self.emit(V.LOG_DELETED, {"tp": tp, "topic_id": held[0], **(fields or {})})

    # -- Metadata --------------------------------------------------------------------------
    def on_metadata(self, msg) -> None:
        alive = self.alive_brokers
        parts = tuple((tp, tid, control.metadata_answer_leader(leader, alive), epoch)
                      for tp, (tid, leader, epoch) in sorted(self.metadata.items()))
        formats = tuple(sorted(self.formats.items()))
        self._reply(msg, "MetadataResponse",
                    MetadataResponse(msg.body.corr, self.alive_brokers, parts, formats))
