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
from sim.kafka import vocab as V
from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.client_refresh import MetadataRefresher
from sim.kafka.messages import Batch, Produce, ProducePartition
from sim.kafka.options import ProducerOptions, TopicOptions
from sim.kafka.pending_batch import PendingBatch
from sim.kafka.producer_close import ProducerClose
from sim.kafka.producer_idempotence import IdempotenceMixin
from sim.kafka.producer_init import ProducerIdInit
from sim.kafka.producer_results import ProduceResults
from sim.kafka.rules import rules_for

ACKS = {"all": -1, 1: 1, 0: 0}
# the fields of the `batch` event, in the order its encoded text writes them
BATCH_KEYS = ("bid", "tp", "count", "created_us")


class Producer(ProduceResults, IdempotenceMixin, ProducerIdInit, ProducerClose, MetadataRefresher,
               Actor):
    def __init__(self, world, spec: ProducerOptions, topic_spec: TopicOptions, protocol,
                 index: int):
        super().__init__(spec.name, world)
        self.spec = spec
        self.protocol = protocol
        self.acks = ACKS[spec.acks]
        self.tps = [f"{topic_spec.name}-{i}" for i in range(topic_spec.partitions)]
        self.bootstrap = tuple(range(1, world.options.cluster.brokers + 1))
        self.discovery = spec.leader_discovery or protocol.leader_discovery
        self.rules = rules_for(protocol)
        self.init_idempotence(index)
        self.init_producer_id_state()
        self.init_close_state()
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
        # the Sender's own wake-ups, for a producer with no application (`run_send_loop`)
        self.send_loop = False
        self.send_loop_at: int | None = None  # when the armed wake-up fires
        # the application's records by name -> the batch each joined (`app_send`)
        self.record_batch: dict[str, str] = {}
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
        """A restarted producer process is a new KafkaProducer: nothing of the old one's
        accumulator, connections or producer session survives (`start_new_session`)."""
        self._reset()
        self.start_new_session()
        self.set_timer(0, "begin")

    def on_message(self, msg) -> None:
        if not self.closed:  # a closed producer's connections are closed (`client.close()`)
            super().on_message(msg)

    def on_timer(self, name: str, data) -> None:
        if self.closed:
            return
        if name == "tick":
            self._tick()
        elif name == "begin":
            self.maybe_refresh()
            self.arm_metadata_expiry()
            self.set_timer(self.spec.linger_ms * 1000, "tick")
        elif name == "drain":
            self.drain()
        elif self.on_metadata_timer(name, data):
            pass
        elif name == "request_timeout":
            self._request_timeout(*data)
        elif name == "send_loop" and data == self.send_loop_at:  # else re-armed since
            self.send_loop_at = None
            if not self.needs_producer_id():  # a loop waiting for an id expires nothing
                self._expire()
            self.drain()
            self.arm_send_loop()

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
        if not self.needs_producer_id():
            self._expire()
        self.drain()
        self.set_timer(linger_ms * 1000, "tick")

    def _accumulate(self, records: int) -> None:
        if self.fatal_error is not None or self.closing:
            return  # `KafkaProducer.send` throws once the producer is fatal or closed
        n = len(self.tps)
        per, extra = divmod(records, n)
        for k in range(min(records, n) if per == 0 else n):
            tp = self.tps[(self.rr + k) % n]
            count = per + (1 if k < extra else 0)
            if count:
                self._add_records(tp, count)
        self.rr = (self.rr + max(extra, 1)) % n

    def _add_records(self, tp: str, count: int, bid: str | None = None) -> tuple[str | None, bool]:
        """Records join the partition's last batch while the sender has not taken it yet and
        it has room, and fill new batches of at most `batch_records` after that, as
        RecordAccumulator.append does (tryAppend on the deque's last batch; a batch closes for
        appends when drained or full). So a backlog drains in full batches, not in one small
        batch per linger. The first new batch is named `bid` when given. Returns the id of the
        batch the first record joined (None: refused) and whether the append should wake the
        Sender (`RecordAppendResult`: `batchIsFull || newBatchCreated`)."""
        queue = self.queues[tp]
        first, wake = None, False
        if queue:
            last = queue[-1]
            room = self.batch_records - last.batch.count
            if room > 0 and not last.stamped:  # stamped at the first drain, never unset
                take = min(room, count)
                last.batch = last.batch._replace(count=last.batch.count + take)
                self.emit(V.BATCH_GROWN, {"bid": last.batch.bid, "tp": tp, "count": take})
                count -= take
                first, wake = last.batch.bid, take == room
        while count > 0:
            take = min(count, self.batch_records)
            made = self._new_batch(tp, take, None if first else bid)
            first, wake = first or made, wake or made is not None
            count -= take
        return first, wake

    def _new_batch(self, tp: str, count: int, bid: str | None = None) -> str | None:
        """Queue a new batch of `count` records on `tp` (named `bid`, else the next id); its
        id, or None when the idempotence mode refuses the partition."""
        if not self.admit_batch(tp):
            return None
        if bid is None:
            bid = f"{self.name}#{self.next_bid}"
            self.next_bid += 1
        self.queues[tp].append(PendingBatch(Batch(bid, self.name, count, self.now_us), tp))
        self._emit_batch(bid, tp, count)
        return bid

    def _emit_batch(self, bid: str, tp: str, count: int) -> None:
        """The `batch` event, as `emit(V.BATCH, dict(zip(BATCH_KEYS, ...)))` would write it.
        It and `ack` are written once per batch, so their text is built here rather than by
        the JSON encoder, at a third of the cost (`Trace.emit_encoded`)."""
        now = self.now_us
        self.emit_encoded(
            V.BATCH,
            f'{self.batch_head}{json_str(bid)},"tp":{self.tp_json[tp]},"count":{count},'
            f'"created_us":{now}}}', BATCH_KEYS, (bid, tp, count, now))

    # -- the Sender thread without the application -----------------------------------------
    def app_send(self, tp: str, count: int, name: str, wake: bool = True) -> None:
        """The application's `send` of `count` records to `tp` mid-run (a probe's `Send`), as
        `KafkaProducer.doSend` does: refused once the producer is fatal (`maybeAddPartition`
        throws), else appended as `RecordAccumulator.append` does (`_add_records`), waking
        the Sender (a send loop) when it started a batch or filled one, unless `wake` is False
        (a Kafka test's `appendToAccumulator`: the records wait for the next send loop, so
        several appends before one `runOnce` drain together). `name` stands for the record's
        future: `record_batch` maps it to the batch it joined."""
        if self.fatal_error is not None or self.closing:  # it throws (`RecordAccumulator.close`)
            return
        joined, wakes = self._add_records(tp, count, name)
        if joined is not None:
            self.record_batch[name] = joined
        if wakes and wake:
            self.drain()
        self.arm_send_loop()

    def run_send_loop(self) -> None:
        """Run the Sender thread with no application adding records (a probe's producer, which
        has no `tick`): besides the loops its answers and backoffs wake, it wakes when a batch
        reaches delivery.timeout.ms (`RecordAccumulator.nextExpiryTimeMs` bounds the timeout of
        `client.poll`, SenderTest `testResetNextBatchExpiry` at 3.7.0) and when a node's
        reconnect backoff ends (`NetworkClient.connectionDelay`), and runs a send loop then:
        expiry first, then the drain (`Sender.sendProducerData`)."""
        self.send_loop = True
        if self.needs_producer_id():
            self.drain()  # its first send loop asks for one
        self.arm_send_loop()

    def arm_send_loop(self) -> None:
        """Arm the next wake-up of `run_send_loop`, if it runs and has one to make."""
        if not self.send_loop:
            return
        limit = self.spec.delivery_timeout_ms * 1000
        times = [pb.batch.created_us + limit for queue in self.queues.values() for pb in queue]
        times += [t for t in self.reconnect_at.values() if t > self.now_us]
        wake = min(times, default=None)
        if wake is None or wake == self.send_loop_at:
            return
        self.send_loop_at = wake
        self.set_timer(max(0, wake - self.now_us), "send_loop", wake)

    # -- draining ------------------------------------------------------------------------
    def _ready_batch(self, tp: str, epoch: int, leader: int) -> PendingBatch | None:
        """The head batch of `tp` if it may be sent now to `leader` (ref §3.3.4 backoff rule)."""
        earlier_in_flight = False
        rules = self.rules
        for pb in self.queues[tp]:
            if pb.in_flight:
                if rules.in_flight_stops_drain(self.protocol, self.one_at_a_time, pb.sent_to,
                                               leader):
                    return None
                earlier_in_flight = True
                continue
            if earlier_in_flight and pb.attempts > 0 and pb.batch.pid >= 0:
                return None  # a retried idempotent batch goes only as the first in flight
            if epoch >= 0 and pb.current_leader_epoch < epoch:
                pb.attempts_when_leader_changed = pb.attempts
                pb.current_leader_epoch = epoch
            if rules.should_backoff(self.discovery, pb.attempts, pb.attempts_when_leader_changed,
                                    self.now_us, pb.retry_at_us):
                return None
            return pb
        return None

    def in_flight_to(self, node: int) -> int:
        """Requests in flight on the connection to `node`: Produce, plus a Metadata request;
        a node in reconnect backoff counts as full."""
        if self.reconnect_at.get(node, 0) > self.now_us:
            return self.max_in_flight
        return len(self.inflight.get(node, ())) + (self.meta_inflight is not None
                                                   and self.meta_node == node) \
            + self.init_producer_id_in_flight_to(node)

    def drain(self) -> None:
        """One send loop (`send_loop_once`), none once the Sender's thread has ended; a closing
        producer's thread ends after the loop that leaves it nothing to do (`close_if_done`)."""
        if self.closed:
            return
        self.send_loop_once()
        self.close_if_done()

    def send_loop_once(self) -> None:
        """One send loop (`Sender.runOnce`): unresolved sequences are settled first; a fatal
        producer fails what it has and sends nothing, and so for one loop does a producer an
        InitProducerId authorization error left abortable (3.6+); an epoch bump asked for since
        the last loop comes next; a producer without an id asks for one and stops there
        (`hold_for_producer_id`); then each partition's head batch that may go joins one
        Produce per leader."""
        self.maybe_resolve_sequences()
        if self.fatal_error is not None:
            self.abort_batches()
            return
        if self.abortable_error is not None:
            self.handle_authorization_error()
            return
        if self.bump_required:
            self.bump_epoch()
        if self.hold_for_producer_id():
            return
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
