"""Producer client: accumulator, sender, retries, metadata, leader discovery, idempotence.

Contract: records arrive at `records_per_sec` and every `linger_ms` go to the partitions (round
robin): into a partition's last batch while the sender has not taken it and it has room
(`batch_size` / `record_bytes` records), else into new batches. The sender drains at most one
batch per partition into one Produce request per leader broker, with at most `max_in_flight`
requests per connection, as Kafka's RecordAccumulator/Sender do. Retriable errors re-enqueue in
order with exponential backoff and ±20% jitter (ref §0 defaults); InvalidMetadata errors (6, 74,
3) request a metadata update, UNKNOWN_LEADER_EPOCH does not (ref §3.2). KIP-951 hints and the
backoff skip follow ref §3.3; idempotent error handling follows `producer_idempotence` (ref
§2.5). Every outcome is a trace event: `batch`, `batch_grown`, `ack`, `produce_error`,
`produce_failed`.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.core.trace import event_head, json_str, json_text
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.client_refresh import JITTER, MetadataRefresher, exponential_backoff_us
from sim.kafka.connection import RECONNECT_BACKOFF_US
from sim.kafka.messages import Batch, Produce, ProducePartition
from sim.kafka.options import ProducerOptions, TopicOptions
from sim.kafka.producer_idempotence import IdempotenceMixin

ACKS = {"all": -1, 1: 1, 0: 0}
# the fields of the two per-batch events, in the order their encoded text writes them
BATCH_KEYS = ("bid", "tp", "count", "created_us")
ACK_KEYS = ("bid", "tp", "base_offset", "count", "acks", "latency_us", "has_offset")


class PendingBatch:
    """A batch inside the producer: its wire form plus retry bookkeeping."""

    __slots__ = ("batch", "tp", "attempts", "retry_at_us", "in_flight", "current_leader_epoch",
                 "attempts_when_leader_changed", "stamped", "sequence_reset", "sent_to", "expired")

    def __init__(self, batch: Batch, tp: str):
        self.batch, self.tp = batch, tp
        self.attempts = 0
        self.retry_at_us = 0
        self.in_flight = False
        self.current_leader_epoch = -1
        self.attempts_when_leader_changed = 0
        self.stamped = False  # producer id, epoch and sequence assigned (at first drain)
        self.sequence_reset = False  # renumbered from 0 (`ProducerBatch.sequenceHasBeenReset`)
        self.sent_to = -1  # the broker its latest request went to
        # failed at delivery.timeout.ms while its request was still out: the application has
        # its TimeoutException, and the request's answer only settles the sequences
        self.expired = False


class Producer(IdempotenceMixin, MetadataRefresher, Actor):
    def __init__(self, world, spec: ProducerOptions, topic_spec: TopicOptions, protocol, index: int):
        super().__init__(spec.name, world)
        self.spec = spec
        self.protocol = protocol
        self.acks = ACKS[spec.acks]
        self.tps = [f"{topic_spec.name}-{i}" for i in range(topic_spec.partitions)]
        self.bootstrap = tuple(range(1, world.options.cluster.brokers + 1))
        self.discovery = spec.leader_discovery or protocol.leader_discovery
        self.init_idempotence(index)
        # JSON text that the per-batch `batch` and `ack` events repeat (see `_emit_batch`)
        self.tp_json = {tp: json_str(tp) for tp in self.tps}
        self.batch_head = f'{event_head(self.name, V.BATCH)},"bid":'
        self.ack_head = f'{event_head(self.name, V.ACK)},"bid":'
        self.acks_json = json_text(spec.acks)
        # records that fit one batch: batch.size over the record size, at least one (a record
        # larger than batch.size goes alone, and batch.size = 0 turns batching off)
        self.batch_records = max(1, spec.batch_size // spec.record_bytes)
        # an idempotent producer keeps no more requests in flight than the broker remembers
        # batches (1 in 0.11, 5 from 1.0: `idempotent_batches`)
        self.max_in_flight = spec.max_in_flight if self.idempotence == "off" else \
            min(spec.max_in_flight, protocol.idempotent_batches)
        # max.in.flight.requests.per.connection = 1 guarantees order: the Sender mutes a
        # partition while one of its batches is in flight, to any broker (`guaranteeMessageOrder`).
        # The cap above counts: a 0.11 idempotent producer runs with one request in flight, the
        # only setting 0.11 accepts, and so with its partitions muted
        self.one_at_a_time = self.max_in_flight == 1
        self._reset()

    def _reset(self) -> None:
        self.meta = ClientMetadata(self, self.protocol)
        self.queues: dict[str, list[PendingBatch]] = {tp: [] for tp in self.tps}
        self.inflight: dict[int, dict[int, list]] = {}
        self.corr = 0
        self.next_bid = getattr(self, "next_bid", 0)  # batch ids stay unique across restarts
        self.rr = 0
        self.carry = 0.0
        self.meta_inflight = None
        self.meta_node = -1  # where the Metadata request in flight went
        self.meta_blocked = False  # every connection was full when a refresh was due
        self.reconnect_at: dict[int, int] = {}  # node -> end of its reconnect backoff
        self.init_refresh()

    # -- lifecycle and timers ------------------------------------------------------------
    def start(self) -> None:
        self.emit(V.CLIENT_CONFIG, {"idempotence": self.idempotence_promised,
                                    "effective_idempotence": self.idempotence, "acks": self.spec.acks,
                                    "leader_discovery": self.discovery})
        self.set_timer(self.spec.start_ms * 1000, "begin")

    def on_restart(self) -> None:
        self._reset()
        self.set_timer(0, "begin")

    def on_timer(self, name: str, data) -> None:
        if name == "tick":
            self._tick()
        elif name == "begin":
            self.maybe_refresh()
            self.set_timer(self.spec.metadata_max_age_ms * 1000, "meta_age")
            self.set_timer(self.spec.linger_ms * 1000, "tick")
        elif name == "drain":
            self.drain()
        elif self.on_metadata_timer(name, data):
            pass
        elif name == "request_timeout":
            self._request_timeout(*data)

    def _tick(self) -> None:
        stop_us = self.spec.stop_ms * 1000
        if stop_us and self.now_us >= stop_us:
            return
        linger_ms = self.spec.linger_ms
        self.carry += self.spec.records_per_sec * linger_ms / 1000.0
        records = int(self.carry)
        self.carry -= records
        if records:
            self._accumulate(records)
        self._expire()
        self.drain()
        self.set_timer(linger_ms * 1000, "tick")

    def _accumulate(self, records: int) -> None:
        n = len(self.tps)
        per, extra = divmod(records, n)
        for k in range(min(records, n) if per == 0 else n):
            tp = self.tps[(self.rr + k) % n]
            count = per + (1 if k < extra else 0)
            if count:
                self._add_records(tp, count)
        self.rr = (self.rr + max(extra, 1)) % n

    def _add_records(self, tp: str, count: int) -> None:
        """Records join the partition's last batch while the sender has not taken it yet and
        it has room, and fill new batches of at most `batch_records` after that, as
        RecordAccumulator.append does (tryAppend on the deque's last batch; a batch closes for
        appends when drained or full). So a backlog drains in full batches, not in one small
        batch per linger."""
        queue = self.queues[tp]
        if queue:
            last = queue[-1]
            room = self.batch_records - last.batch.count
            if room > 0 and not last.stamped:  # stamped at the first drain, never unset
                take = min(room, count)
                last.batch = last.batch._replace(count=last.batch.count + take)
                self.emit(V.BATCH_GROWN, {"bid": last.batch.bid, "tp": tp, "count": take})
                count -= take
        while count > 0:
            take = min(count, self.batch_records)
            self._new_batch(tp, take)
            count -= take

    def _new_batch(self, tp: str, count: int) -> None:
        if not self.admit_batch(tp):
            return
        bid = f"{self.name}#{self.next_bid}"
        self.next_bid += 1
        self.queues[tp].append(PendingBatch(Batch(bid, self.name, count, self.now_us), tp))
        self._emit_batch(bid, tp, count)

    def _emit_batch(self, bid: str, tp: str, count: int) -> None:
        """The `batch` event, as `emit(V.BATCH, dict(zip(BATCH_KEYS, ...)))` would write it.
        It and `ack` are written once per batch, so their text is built here rather than by
        the JSON encoder, at a third of the cost (`Trace.emit_encoded`)."""
        now = self.now_us
        self.world.trace.emit_encoded(
            now, self.name, V.BATCH,
            f'{self.batch_head}{json_str(bid)},"tp":{self.tp_json[tp]},"count":{count},'
            f'"created_us":{now}}}', BATCH_KEYS, (bid, tp, count, now))

    # -- draining ------------------------------------------------------------------------
    def _ready_batch(self, tp: str, epoch: int, leader: int) -> PendingBatch | None:
        """The head batch of `tp` if it may be sent now to `leader` (ref §3.3.4 backoff rule)."""
        earlier_in_flight = False
        for pb in self.queues[tp]:
            if pb.in_flight:
                if self.one_at_a_time:
                    return None  # the partition is muted until that batch is answered
                if pb.sent_to != leader and self.protocol.client_drains_on_leader_change:
                    return None  # drain the old leader first (`client_drains_on_leader_change`)
                earlier_in_flight = True
                continue
            if earlier_in_flight and pb.attempts > 0 and pb.batch.pid >= 0:
                return None  # a retried idempotent batch goes only as the first in flight
            if epoch >= 0 and pb.current_leader_epoch < epoch:
                pb.attempts_when_leader_changed = pb.attempts
                pb.current_leader_epoch = epoch
            skip = (self.discovery == "kip951" and pb.attempts >= 1
                    and pb.attempts == pb.attempts_when_leader_changed)
            if pb.attempts > 0 and self.now_us < pb.retry_at_us and not skip:
                return None
            return pb
        return None

    def in_flight_to(self, node: int) -> int:
        """Requests in flight on the connection to `node`: Produce, plus a Metadata request;
        a node in reconnect backoff counts as full."""
        if self.reconnect_at.get(node, 0) > self.now_us:
            return self.max_in_flight
        return len(self.inflight.get(node, ())) + (self.meta_inflight is not None
                                                   and self.meta_node == node)

    def drain(self) -> None:
        by_leader: dict[int, list] = {}
        for tp in self.tps:
            topic_id, leader, epoch = self.meta.entry(tp)
            if not self.queues[tp]:
                continue
            if leader < 0 or leader not in self.meta.brokers:
                self.request_update()
                continue
            pb = self._ready_batch(tp, epoch, leader)
            if pb is not None and self.may_send(pb):
                by_leader.setdefault(leader, []).append((pb, epoch, topic_id))
        for leader in sorted(by_leader):
            if self.in_flight_to(leader) < self.max_in_flight:
                self._send_produce(leader, by_leader[leader])

    def _send_produce(self, leader: int, items: list) -> None:
        self.corr += 1
        parts = []
        for pb, epoch, topic_id in items:
            pb.in_flight = True
            pb.sent_to = leader
            if not pb.stamped:  # RecordAccumulator.drain assigns the sequence (ref §2.5)
                pb.batch = self.stamp(pb.batch, pb.tp)
                pb.stamped = True
            wire = epoch if self.protocol.produce_epoch_check else -1
            parts.append(ProducePartition(pb.tp, pb.batch, wire, epoch, topic_id))
        timeout_us = self.spec.request_timeout_ms * 1000
        self.inflight.setdefault(leader, {})[self.corr] = [item[0] for item in items]
        self.send(f"b{leader}", "Produce", Produce(self.corr, self.acks, timeout_us, tuple(parts)))
        if self.acks == 0:
            self._complete_acks0(leader, self.corr)
            return
        self.set_timer(timeout_us, "request_timeout", (leader, self.corr))

    def _complete_acks0(self, leader: int, corr: int) -> None:
        for pb in self.inflight[leader].pop(corr):
            self._ack(pb, -1)

    # -- responses -----------------------------------------------------------------------
    def on_message(self, msg) -> None:
        if msg.kind == "ProduceResponse":
            self._on_produce_response(int(msg.src[1:]), msg.body)
        elif msg.kind == "MetadataResponse":
            self._on_metadata_response(msg)

    def _on_produce_response(self, leader: int, resp) -> None:
        pbs = self.inflight.get(leader, {}).pop(resp.corr, None)
        if pbs is None:
            return
        by_tp = {pb.tp: pb for pb in pbs}
        hinted = False
        for result in resp.results:
            pb = by_tp.get(result.tp)
            if pb is None:
                continue
            pb.in_flight = False
            if pb.expired:
                self._settle_expired(pb, result)
                continue
            if (self.discovery == "kip951" and result.current_leader  # ref §3.3.1
                    and result.error in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)):
                leader_id, epoch = result.current_leader
                hinted |= self.meta.apply_hint(result.tp, leader_id, epoch, resp.node_endpoints,
                                               f"b{leader}")
            self._handle_result(pb, result)
        if self.meta_blocked:
            self.maybe_refresh()  # this response freed a slot on a connection
        self.drain()

    def _handle_result(self, pb: PendingBatch, result) -> None:
        err = result.error
        if err == E.NONE:
            self._ack(pb, result.base_offset)
        elif err == E.DUPLICATE_SEQUENCE_NUMBER:
            self._ack(pb, -1)  # success without offset (ref §2.5 step 5)
        elif self.handle_idempotence_error(pb, result):
            pass
        elif err in E.RETRIABLE:
            self._retry_or_fail(pb, err)
        else:
            self._fail(pb, err)

    def _retry_or_fail(self, pb: PendingBatch, err: int, disconnected: bool = False) -> None:
        """Retry `pb` after a retriable `err`, or fail it: with DELIVERY_TIMEOUT once
        delivery.timeout.ms has passed, with `err` itself once `retries` are spent (ref §2.5).
        Retried or failed, metadata is refreshed for InvalidMetadata errors
        (`Sender.completeBatch` asks after deciding) and after a lost connection (`NetworkClient`
        on a disconnect), not for a broker's own REQUEST_TIMED_OUT (ref §3.2)."""
        backoff_us = None
        if self.now_us - pb.batch.created_us >= self.spec.delivery_timeout_ms * 1000:
            self._fail(pb, E.DELIVERY_TIMEOUT if err in E.RETRIABLE else err)
        elif pb.attempts >= self.spec.retries:
            self._fail(pb, err)
        else:
            pb.attempts += 1
            # the alternative KIP-951 rejected drops the backoff for leader changes only (ref §3.4)
            no_backoff = self.discovery == "refresh_no_backoff" and err in E.INVALID_METADATA
            backoff_us = 0 if no_backoff else self._backoff_us(pb.attempts)
            pb.retry_at_us = self.now_us + backoff_us
            self.emit(V.PRODUCE_ERROR, {"bid": pb.batch.bid, "tp": pb.tp, "error": err,
                                        "action": "retry", "attempts": pb.attempts})
        if err in E.INVALID_METADATA or disconnected:
            self.request_update(immediate=self.discovery == "refresh_no_backoff")
        if backoff_us is not None:
            self.set_timer(backoff_us, "drain")

    def _backoff_us(self, attempts: int) -> int:
        """Before 3.7 (`client_backoff = constant`) `retry.backoff.ms`; from 3.7 (KIP-580)
        retry.backoff.ms * 2^(attempts-1) with ±20% jitter, capped at retry.backoff.max.ms
        after the jitter, as `ExponentialBackoff.backoff` does (ref §3.3.4)."""
        if self.protocol.client_backoff == "constant":
            return self.spec.retry_backoff_ms * 1000
        factor = self.rng("backoff").uniform(1 - JITTER, 1 + JITTER)
        return exponential_backoff_us(self.spec.retry_backoff_ms, self.spec.retry_backoff_max_ms,
                                      attempts - 1, factor)

    def _ack(self, pb: PendingBatch, base_offset: int) -> None:
        self.queues[pb.tp].remove(pb)
        self.on_acked(pb, base_offset)
        batch, now = pb.batch, self.now_us
        latency, has_offset = now - batch.created_us, base_offset >= 0
        self.world.trace.emit_encoded(
            now, self.name, V.ACK,
            f'{self.ack_head}{json_str(batch.bid)},"tp":{self.tp_json[pb.tp]},'
            f'"base_offset":{base_offset},"count":{batch.count},"acks":{self.acks_json},'
            f'"latency_us":{latency},"has_offset":{"true" if has_offset else "false"}}}',
            ACK_KEYS, (batch.bid, pb.tp, base_offset, batch.count, self.spec.acks, latency,
                       has_offset))

    def _fail(self, pb: PendingBatch, err: int, unresolved: bool = True) -> None:
        """Surface `err` for `pb` to the application (`produce_failed`); a sent idempotent
        batch's sequence is left `unresolved` unless told otherwise."""
        if pb in self.queues[pb.tp]:
            self.queues[pb.tp].remove(pb)
        fields = {"bid": pb.batch.bid, "tp": pb.tp, "error": err,
                  "error_name": V.ERROR_NAMES.get(err, str(err))}
        if err == E.OUT_OF_ORDER_SEQUENCE_NUMBER:
            # whether the batch was the next the client expected the broker to take, or follows
            # an earlier batch that failed (then OUT_OF_ORDER is that failure's consequence)
            fields["in_sequence"] = pb.batch.base_seq == self.last_acked_seq.get(pb.tp, -1) + 1
        if unresolved:
            self.on_batch_failed(pb)
        self.emit(V.PRODUCE_FAILED, fields)

    def on_disconnect(self, peer: str) -> None:
        """Broker died: in-flight requests fail with a retriable network error (NetworkException)."""
        if peer.startswith("b"):
            self.close_connection(int(peer[1:]))

    def _request_timeout(self, leader: int, corr: int) -> None:
        """`NetworkClient.handleTimedOutRequests`: a request that timed out closes its
        connection, which fails every request in flight on it."""
        if corr in self.inflight.get(leader, {}):
            self.reset_connection(f"b{leader}")
            self.close_connection(leader)

    def close_connection(self, leader: int) -> None:
        """The connection to `leader` closed: its Produce requests fail (each batch retried or
        failed), the node waits out `reconnect.backoff.ms`, and metadata is refreshed, in flight
        or not (`NetworkClient`: "The disconnect may be the result of stale metadata, so request
        an update"); the only news an acks=0 producer gets of a moved leader."""
        self.reconnect_at[leader] = self.now_us + RECONNECT_BACKOFF_US
        failed = self.inflight.pop(leader, {})
        for corr in sorted(failed):
            for pb in failed[corr]:
                pb.in_flight = False
                if not pb.expired:  # an expired batch is done: nothing is left to retry
                    self._retry_or_fail(pb, E.REQUEST_TIMED_OUT, disconnected=True)
        if self.meta_inflight is not None and self.meta_node == leader:
            self.metadata_failed()
        self.request_update()
        if failed:
            self.drain()

    def _expire(self) -> None:
        """Fail every batch older than delivery.timeout.ms with DELIVERY_TIMEOUT, queued or
        in flight (`Sender.sendProducerData`: `accumulator.expiredBatches` and, from 2.1,
        KIP-91's `getExpiredInflightBatches`). An expired batch's sequence is left unresolved
        only if it had been retried (`expiredBatch.inRetry()`); one still in flight stays on
        its connection, and its answer is not the application's any more (`_settle_expired`)."""
        limit = self.spec.delivery_timeout_ms * 1000
        for tp in self.tps:
            queue = self.queues[tp]
            if not queue or self.now_us - queue[0].batch.created_us < limit:
                continue  # queues are in creation order: the head is the oldest batch
            for pb in [pb for pb in queue if self.now_us - pb.batch.created_us >= limit]:
                pb.expired = pb.in_flight
                self._fail(pb, E.DELIVERY_TIMEOUT, unresolved=pb.attempts > 0)

    def _settle_expired(self, pb: PendingBatch, result) -> None:
        """The answer to a batch that expired in flight: a write still advances the acknowledged
        sequence (`TransactionManager.handleCompletedBatch` runs before `ProducerBatch.complete`,
        which ignores a batch already failed), so a sequence left unresolved may be resolved by
        it; an error changes nothing (`failBatch` finds the batch done)."""
        if result.error in (E.NONE, E.DUPLICATE_SEQUENCE_NUMBER):
            self.on_acked(pb, result.base_offset if result.error == E.NONE else -1)

    # -- metadata ------------------------------------------------------------------------
    def retry_backoff_us(self) -> int:
        return self.spec.retry_backoff_ms * 1000

    def retry_backoff_max_us(self) -> int:
        return self.spec.retry_backoff_max_ms * 1000

    def request_timeout_us(self) -> int:
        return self.spec.request_timeout_ms * 1000

    def in_flight_limit(self) -> int:
        return self.max_in_flight

    def after_metadata(self) -> None:
        self.drain()
