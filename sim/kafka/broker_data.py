"""Broker data plane: Produce, parked acks=all requests, the data-plane timers.

Contract (mixin of `Broker`): Produce is checked in the order of ref §1.1-1.2 (hosted?, KIP-359
epoch check when the switch is on, leadership, min ISR for acks=all), then the idempotent
append check, and appended with the leader's epoch; acks=all responses wait until the HW covers
the batch (or leadership is lost, or the request times out), and say
NOT_ENOUGH_REPLICAS_AFTER_APPEND if by then the ISR is below min.insync.replicas, or
KAFKA_STORAGE_ERROR for a partition whose log directory failed meanwhile. Error answers
carry KIP-951's CurrentLeader hint (`sim.kafka.rules.leader_discovery`). The leader side of
Fetch is `LeaderFetch`, the HW and ISR `IsrManager`.
"""

from __future__ import annotations

from sim.core.deadlines import Deadlines
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.idempotence import producers_of, record_append
from sim.kafka.messages import (
    ProducePartitionResult,
    ProduceResponse,
)
from sim.kafka.rules.epochs import valid_required_acks
from sim.kafka.rules.leader_discovery import current_leader_hint, node_endpoints


class Waiter:
    """A parked acks=all Produce: the offsets each partition's HW must reach."""

    __slots__ = ("src", "corr", "results", "needs")

    def __init__(self, src, corr, results, needs):
        self.src, self.corr, self.results, self.needs = src, corr, results, needs


