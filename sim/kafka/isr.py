"""Leader-side replica state: follower progress, the high watermark, ISR changes (KIP-497).

Contract (mixin of `Broker`): a follower's Fetch updates its `Replica` state, may propose it
for the ISR (`follower_joins_isr`) and moves the HW (`maybe_increment_leader_hw`); followers
out of sync for replica.lag.time.max.ms are proposed out (`is_follower_out_of_sync`). ISR
changes go to the controller as AlterPartition, resent until answered; the leader never bumps
the leader epoch itself (a KRaft controller up to 3.5 does on a shrink), and an answer for
another leader epoch is ignored (ref §1.4 step 5).
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.messages import AlterPartition
from sim.kafka.rules.replication import (
    ALTER_PARTITION_RETRY_MS,
    alter_partition_request_retried,
    alter_partition_requeued,
)


class IsrManager:
    def _follower_progress(self, p, replica_id: int, fetch_offset: int,
                           replica_epoch: int, log_start: int = -1) -> None:
        f = p.followers.get(replica_id)
        if f is None:
            return
        known_leo = f.leo
        f.fetched(fetch_offset, p.log.leo, self.now_us)
        f.broker_epoch = replica_epoch
        if f.log_start != log_start:
            f.log_start = log_start
            self.check_delete_waiters(p.tp)  # the low watermark may have moved
        if self.rules.follower_joins_isr(self.protocol, replica_id in p.isr,
                                         p.pending_isr is not None, fetch_offset, p.log.hw,
                                         p.leader_epoch_start_offset,
                                         self.isr_eligible(replica_id, f)):
            self._alter_isr(p, tuple(sorted(p.isr + (replica_id,))))
            if p.pending_isr is None:  # no controller known yet: the next Fetch asks again
                self.touch_sessions(p.tp)
        if f.leo != known_leo:  # `updateFollowerFetchState`: only a moved log end moves the HW
            self.maybe_advance_hw(p)

    def isr_eligible(self, replica_id: int, f) -> bool:
        """`Partition.isReplicaIsrEligible`: the metadata cache lists the follower alive and,
        in KRaft with KIP-903, its last Fetch came from the incarnation the cache knows."""
        return replica_id in self.alive_brokers and self.rules.isr_broker_epoch_eligible(
            self.protocol, self.kraft, f.broker_epoch, self.cached_broker_epoch(replica_id))

    def cached_broker_epoch(self, replica_id: int) -> int | None:
        """The broker epoch the metadata cache holds for a live broker (None: none known; a
        ZooKeeper-mode cache keeps none the leader checks)."""
        return None

    def min_isr(self, p) -> int:
        """min.insync.replicas for `p` (`Partition.effectiveMinIsr`)."""
        return self.rules.effective_min_isr(self.protocol, self.cluster.min_insync_replicas,
                                            len(p.replicas))

    def maybe_advance_hw(self, p) -> None:
        """Move the leader's HW to what its ISR has (`maybe_increment_leader_hw`)."""
        if not p.is_leader:
            return
        log = p.log
        hw = self.leader_hw_candidate(p)
        if hw is not None:
            log.set_hw(hw)
            self.touch_sessions(p.tp)
            self.hw_buf.append([p.tp, p.topic_id, hw, p.leader_epoch])
            self._check_waiters(p.tp)
            self._wake_parked(p.tp, "consumers")

    def leader_hw_candidate(self, p) -> int | None:
        """The HW `maybe_increment_leader_hw` moves `p` to now, or None when it stays."""
        return self.rules.maybe_increment_leader_hw(
            self.protocol, p.log.leo, p.log.hw, len(p.isr), self.cluster.min_insync_replicas,
            len(p.replicas), self.rules.maximal_isr(p.isr, p.pending_isr), p.followers,
            self.now_us, self.cluster.replica_lag_time_max_ms, self.isr_eligible)

    def flush_hw(self) -> None:
        if self.hw_buf:
            self.emit(V.HW, {"role": "leader", "hws": self.hw_buf})
            self.hw_buf = []

    def check_isr_shrink(self) -> None:
        """Propose an ISR without the followers that have not caught up for
        replica.lag.time.max.ms (`Partition.maybeShrinkIsr`)."""
        for tp in sorted(self.partitions):
            p = self.partitions[tp]
            if not p.is_leader or p.pending_isr is not None:
                continue
            laggards = [r for r in p.isr if r != self.id and self._out_of_sync(p, r)]
            if laggards:
                self._alter_isr(p, tuple(r for r in p.isr if r not in laggards))

    def _out_of_sync(self, p, replica_id: int) -> bool:
        """`isFollowerOutOfSync`: not caught up for replica.lag.time.max.ms; with
        `idle_follower_in_sync` (KAFKA-7152, 2.1) never while its log end is the leader's, so
        the followers of a partition nobody writes to stay in the ISR."""
        f = p.followers.get(replica_id)
        return self.rules.is_follower_out_of_sync(
            self.protocol, f is not None, f.leo if f else -1, p.log.leo,
            f.caught_up_as_of() if f else -1, self.now_us, self.cluster.replica_lag_time_max_ms)

    def _alter_isr(self, p, isr: tuple) -> None:
        if self.controller is None:
            return
        if p.tp in self.alter_slots and self.rules.one_alter_partition_per_partition(
                self.protocol):
            # `AlterPartitionManager.submit` refuses a second change while one is unanswered
            # (OPERATION_NOT_ATTEMPTED), and `handleAlterPartitionError` leaves the partition
            # as committed: nothing is sent and nothing is pending
            return
        self.alter_corr += 1
        p.pending_isr = isr
        self.touch_sessions(p.tp)
        epochs = self.rules.alter_partition_isr_epochs(
            self.protocol, self.kraft, isr, self.id, self.broker_epoch,
            {r: f.broker_epoch for r, f in p.followers.items()})
        p.alter_request = AlterPartition(
            self.alter_corr, self.id, p.tp, p.leader_epoch, p.partition_epoch, isr,
            isr_epochs=epochs, topic_id=p.topic_id if self.protocol.alter_partition_topic_ids else 0)
        self._send_alter(p)

    def _send_alter(self, p) -> None:
        """Send (or send again) the partition's AlterPartition to the controller this broker
        knows. Kafka's BrokerToControllerChannelManager keeps the request queued until it is
        answered: a closed connection or a timeout (`controller.socket.timeout.ms`) sends it
        again, to whichever controller the metadata cache names by then."""
        p.alter_request = self._stamped(p.alter_request)
        self.alter_slots[p.tp] = p.alter_request
        self._send_slot(p.tp)

    def _stamped(self, req):
        """`req` carrying the broker epoch this broker has now, as each send does
        (`AlterPartitionManager`'s `brokerEpochSupplier`)."""
        return req._replace(
            broker_epoch=self.rules.alter_partition_broker_epoch(self.protocol, self.broker_epoch))

    def _send_slot(self, tp: str) -> None:
        """Send the AlterPartition held for `tp`, with the timer that sends it again; with no
        controller known it waits for the next (`resend_alters`)."""
        if self.controller is None:
            return
        req = self.alter_slots[tp]
        self.send(self.controller, "AlterPartition", req)
        sends = self.alter_sends[tp] = self.alter_sends.get(tp, 0) + 1
        # the timer names this send, so a resend to a new controller starts the only clock
        self.set_timer(V.CONTROLLER_SOCKET_TIMEOUT_US, "alter_timeout", (tp, req.corr, sends))

    def resend_alters(self) -> None:
        """A new controller took over: unanswered AlterPartitions go to it."""
        if not self.rules.controller_channel_resends(self.protocol):
            return
        for tp in self.alters_to_resend():
            self._send_slot(tp)

    def alters_to_resend(self) -> list[str]:
        """The partitions whose AlterPartition is still to be sent until answered, in order."""
        return [tp for tp in sorted(self.alter_slots)
                if self._still_wanted(tp, self.alter_slots[tp].corr)]

    def _still_wanted(self, tp: str, corr: int) -> bool:
        """Whether the AlterPartition `corr` for `tp` is still to be sent until answered: the
        one the manager holds (2.7+, even once the partition's state moved on), else the one
        the partition, still led here, waits for."""
        if self.rules.one_alter_partition_per_partition(self.protocol):
            slot = self.alter_slots.get(tp)
            return slot is not None and slot.corr == corr
        p = self.partitions.get(tp)
        return p is not None and p.is_leader and p.alter_request is not None \
            and p.alter_request.corr == corr

    def _alter_retry(self, tp: str, corr: int, send: int) -> None:
        """Send again an AlterPartition refused as a whole (STALE_BROKER_EPOCH), unless it was
        answered, replaced or sent again meanwhile; with the broker epoch it has now."""
        if send == self.alter_sends.get(tp) and self._still_wanted(tp, corr):
            self.alter_slots[tp] = self._stamped(self.alter_slots[tp])
            self._send_slot(tp)

    def _alter_timeout(self, tp: str, corr: int, send: int) -> None:
        if not self.rules.controller_channel_resends(self.protocol):
            return
        if send == self.alter_sends.get(tp) and self._still_wanted(tp, corr):
            self.reset_connection(self.controller)
            self._send_slot(tp)

    def controller_refused(self, tp: str) -> None:
        """The controller answered `tp`'s AlterPartition NOT_CONTROLLER: the channel keeps it
        for the controller the broker knows next. In ZooKeeper mode the metadata cache still
        names the same one, so it goes again at once (`MetadataCacheControllerNodeProvider`);
        in KRaft mode it waits for the quorum leader the broker hears of next
        (`RaftControllerNodeProvider`; `KraftBroker._learn_controller` sends it)."""
        if self.kraft:
            self.controller = None
        else:
            self._send_slot(tp)

    def on_alter_partition_response(self, msg) -> None:
        resp = msg.body
        slot = self.alter_slots.get(resp.tp)
        if slot is not None and slot.corr == resp.corr:
            if alter_partition_requeued(self.protocol, resp.error):
                self.controller_refused(resp.tp)
                return
            if alter_partition_request_retried(resp.error):
                self.set_timer(ALTER_PARTITION_RETRY_MS * 1000, "alter_retry",
                               (resp.tp, resp.corr, self.alter_sends[resp.tp]))
                return
            del self.alter_slots[resp.tp]  # answered: the manager takes the next change
        p = self.partitions.get(resp.tp)
        if p is None or not p.is_leader or p.alter_request is None \
                or p.alter_request.corr != resp.corr:
            return  # an answer to a request this leader no longer waits for
        outcome = self.rules.alter_partition_answer(
            self.protocol, resp.error, resp.leader_epoch, p.leader_epoch, resp.partition_epoch,
            p.partition_epoch)
        if outcome == "retry":
            self._send_alter(p)
            return
        # "pending": the change stays in flight, answered, until new metadata replaces it
        p.alter_request = None
        if outcome == "pending":
            return
        p.pending_isr = None
        self.touch_sessions(p.tp)
        if outcome == "commit":
            p.isr = resp.isr
            p.partition_epoch = resp.partition_epoch
            self.maybe_advance_hw(p)
        self.flush_hw()
