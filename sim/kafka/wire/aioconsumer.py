"""aiokafka's consumer as a node of the simulation (Mode A: deterministic).

Contract: an `AiokafkaConsumer` (an `AioClient`) runs the real `aiokafka.AIOKafkaConsumer`
with every partition of its topic assigned (`assign`: no group, no commits) from
`auto_offset_reset`, and an application that takes what `getmany` returns, in partition order.
What it took is recorded as `consume` events (`observe.ConsumeWatch`), the leaders it learnt
as `client_epoch` (`observe.MetadataWatch`); a `start()` that finds no broker is a
`client_error` and is tried again a second later.
"""

from __future__ import annotations

import aiokafka
from aiokafka.consumer.subscription_state import Assignment
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from sim.kafka import vocab as V
from sim.kafka.wire import shims
from sim.kafka.wire.aioclient import LIBRARY, AioClient, sleep_us
from sim.kafka.wire.observe import ConsumeWatch, MetadataWatch

FETCH, METADATA = 1, 3
RESTART_US = 1_000_000
POLL_MS = 100  # how long one getmany may wait for records


class AiokafkaConsumer(AioClient):
    def __init__(self, world, spec, topic_spec, protocol):
        self.topic = topic_spec.name
        self.partitions = topic_spec.partitions
        shims.order_assignment(Assignment)
        super().__init__(world, spec.name, spec)

    def _reset(self) -> None:
        self.consumed = ConsumeWatch(self)
        self.metadata = MetadataWatch(self)

    def start(self) -> None:
        self.emit(V.CLIENT_CONFIG, {"idempotence": "off", "effective_idempotence": "off",
                                    "acks": "all", "leader_discovery": LIBRARY,
                                    "role": "consumer"})
        self.set_timer(self.spec.start_ms * 1000, "begin")

    def _consumer(self) -> aiokafka.AIOKafkaConsumer:
        s = self.spec
        return aiokafka.AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers(), client_id=self.name, group_id=None,
            enable_auto_commit=False, auto_offset_reset=s.auto_offset_reset,
            fetch_max_wait_ms=s.fetch_max_wait_ms, request_timeout_ms=s.request_timeout_ms,
            metadata_max_age_ms=s.metadata_max_age_ms)

    async def _application(self) -> None:
        consumer = self._consumer()
        try:
            await consumer.start()
        except KafkaError as exc:
            self.client_error(exc, "restart")
            await consumer.stop()
            await sleep_us(RESTART_US)
            self.loop.create_task(self._application())
            return
        consumer.assign([TopicPartition(self.topic, p) for p in range(self.partitions)])
        while True:
            taken = await consumer.getmany(timeout_ms=POLL_MS)
            for tp in sorted(taken, key=lambda t: t.partition):
                offsets = [r.offset for r in taken[tp]]
                self.consumed.on_records(f"{tp.topic}-{tp.partition}", offsets)

    def on_answer(self, broker, wire, api_key, body, conn, corr) -> None:
        if api_key == FETCH:
            self.consumed.on_fetch(wire.truth)
        elif api_key == METADATA:
            self.metadata.on_response(broker, body, wire.truth)