class BrokerData:
    def init_data_plane(self) -> None:
        self.hw_buf: list = []  # leader HW changes, recorded once per handled request
        self.waiters: dict[tuple, Waiter] = {}
        self.waiters_by_tp: dict[str, list] = {}
        self.parked: dict[tuple, object] = {}  # (src, corr) -> Fetch message
        self.parked_by_tp: dict[str, list] = {}  # full Fetches, by the partitions they name
        self.parked_order: dict[tuple, int] = {}  # key -> how many Fetches were parked before it
        self.parked_count = 0
        self.init_fetch_sessions()
        self.alter_corr = 0
        # tp -> the AlterPartition `AlterPartitionManager` holds for it until answered
        # (`unsentIsrUpdates`, 2.7+), whatever becomes of the partition's own pending state
        self.alter_slots: dict = {}
        self.alter_sends: dict[str, int] = {}  # tp -> sends so far: only the last one's timer resends
        self.produce_deadlines = Deadlines(self, "produce_timeout")
        self.init_delete_records()
        self.init_elections()
        self.fetch_wait_deadlines = Deadlines(self, "fetch_wait")

    # -- Produce ---------------------------------------------------------------------------
    def on_produce(self, msg) -> None:
        req = msg.body
        if not valid_required_acks(req.acks):
            self.send(msg.src, "ProduceResponse", self._produce_response(
                req.corr, [self._invalid_acks(pp) for pp in req.partitions]))
            return
        results, needs, appended = [], {}, []
        for pp in req.partitions:
            result, need = self._produce_one(pp, req.acks, appended)
            results.append(result)
            if need is not None:
                needs[pp.tp] = need
        if appended:
            self.emit(V.APPEND, {"producer": msg.src, "corr": req.corr, "acks": req.acks,
                                 "batches": appended})
        self.flush_hw()
        if req.acks != -1 or not needs:
            if req.acks != 0:
                self.send(msg.src, "ProduceResponse", self._produce_response(req.corr, results))
            elif any(r.error for r in results):
                # an acks=0 producer hears of no error, so the broker closes its connection
                # "so that the producer client will know that some error has happened and will
                # refresh its metadata" (`KafkaApis.handleProduceRequest`)
                self.connection_closed(msg.src)
                self.close_connection_with(msg.src)
            return
        key = (msg.src, req.corr)
        waiter = Waiter(msg.src, req.corr, {r.tp: r for r in results}, needs)
        self.waiters[key] = waiter
        for tp in needs:
            self.waiters_by_tp.setdefault(tp, []).append(key)
        self.produce_deadlines.add(key, self.now_us + req.timeout_us)
        for tp in list(needs):
            self._check_waiters(tp)

    def _produce_one(self, pp, acks: int, appended: list):
        p = self._hosted(pp.tp)
        if p is None:
            err = self._not_hosted_error(pp.tp)
            return self._produce_error(pp, err), None
        err = self.rules.produce_local_log(self.protocol, p.leader_epoch, p.is_leader,
                                           pp.current_leader_epoch)
        if not err and acks == -1 and len(p.isr) < self.min_isr(p):
            err = E.NOT_ENOUGH_REPLICAS
        if err:
            return self._produce_error(pp, err), None
        batch = pp.batch
        if batch.pid >= 0 and self.formats.get(pp.tp.rpartition("-")[0], 2) < 2:
            # idempotent batches need message format v2 (KIP-98; ref §2.6)
            return self._produce_error(pp, E.UNSUPPORTED_FOR_MESSAGE_FORMAT), None
        err, dup_offset = self.rules.check_producer_append(
            self.protocol, producers_of(p.log).get(batch.pid), batch)
        if dup_offset is not None:
            self.emit(V.DUP_APPEND, {"tp": pp.tp, "bid": batch.bid, "base_offset": dup_offset})
            # `Partition.appendRecordsToLeader` (3.7.0) recomputes the HW after every append,
            # a duplicate's included ("ISR could be down to 1")
            self.maybe_advance_hw(p)
            return ProducePartitionResult(pp.tp, E.NONE, dup_offset, p.log.log_start_offset), \
                dup_offset + batch.count
        if err:
            return self._produce_error(pp, err, p.log.log_start_offset), None
        base = p.log.append(batch.count, p.leader_epoch, batch, self.now_us)
        record_append(p.log, batch, base, self.now_us, self.protocol.idempotent_batches)
        row = {"tp": pp.tp, "topic_id": p.topic_id, "base_offset": base, "count": batch.count,
               "leader_epoch": p.leader_epoch, "bid": batch.bid, "sender_epoch": pp.sender_epoch}
        if batch.pid >= 0:
            row.update(pid=batch.pid, producer_epoch=batch.producer_epoch, base_seq=batch.base_seq)
        if pp.sender_topic_id not in (-1, p.topic_id):  # the producer knew a deleted incarnation
            row["sender_topic_id"] = pp.sender_topic_id
        appended.append(row)
        self.touch_sessions(pp.tp)
        self._wake_parked(pp.tp, "followers")
        self.maybe_advance_hw(p)
        return ProducePartitionResult(pp.tp, E.NONE, base, p.log.log_start_offset), base + batch.count

    def _invalid_acks(self, pp) -> ProducePartitionResult:
        """A partition's answer to a Produce with invalid acks: `KafkaApis.handleProduceRequest`
        answers one its metadata cache lacks UNKNOWN_TOPIC_OR_PARTITION, and hands the others to
        `ReplicaManager.appendRecords`, which answers them INVALID_REQUIRED_ACKS."""
        known = pp.tp in self.metadata
        return self._produce_error(pp, E.INVALID_REQUIRED_ACKS if known
                                   else E.UNKNOWN_TOPIC_OR_PARTITION)

    def _hosted(self, tp: str):
        """The partition a Produce or Fetch names, or None. `KafkaApis` answers
        UNKNOWN_TOPIC_OR_PARTITION for a partition its metadata cache lacks before it asks the
        replica manager (`handleProduceRequest`, `handleFetchRequest`): a replica the broker
        still hosts is not served once an UpdateMetadata took the partition out (a topic being
        deleted), nor before one brought it in (a new topic's LeaderAndIsr came first)."""
        return self.partitions.get(tp) if tp in self.metadata else None

    def _not_hosted_error(self, tp: str) -> int:
        """A request for a partition this broker holds no online replica of:
        KAFKA_STORAGE_ERROR when its replica is in a failed log directory, else
        NOT_LEADER_OR_FOLLOWER when its metadata knows the partition, else
        UNKNOWN_TOPIC_OR_PARTITION (`getPartitionOrError`, `LogDirs.not_hosted_error`)."""
        return self.not_hosted_error(tp)

    def _produce_error(self, pp, err: int, log_start: int = -1) -> ProducePartitionResult:
        self.emit(V.PRODUCE_RESULT, {"tp": pp.tp, "bid": pp.batch.bid, "error": err})
        return ProducePartitionResult(pp.tp, err, -1, log_start,
                                      self.leader_hint(pp.tp, err, produce=True))

    def leader_hint(self, tp: str, err: int, produce: bool = False):
        """KIP-951 CurrentLeader from this broker's own (possibly stale) view (ref §1.3), as
        `current_leader_hint` decides."""
        p = self.partitions.get(tp)
        entry = self.metadata.get(tp)
        return current_leader_hint(self.protocol, err, produce,
                                   (p.leader, p.leader_epoch) if p is not None else None,
                                   (entry[1], entry[2]) if entry else None)

    def _produce_response(self, corr: int, results) -> ProduceResponse:
        endpoints = self.node_endpoints(r.current_leader for r in results)
        return ProduceResponse(corr, tuple(results), endpoints)

    def node_endpoints(self, hints) -> tuple:
        """NodeEndpoints for `hints` from this broker's live-broker list."""
        return node_endpoints(hints, self.alive_brokers)

    def _check_waiters(self, tp: str) -> None:
        """Complete the parked acks=all Produces whose last missing partition is `tp`, now that
        its HW may have moved, in the order they were parked. A batch the HW covers while the
        (maximal) ISR is below min.insync.replicas is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        not acknowledged: it was appended before the ISR shrank and is committed on fewer
        replicas than required (`Partition.checkEnoughReplicasReachOffset`)."""
        keys = self.waiters_by_tp.get(tp)
        if not keys:
            return
        p = self.partitions.get(tp)
        hw = p.log.hw if p is not None else -1
        too_few = p is not None and \
            len(self.rules.maximal_isr(p.isr, p.pending_isr)) < self.min_isr(p)
        waiting, done = [], []
        for key in keys:
            waiter = self.waiters.get(key)
            need = waiter.needs.get(tp) if waiter is not None else None
            if need is None:
                continue
            if self.offline:
                self._fail_offline_needs(waiter)
                if tp not in waiter.needs:  # `tp` itself went offline
                    if not waiter.needs:
                        done.append(key)
                    continue
            if hw < need:
                waiting.append(key)
                continue
            del waiter.needs[tp]
            if too_few:
                waiter.results[tp] = waiter.results[tp]._replace(
                    error=E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            if not waiter.needs:
                done.append(key)
        self.waiters_by_tp[tp] = waiting
        for key in done:
            self._finish_waiter(key)

    def _fail_offline_needs(self, waiter) -> None:
        """`DelayedProduce.tryComplete` looks at every partition of the request: one gone
        offline (a failed log directory) completes with KAFKA_STORAGE_ERROR. Nothing else
        tries a request parked only on offline partitions: it waits for its timeout."""
        for tp in [tp for tp in waiter.needs if tp in self.offline]:
            del waiter.needs[tp]
            waiter.results[tp] = waiter.results[tp]._replace(error=E.KAFKA_STORAGE_ERROR)

    def fail_waiters(self, tp: str) -> None:
        """Leadership of `tp` is gone: parked acks=all writes fail with NOT_LEADER_OR_FOLLOWER,
        and parked Fetches naming `tp` are answered now (`completeDelayedFetchOrProduceRequests`)."""
        self._wake_parked(tp)
        for key in self.waiters_by_tp.pop(tp, []):
            waiter = self.waiters.get(key)
            if waiter is None or tp not in waiter.needs:
                continue
            del waiter.needs[tp]
            waiter.results[tp] = ProducePartitionResult(tp, E.NOT_LEADER_OR_FOLLOWER, -1, -1,
                                                        self.leader_hint(tp, E.NOT_LEADER_OR_FOLLOWER))
            if not waiter.needs:
                self._finish_waiter(key)

    def _finish_waiter(self, key) -> None:
        waiter = self.waiters.pop(key)
        self.produce_deadlines.cancel(key)
        results = [waiter.results[tp] for tp in sorted(waiter.results)]
        self.send(waiter.src, "ProduceResponse", self._produce_response(waiter.corr, results))

    def on_data_timer(self, name: str, data) -> None:
        if name == "produce_timeout":
            for key in self.produce_deadlines.expired():
                waiter = self.waiters.get(key)
                if waiter is None:
                    continue
                for tp in list(waiter.needs):
                    waiter.results[tp] = ProducePartitionResult(tp, E.REQUEST_TIMED_OUT)
                waiter.needs.clear()
                self._finish_waiter(key)
        elif name == "fetch_wait":
            for key in self.fetch_wait_deadlines.expired():
                self.answer_parked(key)
        elif name == "alter_timeout":
            self._alter_timeout(*data)
        elif name == "alter_retry":
            self._alter_retry(*data)
        elif name == "resend_alters":
            self.resend_alters()
        elif name == "delete_records_timeout":
            self.on_delete_records_timeout()
        elif name == "elect_leaders_timeout":
            self.on_elect_leaders_timeout()
        else:
            self.on_fetcher_timer(name, data)
