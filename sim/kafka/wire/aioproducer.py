"""aiokafka's producer as a node of the simulation (Mode A: deterministic).

Contract: an `AiokafkaProducer` (an `AioClient`) runs the real `aiokafka.AIOKafkaProducer`
against the simulated brokers. The application on top sends `records_per_sec` records round
robin over the topic's partitions, each with an explicit timestamp (the record builder would
read the OS clock otherwise), from `start_ms` to `stop_ms`, and reports each send the library
fails as `produce_failed`; a `start()` that finds no broker is a `client_error` and is tried
again a second later. What the library saw is recorded as `batch`, `ack` and `produce_error`
events (`observe.ProduceWatch`) and `client_epoch` (`observe.MetadataWatch`).
Not modelled: a crash restarts the library from nothing (a new producer id).
"""

from __future__ import annotations

import aiokafka
from aiokafka.errors import KafkaError

from sim.kafka import vocab as V
from sim.kafka.wire import shims
from sim.kafka.wire.aioclient import LIBRARY, AioClient, sleep_us
from sim.kafka.wire.observe import MetadataWatch, ProduceWatch

PRODUCE, METADATA = 0, 3
# how long the application waits before it starts a producer again after `start()` failed
RESTART_US = 1_000_000


class AiokafkaProducer(AioClient):
    def __init__(self, world, spec, topic_spec, protocol, index: int):
        self.topic = topic_spec.name
        self.partitions = topic_spec.partitions
        self.idempotent = spec.enable_idempotence in ("requested", "required")
        self.acks = spec.acks
        super().__init__(world, spec.name, spec)

    def _reset(self) -> None:
        self.watch = ProduceWatch(self, self.acks)
        self.metadata = MetadataWatch(self)
        self.sent = 0

    def start(self) -> None:
        mode = "required" if self.idempotent else "off"
        self.emit(V.CLIENT_CONFIG, {"idempotence": mode, "effective_idempotence": mode,
                                    "acks": self.acks, "leader_discovery": LIBRARY})
        self.set_timer(self.spec.start_ms * 1000, "begin")

    # -- the application -------------------------------------------------------------------
    def _producer(self) -> aiokafka.AIOKafkaProducer:
        s = self.spec
        return aiokafka.AIOKafkaProducer(
            bootstrap_servers=self.bootstrap_servers(), client_id=self.name, acks=self.acks,
            enable_idempotence=self.idempotent, linger_ms=s.linger_ms,
            max_batch_size=max(s.batch_size, s.record_bytes),
            request_timeout_ms=s.request_timeout_ms, retry_backoff_ms=s.retry_backoff_ms,
            metadata_max_age_ms=s.metadata_max_age_ms)

    async def _application(self) -> None:
        producer = self._producer()
        try:
            await producer.start()
        except KafkaError as exc:  # no broker answered: the application tries again later
            self.client_error(exc, "restart")
            await producer.stop()
            await sleep_us(RESTART_US)
            self.loop.create_task(self._application())
            return
        interval_us = max(1, int(1_000_000 / self.spec.records_per_sec))
        stop_us = self.spec.stop_ms * 1000
        value = b"x" * max(0, self.spec.record_bytes - 40)
        while not stop_us or self.now_us < stop_us:
            partition = self.sent % self.partitions
            self.sent += 1
            delivery = await producer.send(self.topic, value, partition=partition,
                                           timestamp_ms=shims.EPOCH_S * 1000 + self.now_us // 1000)
            delivery.add_done_callback(lambda f, p=partition: self._delivered(f, p))
            await sleep_us(interval_us)

    def _delivered(self, future, partition: int) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is None:
            return
        code = getattr(exc, "errno", None) if isinstance(exc, KafkaError) else None
        self.emit(V.PRODUCE_FAILED, {"bid": None, "tp": f"{self.topic}-{partition}",
                                     "error": code if isinstance(code, int) else -1,
                                     "error_name": type(exc).__name__})

    # -- what the library saw --------------------------------------------------------------
    def on_request(self, conn: int, req) -> None:
        if req.api_key == PRODUCE:
            self.watch.on_request(conn, req.correlation_id, req.body)

    def on_answer(self, broker, wire, api_key, body, conn, corr) -> None:
        if api_key == PRODUCE:
            self.watch.on_response(conn, corr, body)
        elif api_key == METADATA:
            self.metadata.on_response(broker, body, wire.truth)

    def _forget(self, conn: int) -> None:
        super()._forget(conn)
        self.watch.connection_closed(conn)
