"""The client process a live run starts: a real Kafka client library, and what it saw.

Contract: `python -m epochsim.live.driver --kind KIND --name NAME --bootstrap HOST:PORT,...
--topic T --partitions N --history FILE [...]` sends `--records` records (key and value
`NAME:i`, partition i mod N) at `--rate` per second after `--start-delay` seconds with the
library `--kind` (confluent-kafka: librdkafka; kafka-python), waits for every answer (at most
until `--deadline` seconds after it began), and with `--read-back` then reads every partition
from its start to its end offset with kafka-python's consumer (`assign`, no group). Every
step is a JSON line of FILE (the operation history `epochsim.live.history` judges):
`send` {key, tp}, `ack` {key, tp, offset}, `error` {key, tp, error}, `read` {key, tp, offset},
`read_end` {tp, offset} (the partition was read to that end offset), `done`. Each carries
`client` and `t` (wall seconds since the process began). It exits 0 when it finished in time.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys
import threading
import time

T0 = time.monotonic()


class History:
    """The operation history file; callbacks may come from the library's threads."""

    def __init__(self, path: str, client: str):
        self.fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self.client = client
        self.lock = threading.Lock()

    def op(self, op: str, **fields) -> None:
        row = {"client": self.client, "op": op, "t": round(time.monotonic() - T0, 6), **fields}
        with self.lock:
            self.fh.write(json.dumps(row, sort_keys=True) + "\n")
            self.fh.flush()

    def close(self) -> None:
        self.fh.close()


def produce_confluent(a, hist: History, keys: list) -> int:
    """Send with librdkafka; the number of sends not answered by the deadline."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": a.bootstrap, "client.id": a.name,
                         "acks": a.acks, "enable.idempotence": a.idempotence,
                         "linger.ms": a.linger_ms, "broker.address.family": "v4",
                         "message.timeout.ms": int(a.deadline * 1000)})
    pending = {"n": 0}

    def delivered(err, msg, key):
        pending["n"] -= 1
        tp = f"{a.topic}-{msg.partition()}"
        if err is not None:
            hist.op("error", key=key, tp=tp, error=err.name())
        else:
            hist.op("ack", key=key, tp=tp, offset=msg.offset())

    for i, key in enumerate(keys):
        _pace(a, i)
        partition = i % a.partitions
        hist.op("send", key=key, tp=f"{a.topic}-{partition}")
        pending["n"] += 1
        producer.produce(a.topic, value=key.encode(), key=key.encode(), partition=partition,
                         on_delivery=lambda err, msg, k=key: delivered(err, msg, k))
        producer.poll(0)
    producer.flush(max(0.0, a.deadline - (time.monotonic() - T0)))
    return pending["n"]


def produce_kafka_python(a, hist: History, keys: list) -> int:
    from kafka import KafkaProducer
    acks = "all" if a.acks in ("all", "-1") else int(a.acks)
    producer = KafkaProducer(bootstrap_servers=a.bootstrap.split(","), client_id=a.name,
                             acks=acks, enable_idempotence=a.idempotence,
                             linger_ms=a.linger_ms)
    futures = []
    for i, key in enumerate(keys):
        _pace(a, i)
        partition = i % a.partitions
        tp = f"{a.topic}-{partition}"
        hist.op("send", key=key, tp=tp)
        future = producer.send(a.topic, value=key.encode(), key=key.encode(), partition=partition)
        future.add_callback(lambda md, k=key, t=tp: hist.op("ack", key=k, tp=t, offset=md.offset))
        future.add_errback(lambda exc, k=key, t=tp: hist.op("error", key=k, tp=t,
                                                           error=type(exc).__name__))
        futures.append(future)
    producer.flush(max(0.0, a.deadline - (time.monotonic() - T0)))
    left = sum(1 for f in futures if not f.is_done)
    producer.close(timeout=1)
    return left


def read_back(a, hist: History) -> bool:
    """Read every partition from its start to its end offset; True when all were read."""
    from kafka import TopicPartition
    tps = [TopicPartition(a.topic, p) for p in range(a.partitions)]
    got = _reader(a, tps)
    if got is None:
        return False
    consumer, ends = got
    left = {tp for tp in tps if ends[tp] > 0}
    for tp in tps:
        if ends[tp] == 0:
            hist.op("read_end", tp=f"{a.topic}-{tp.partition}", offset=0)
    while left and time.monotonic() - T0 < a.deadline:
        for tp, records in consumer.poll(timeout_ms=200).items():
            for r in records:
                hist.op("read", key=(r.value or b"").decode(), tp=f"{a.topic}-{tp.partition}",
                        offset=r.offset)
            if tp in left and consumer.position(tp) >= ends[tp]:
                left.discard(tp)
                hist.op("read_end", tp=f"{a.topic}-{tp.partition}", offset=ends[tp])
    consumer.close()
    return not left


def _reader(a, tps):
    """(consumer, end offsets) of a fresh reader, or None at the deadline. A reader whose end
    offsets do not come (kafka-python keeps asking a broker a stale Metadata answer named) is
    closed and a new one asks again, from a new Metadata answer."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    while time.monotonic() - T0 < a.deadline:
        consumer = KafkaConsumer(bootstrap_servers=a.bootstrap.split(","),
                                 client_id=f"{a.name}-read", group_id=None,
                                 enable_auto_commit=False)
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        try:
            return consumer, consumer.end_offsets(tps, timeout_ms=500)
        except KafkaError:
            consumer.close()
    return None


def _pace(a, i: int) -> None:
    due = a.start_delay + i / a.rate
    wait = due - (time.monotonic() - T0)
    if wait > 0:
        time.sleep(wait)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m epochsim.live.driver")
    p.add_argument("--kind", choices=("confluent-kafka", "kafka-python"), required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--records", type=int, default=200)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--start-delay", type=float, default=0.0)
    p.add_argument("--acks", default="all")
    p.add_argument("--idempotence", type=int, default=1)
    p.add_argument("--linger-ms", type=int, default=5)
    p.add_argument("--read-back", type=int, default=1)
    p.add_argument("--deadline", type=float, default=30.0)
    a = p.parse_args(argv)
    a.idempotence = bool(a.idempotence)
    faulthandler.register(signal.SIGTERM, chain=True)  # a client stopped for time shows where
    hist = History(a.history, a.name)
    keys = [f"{a.name}:{i}" for i in range(a.records)]
    produce = produce_confluent if a.kind == "confluent-kafka" else produce_kafka_python
    unanswered = produce(a, hist, keys)
    print(f"produced: {unanswered} unanswered", flush=True)
    finished = unanswered == 0
    if a.read_back:
        finished = read_back(a, hist) and finished
    hist.op("done", unanswered=unanswered, finished=finished)
    hist.close()
    return 0 if finished else 1


if __name__ == "__main__":
    sys.exit(main())
