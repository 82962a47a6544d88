"""Between kio's wire entities and the model's requests and responses.

Contract: pure functions. `SERVED` lists the APIs and version ranges a simulated broker serves
(what it advertises in ApiVersions). `to_model_produce` turns a decoded Produce request into the
model's `Produce` (one model batch per partition, built from the RecordBatch v2 header: record
count, producer id, epoch, base sequence, and its max timestamp as the batch's creation,
`create_time_us`) plus the partitions refused before the model sees
them (records that are not one whole v2 batch with a good CRC: CORRUPT_MESSAGE, as
`LogValidator` answers). `produce_values`, `metadata_values`, `api_versions_values` and
`init_producer_id_values` build response values for `codec.encode_response`.
Metadata answers come from the broker's own cache (the model's `MetadataResponse`): replicas
and ISR are not in that cache, so a partition lists its leader alone as both.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.messages import Batch, Produce, ProducePartition
from sim.kafka.wire.answers_read import model_time_ms
from sim.kafka.wire.records import BadRecords, crc_ok, read_batches

# api_key -> (min, max) version served. Produce stops below v9 (flexible, and KIP-951's
# CurrentLeader from v10); Metadata at v8 (topic ids from v10). aiokafka 0.14 takes
# Produce v7, Metadata v5, InitProducerId v0 and ApiVersions v0 from these; its consumer
# Fetch v11 and ListOffsets v5. Fetch stops at v11 (topic ids from v13), ListOffsets at v5,
# OffsetForLeaderEpoch at v3 (flexible from v4).
SERVED = {0: (3, 8), 1: (4, 11), 2: (1, 5), 3: (0, 8), 18: (0, 3), 22: (0, 1), 23: (2, 3)}
# what a live run serves (`epochsim serve`): Produce to v10 (flexible from v9; KIP-951's
# CurrentLeader and NodeEndpoints from v10), so librdkafka follows a hint; a simulated run
# keeps `SERVED`, so its ApiVersions answers (and traces) stay as they were
SERVED_LIVE = {**SERVED, 0: (3, 10)}
CORRUPT_MESSAGE = 2
UNSUPPORTED_VERSION = 35
LEADER_NOT_AVAILABLE = 5
INT32_MIN = -2147483648
PORT = 9092


def served(api_key: int, version: int, table: dict | None = None) -> bool:
    lo_hi = (SERVED if table is None else table).get(api_key)
    return lo_hi is not None and lo_hi[0] <= version <= lo_hi[1]


def api_versions_values(error: int = 0, table: dict | None = None) -> dict:
    keys = [{"api_key": k, "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted((SERVED if table is None else table).items())]
    return {"error_code": error, "api_keys": keys}


def init_producer_id_values(producer_id: int, error: int = 0) -> dict:
    """A new id at epoch 0, or the manager's error with neither (`sim.kafka.producer_ids`)."""
    return {"error_code": error, "producer_id": producer_id, "producer_epoch": -1 if error else 0}


def batch_id(client: str, tp: str, pid: int, epoch: int, seq: int, crc: int) -> str:
    """A batch's identity from its bytes: an idempotent batch is named by its producer id,
    epoch and base sequence (a retry resends the same bytes, so it keeps its name), any other
    by its CRC."""
    if pid >= 0:
        return f"{client}#{tp}:{pid}.{epoch}.{seq}"
    return f"{client}#{tp}:{crc:08x}"


def create_time_us(max_timestamp: int, now_us: int) -> int:
    """A real client's batch's CreateTime in the run's time: its max timestamp (the client's
    clock, the run's plus `shims.EPOCH_S`), which Kafka keeps for ListOffsets by time, time
    retention and the producer state's last timestamp (`RecordBatch.maxTimestamp`); `now_us`
    (when the leader reads it) for a time before the run or after now, a clock that is not the
    run's."""
    created_us = model_time_ms(max_timestamp) * 1000 if max_timestamp >= 0 else -1
    return created_us if 0 <= created_us <= now_us else now_us


