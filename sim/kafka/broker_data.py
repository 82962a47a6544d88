"""Broker data plane: Produce, leader-side Fetch, high watermark, ISR changes, delayed requests.

Contract (mixin of `Broker`): Produce is checked in the order of ref §1.1-1.2 (hosted?, KIP-359
epoch check when the switch is on, leadership, min ISR for acks=all) and appended with the
leader's epoch; acks=all responses wait until the HW covers the batch (or leadership is lost,
or the request times out), and say NOT_ENOUGH_REPLICAS_AFTER_APPEND if by then the ISR is
below min.insync.replicas. Fetch from followers does the epoch check, the KIP-320 divergence
check on `LastFetchedEpoch`, and records follower progress that drives ISR expansion and the
HW; with no data it parks until an append or `max_wait`. ISR changes go through the controller
(AlterPartition, KIP-497) and never bump the leader epoch.
"""

from __future__ import annotations

from sim.core.deadlines import Deadlines
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.idempotence import check_idempotent_append, record_append
from sim.kafka.messages import (
    AlterPartition,
    EpochEndOffset,
    FetchPartitionData,
    FetchResponse,
    OffsetsForLeaderEpochResponse,
    ProducePartitionResult,
    ProduceResponse,
)

MAX_BATCHES_PER_FETCH = 64


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
        self.parked_by_tp: dict[str, list] = {}
        self.alter_corr = 0
        self.produce_deadlines = Deadlines(self, "produce_timeout")
        self.fetch_wait_deadlines = Deadlines(self, "fetch_wait")

    # -- Produce ---------------------------------------------------------------------------
    def on_produce(self, msg) -> None:
        req = msg.body
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
                self.world.network.close_connection(self.name, msg.src)
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
        check = self.protocol.produce_epoch_check and self.protocol.mutant != "no_produce_epoch_check"
        err = p.local_log_error(pp.current_leader_epoch, True, check)
        if not err and acks == -1 and len(p.isr) < self.min_isr(p):
            err = E.NOT_ENOUGH_REPLICAS
        if err:
            return self._produce_error(pp, err), None
        batch = pp.batch
        if batch.pid >= 0 and self.formats.get(pp.tp.rpartition("-")[0], 2) < 2:
            # idempotent batches need message format v2 (KIP-98; ref §2.6)
            return self._produce_error(pp, E.UNSUPPORTED_FOR_MESSAGE_FORMAT), None
        err, dup_offset = check_idempotent_append(self, p, batch)
        if dup_offset is not None:
            self.emit(V.DUP_APPEND, {"tp": pp.tp, "bid": batch.bid, "base_offset": dup_offset})
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
        self._wake_parked(pp.tp, "followers")
        self.maybe_advance_hw(p)
        return ProducePartitionResult(pp.tp, E.NONE, base, p.log.log_start_offset), base + batch.count

    def _hosted(self, tp: str):
        """The partition a Produce or Fetch names, or None. `KafkaApis` answers
        UNKNOWN_TOPIC_OR_PARTITION for a partition its metadata cache lacks before it asks the
        replica manager (`handleProduceRequest`, `handleFetchRequest`): a replica the broker
        still hosts is not served once an UpdateMetadata took the partition out (a topic being
        deleted), nor before one brought it in (a new topic's LeaderAndIsr came first)."""
        return self.partitions.get(tp) if tp in self.metadata else None

    def _not_hosted_error(self, tp: str) -> int:
        """A request for a partition this broker holds no replica of: NOT_LEADER_OR_FOLLOWER
        when its metadata knows the partition, else UNKNOWN_TOPIC_OR_PARTITION."""
        return E.NOT_LEADER_OR_FOLLOWER if tp in self.metadata else E.UNKNOWN_TOPIC_OR_PARTITION

    def _produce_error(self, pp, err: int, log_start: int = -1) -> ProducePartitionResult:
        self.emit(V.PRODUCE_RESULT, {"tp": pp.tp, "bid": pp.batch.bid, "error": err})
        return ProducePartitionResult(pp.tp, err, -1, log_start,
                                      self.leader_hint(pp.tp, err, produce=True))

    def leader_hint(self, tp: str, err: int, produce: bool = False):
        """KIP-951 CurrentLeader from this broker's own (possibly stale) view (ref §1.3): the
        hosted partition's (leader, leader_epoch), else the metadata cache's, else (-1, -1).
        Fetch carries it with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH; Produce upstream
        only with NOT_LEADER_OR_FOLLOWER, and also with FENCED_LEADER_EPOCH when the KIP-359
        produce epoch check (the only way Produce can return it) is on."""
        hinted = (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)
        if produce and not self.protocol.produce_epoch_check:
            hinted = (E.NOT_LEADER_OR_FOLLOWER,)
        if self.protocol.leader_discovery != "kip951" or err not in hinted:
            return None
        p = self.partitions.get(tp)
        if p is not None:
            return (p.leader, p.leader_epoch)
        entry = self.metadata.get(tp)
        return (entry[1], entry[2]) if entry else (-1, -1)

    def _produce_response(self, corr: int, results) -> ProduceResponse:
        endpoints = self.node_endpoints(r.current_leader for r in results)
        return ProduceResponse(corr, tuple(results), endpoints)

    def node_endpoints(self, hints) -> tuple:
        """NodeEndpoints: the hinted leaders this broker knows to be alive; a leader it does
        not know is left out (`getAliveBrokerNode` may be absent, ref §1.3)."""
        return tuple(sorted({h[0] for h in hints if h and h[0] in self.alive_brokers}))

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
        too_few = p is not None and len(p.maximal_isr()) < self.min_isr(p)
        waiting, done = [], []
        for key in keys:
            waiter = self.waiters.get(key)
            need = waiter.needs.get(tp) if waiter is not None else None
            if need is None:
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
                msg = self.parked.pop(key, None)
                if msg is not None:
                    self._answer_fetch(msg)
        elif name == "alter_timeout":
            self._alter_timeout(*data)
        elif name == "resend_alters":
            self.resend_alters()
        else:
            self.on_fetcher_timer(name, data)

    # -- Fetch (leader side) ---------------------------------------------------------------
    def on_fetch(self, msg) -> None:
        req = msg.body
        datas = [self._read(fp, req.replica_id) for fp in req.partitions]
        self.flush_hw()
        ready = any(d.entries or d.error or d.diverging for d in datas)
        if ready or req.max_wait_us == 0:
            self.send(msg.src, "FetchResponse", FetchResponse(
                req.corr, tuple(datas), self.node_endpoints(d.current_leader for d in datas)))
            return
        key = (msg.src, req.corr)
        self.parked[key] = msg
        for fp in req.partitions:
            self.parked_by_tp.setdefault(fp.tp, []).append(key)
        self.fetch_wait_deadlines.add(key, self.now_us + req.max_wait_us)

    def _answer_fetch(self, msg) -> None:
        req = msg.body
        datas = tuple(self._read(fp, req.replica_id, record=False) for fp in req.partitions)
        self.send(msg.src, "FetchResponse", FetchResponse(
            req.corr, datas, self.node_endpoints(d.current_leader for d in datas)))

    def _wake_parked(self, tp: str, who: str = "all") -> None:
        """Answer parked Fetches naming `tp`: `followers` when the log grows, `consumers` when
        the HW does (a consumer reads only below it), `all` when leadership goes (the bytes a
        `DelayedFetch` counts end at the log end for a follower and at the HW for a consumer)."""
        keys = self.parked_by_tp.pop(tp, None)
        if not keys:
            return
        for key in keys:
            msg = self.parked.get(key)
            if msg is None:
                continue
            if who != "all" and (msg.body.replica_id >= 0) != (who == "followers"):
                self.parked_by_tp.setdefault(tp, []).append(key)  # not for this one: keep it
                continue
            del self.parked[key]
            self.fetch_wait_deadlines.cancel(key)
            self._answer_fetch(msg)

    def _read(self, fp, replica_id: int, record: bool = True) -> FetchPartitionData:
        p = self._hosted(fp.tp)
        if p is None:
            err = self._not_hosted_error(fp.tp)
            return FetchPartitionData(fp.tp, err, current_leader=self.leader_hint(fp.tp, err))
        err = p.local_log_error(fp.current_leader_epoch, True, self.protocol.fetch_epoch_check)
        if err:
            return FetchPartitionData(fp.tp, err, current_leader=self.leader_hint(fp.tp, err))
        log = p.log
        if replica_id >= 0:
            if replica_id not in p.replicas:
                if not self.protocol.non_replica_fetch_error:  # before KAFKA-13837: no records
                    return FetchPartitionData(fp.tp, E.NONE, log.hw, log.log_start_offset)
                err = E.UNKNOWN_LEADER_EPOCH if fp.current_leader_epoch >= 0 else E.NOT_LEADER_OR_FOLLOWER
                return FetchPartitionData(fp.tp, err)
            if fp.last_fetched_epoch >= 0:
                answer = self._divergence(fp, log)
                if answer is not None:
                    return answer
            if record:
                self._follower_progress(p, replica_id, fp.fetch_offset)
        if fp.fetch_offset > log.leo or fp.fetch_offset < log.log_start_offset:
            return self._out_of_range_answer(fp.tp, log)
        entries = log.read(fp.fetch_offset, MAX_BATCHES_PER_FETCH)
        if replica_id < 0:
            entries = tuple(e for e in entries if e[0] + e[1] <= log.hw)
        return FetchPartitionData(fp.tp, E.NONE, log.hw, log.log_start_offset, entries)

    def _divergence(self, fp, log) -> FetchPartitionData | None:
        """Where a follower naming its last epoch diverges from this leader's log, as its
        `follower_truncation` asks (see `fetcher`): a `diverging` answer, an out-of-range one,
        or None to read on. `diverging` is (epoch, end offset); an epoch of -1 is an answer
        without one (OffsetsForLeaderEpoch v0), an end offset of -1 no answer at all, which
        sends the follower back to its own HW."""
        mode = self.protocol.follower_truncation
        if mode == "kip101":
            end = log.end_offset_for_epoch_v0(fp.last_fetched_epoch)
            return self._diverging(fp.tp, log, -1, end) if end < fp.fetch_offset else None
        epoch, end = log.end_offset_for_epoch(fp.last_fetched_epoch)
        if epoch < 0:
            # Fetch v12's `readRecords` (ref §1.2): out of range; an OffsetsForLeaderEpoch
            # answer of UNDEFINED_EPOCH_OFFSET: back to the follower's initial offset, its HW
            return self._out_of_range_answer(fp.tp, log) if mode == "diverging_epoch" else \
                self._diverging(fp.tp, log, -1, -1)
        if mode == "diverging_epoch" and fp.fetch_offset < log.log_start_offset:
            return self._out_of_range_answer(fp.tp, log)
        if epoch < fp.last_fetched_epoch or end < fp.fetch_offset:
            return self._diverging(fp.tp, log, epoch, end)
        return None

    @staticmethod
    def _diverging(tp: str, log, epoch: int, end: int) -> FetchPartitionData:
        return FetchPartitionData(tp, E.NONE, log.hw, log.log_start_offset,
                                  diverging=(epoch, end))

    def on_offsets_for_leader_epoch(self, msg) -> None:
        """A consumer's OffsetsForLeaderEpoch (v3+, ref §1.2 table): per partition the same
        `getLocalLog` check as Fetch on `CurrentLeaderEpoch`, leadership required (a consumer
        reads from the leader), then the leader-epoch cache's answer for `LeaderEpoch`."""
        req = msg.body
        answers = []
        for part in req.partitions:
            p = self.partitions.get(part.tp)
            if p is None:
                err = self._not_hosted_error(part.tp)
            else:
                err = p.local_log_error(part.current_leader_epoch, True, self.protocol.fetch_epoch_check)
            if err:
                answers.append(EpochEndOffset(part.tp, err))
            else:
                answers.append(EpochEndOffset(part.tp, E.NONE,
                                              *p.log.end_offset_for_epoch(part.leader_epoch)))
        self.send(msg.src, "OffsetsForLeaderEpochResponse",
                  OffsetsForLeaderEpochResponse(req.corr, tuple(answers)))

    @staticmethod
    def _out_of_range_answer(tp: str, log) -> FetchPartitionData:
        return FetchPartitionData(tp, E.OFFSET_OUT_OF_RANGE, log.hw, log.log_start_offset,
                                  log_end_offset=log.leo)

    # -- follower progress, HW, ISR (KIP-497) ----------------------------------------------
    def _follower_progress(self, p, replica_id: int, fetch_offset: int) -> None:
        f = p.followers.get(replica_id)
        if f is None:
            return
        f.fetched(fetch_offset, p.log.leo, self.now_us)
        f.epoch = p.leader_epoch
        if (replica_id not in p.isr and p.pending_isr is None and fetch_offset >= p.log.hw
                # KAFKA-7128: also the start of the leader's epoch
                and (fetch_offset >= p.leader_epoch_start_offset
                     or not self.protocol.isr_epoch_start_check)
                # KIP-841 in ZK mode: a broker the metadata cache lists alive
                and (replica_id in self.alive_brokers or not self.protocol.ineligible_replica_check)):
            self._alter_isr(p, tuple(sorted(p.isr + (replica_id,))))
        self.maybe_advance_hw(p)

    def min_isr(self, p) -> int:
        """min.insync.replicas for `p`; with `hw_waits_for_min_isr` (KAFKA-15583, 3.7) never
        more than its replicas (`Partition.effectiveMinIsr`)."""
        configured = self.cluster.min_insync_replicas
        if self.protocol.hw_waits_for_min_isr:
            return min(configured, len(p.replicas))
        return configured

    def maybe_advance_hw(self, p) -> None:
        """Move the leader's HW to what its ISR has; with `hw_waits_for_min_isr` not while
        the ISR is below min.insync.replicas (`maybeIncrementLeaderHW` returns early
        `if (isUnderMinIsr)`, KAFKA-15583, 3.7), so no one reads what so few replicas hold."""
        if not p.is_leader:
            return
        if self.protocol.hw_waits_for_min_isr and len(p.isr) < self.min_isr(p):
            return
        mutant = self.protocol.mutant
        hw = p.leader_hw_candidate(mutant == "hw_ignores_isr", mutant == "hw_not_monotonic")
        if hw > p.log.hw or (mutant == "hw_not_monotonic" and hw != p.log.hw):
            p.log.hw = hw
            self.hw_buf.append([p.tp, p.topic_id, hw, p.leader_epoch])
            self._check_waiters(p.tp)
            self._wake_parked(p.tp, "consumers")

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
        if f is None:
            return True
        if self.protocol.idle_follower_in_sync and f.leo == p.log.leo:
            return False
        return self.now_us - f.caught_up_us > self.cluster.replica_lag_time_max_ms * 1000

    def _alter_isr(self, p, isr: tuple) -> None:
        if self.controller is None:
            return
        self.alter_corr += 1
        p.pending_isr = isr
        p.alter_request = AlterPartition(self.alter_corr, self.id, p.tp, p.leader_epoch,
                                         p.partition_epoch, isr)
        self._send_alter(p)

    def _send_alter(self, p) -> None:
        """Send (or send again) the partition's AlterPartition to the controller this broker
        knows. Kafka's BrokerToControllerChannelManager keeps the request queued until it is
        answered: a closed connection or a timeout (`controller.socket.timeout.ms`) sends it
        again, to whichever controller the metadata cache names by then."""
        self.send(self.controller, "AlterPartition", p.alter_request)
        p.alter_sends += 1
        # the timer names this send, so a resend to a new controller starts the only clock
        self.set_timer(V.CONTROLLER_SOCKET_TIMEOUT_US, "alter_timeout",
                       (p.tp, p.alter_request.corr, p.alter_sends))

    def resend_alters(self) -> None:
        """A new controller took over: unanswered AlterPartitions go to it."""
        if self.protocol.mutant == "alter_partition_not_resent":
            return
        for tp in sorted(self.partitions):
            p = self.partitions[tp]
            if p.alter_request is not None and p.is_leader:
                self._send_alter(p)

    def _alter_timeout(self, tp: str, corr: int, send: int) -> None:
        p = self.partitions.get(tp)
        if self.protocol.mutant == "alter_partition_not_resent":
            return  # planted: the request stays pending, and so does the ISR change
        if p is not None and p.is_leader and p.alter_request is not None \
                and p.alter_request.corr == corr and p.alter_sends == send:
            self.reset_connection(self.controller)
            self._send_alter(p)

    def on_alter_partition_response(self, msg) -> None:
        resp = msg.body
        p = self.partitions.get(resp.tp)
        if p is None or not p.is_leader or p.alter_request is None \
                or p.alter_request.corr != resp.corr:
            return  # an answer to a request this leader no longer waits for
        p.pending_isr = None
        p.alter_request = None
        # ref §1.4 step 5: ignore results for another leader epoch
        if resp.error or resp.leader_epoch != p.leader_epoch:
            return
        p.isr = resp.isr
        p.partition_epoch = resp.partition_epoch
        self.maybe_advance_hw(p)
        self.flush_hw()