def to_model_produce(client: str, body, corr: int, now_us: int, keep: dict | None = None):
    """(model Produce or None, [(tp, error)] refused up front, [tp] in request order); each
    batch's bytes go into `keep` by batch id (a Fetch serves them back)."""
    parts, refused, order = [], [], []
    for topic in body.topic_data:
        for part in topic.partition_data:
            tp = f"{topic.name}-{part.index}"
            order.append(tp)
            try:
                batches = read_batches(part.records or b"")
            except BadRecords:
                batches = []
            if len(batches) != 1 or not crc_ok(batches[0]):
                refused.append((tp, CORRUPT_MESSAGE))
                continue
            b = batches[0]
            bid = batch_id(client, tp, b.producer_id, b.producer_epoch, b.base_sequence, b.crc)
            if keep is not None:
                keep[bid] = b.raw
            batch = Batch(bid, client, b.record_count, create_time_us(b.max_timestamp, now_us),
                          b.producer_id, b.producer_epoch, b.base_sequence)
            # Produce before v10 carries no leader epoch, and the client's truth is unknown
            parts.append(ProducePartition(tp, batch, -1, -1))
    timeout_us = int(body.timeout.total_seconds() * 1_000_000)
    produce = Produce(corr, int(body.acks), timeout_us, tuple(parts)) if parts else None
    return produce, refused, order


def produce_values(results: dict, order: list, hints: dict | None = None,
                   endpoints: list | None = None) -> dict:
    """ProduceResponse values; `results` maps tp -> (error, base_offset, log_start_offset),
    `hints` tp -> KIP-951 CurrentLeader (leader, leader_epoch), `endpoints` the NodeEndpoints
    (both written from v10 only: an older version has no such field)."""
    topics: dict[str, list] = {}
    for tp in order:
        name, _, index = tp.rpartition("-")
        error, base, start = results.get(tp, (E.REQUEST_TIMED_OUT, -1, -1))
        part = {"index": int(index), "error_code": error, "base_offset": base,
                "log_append_time": None, "log_start_offset": start}
        hint = (hints or {}).get(tp)
        if hint is not None:
            part["current_leader"] = {"leader_id": hint[0], "leader_epoch": hint[1]}
        topics.setdefault(name, []).append(part)
    values = {"responses": [{"name": n, "partition_responses": p} for n, p in topics.items()]}
    if endpoints:
        values["node_endpoints"] = endpoints
    return values


def endpoint(broker: int, endpoints: dict | None) -> tuple[str, int]:
    """Where clients reach `broker`: (`b<id>`, 9092) in a simulated run, the live listener's
    (host, port) from `endpoints` in a live one."""
    if endpoints is not None and broker in endpoints:
        return endpoints[broker]
    return f"b{broker}", PORT


def metadata_topics(version: int, body) -> list | None:
    """The topics a Metadata request names, or None for every topic (v0: an empty list; v1+:
    null)."""
    if body.topics is None or (version == 0 and not body.topics):
        return None
    return [t.name for t in body.topics]


def metadata_values(resp, wanted: list | None, controller_id: int,
                    endpoints: dict | None = None) -> dict:
    """MetadataResponse values from the model's answer (`resp`: brokers, partitions as
    (tp, topic_id, leader, leader_epoch)); brokers advertised as `endpoint` says."""
    brokers = [{"node_id": b, "host": endpoint(b, endpoints)[0],
                "port": endpoint(b, endpoints)[1], "rack": None} for b in sorted(resp.brokers)]
    by_topic: dict[str, list] = {}
    for tp, _tid, leader, epoch in resp.partitions:
        name, _, index = tp.rpartition("-")
        nodes = [leader] if leader >= 0 else []
        by_topic.setdefault(name, []).append(
            {"error_code": 0 if leader >= 0 else LEADER_NOT_AVAILABLE,
             "partition_index": int(index), "leader_id": leader, "leader_epoch": epoch,
             "replica_nodes": nodes, "isr_nodes": nodes, "offline_replicas": []})
    names = sorted(by_topic) if wanted is None else wanted
    topics = []
    for name in names:
        parts = sorted(by_topic.get(name, []), key=lambda p: p["partition_index"])
        topics.append({"error_code": 0 if parts else E.UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                       "is_internal": False, "partitions": parts,
                       "topic_authorized_operations": INT32_MIN})
    return {"brokers": brokers, "cluster_id": "epochsim", "controller_id": controller_id,
            "topics": topics, "cluster_authorized_operations": INT32_MIN}
