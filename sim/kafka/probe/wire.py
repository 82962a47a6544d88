"""The requests and answers a probe can deliver, built from the fields a probe file gives.

Contract: `KINDS` maps each deliverable message kind to its `Kind`: the node roles that take
it, the fields a probe may set (Kafka's names, snake case; `sim.kafka.probe.fields`), and a
builder that makes the model's message body from the checked fields and a `Context` (which
fills what a unit test leaves to the harness: correlation ids, topic ids, the sender). The
bodies are the model's own messages (`sim.kafka.messages`, `sim.kafka.kraft_messages`; the
KRaft quorum's own in `sim.kafka.probe.wire_raft`, joined here), so a probe passes through exactly
the handlers a run does. Unknown fields are refused by `fields.read`.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka import messages as M
from sim.kafka import zk_messages as ZM
from sim.kafka.kraft_messages import BrokerHeartbeat, BrokerRegistration, QuorumFetchResponse
from sim.kafka.probe.fields import REQUIRED, Field
from sim.kafka.probe.kind import NO, Kind
from sim.kafka.probe.metadata_records import RECORD as METADATA_RECORD
from sim.kafka.probe.metadata_records import build_records
from sim.kafka.probe.wire_admin import ADMIN_KINDS
from sim.kafka.probe.wire_app import APP_KINDS
from sim.kafka.probe.wire_controller_admin import CONTROLLER_ADMIN_KINDS, ELECTION_RESULT_KINDS
from sim.kafka.probe.wire_producer import PRODUCER_KINDS
from sim.kafka.probe.wire_raft import RAFT_KINDS
from sim.kafka.probe.wire_restart import RESTART_KINDS
from sim.kafka.probe.wire_session import ANSWER, SESSION_FIELDS, answer, session
from sim.kafka.probe.wire_zk import ZK_CONTROLLER_KINDS


def _topic_id(part: dict, ctx) -> int:
    return part["topic_id"] if part["topic_id"] != NO else ctx.topic_id(part["tp"])


# -- control requests (from a controller) ---------------------------------------------------
PARTITION_STATE = (
    Field("tp", "str"), Field("topic_id", "int", NO), Field("leader", "int"),
    Field("leader_epoch", "int"), Field("partition_epoch", "int", NO),
    Field("isr", "ints", None), Field("replicas", "ints"))
CONTROL = (Field("controller_epoch", "int", 0), Field("broker_epoch", "int", NO),
           Field("corr", "int", 0))


def _states(parts: tuple, ctx) -> tuple:
    return tuple(M.PartitionState(p["tp"], _topic_id(p, ctx), p["leader"], p["leader_epoch"],
                                  p["leader_epoch"] if p["partition_epoch"] == NO else p["partition_epoch"],
                                  p["replicas"] if p["isr"] is None else p["isr"], p["replicas"])
                 for p in parts)


def _corr(f: dict, ctx, kind: str) -> int:
    return f["corr"] or ctx.corr(kind)


def _leader_and_isr(f: dict, ctx) -> M.LeaderAndIsr:
    return M.LeaderAndIsr(ctx.src, f["controller_epoch"], f["broker_epoch"],
                          _corr(f, ctx, "LeaderAndIsr"), _states(f["partitions"], ctx), f["full"])


def _update_metadata(f: dict, ctx) -> M.UpdateMetadata:
    alive = ctx.alive() if f["alive"] is None else f["alive"]
    return M.UpdateMetadata(ctx.src, f["controller_epoch"], _corr(f, ctx, "UpdateMetadata"),
                            _states(f["partitions"], ctx), alive, f["deleted"], (),
                            f["broker_epoch"])


STOP_PARTITION = (Field("tp", "str"), Field("topic_id", "int", NO),
                  Field("leader_epoch", "int", NO), Field("delete", "bool", False))


def _stop_replica(f: dict, ctx) -> M.StopReplica:
    parts = tuple(M.StopReplicaPartition(p["tp"], _topic_id(p, ctx), p["leader_epoch"],
                                         p["delete"], p["leader_epoch"])
                  for p in f["partitions"])
    return M.StopReplica(ctx.src, f["controller_epoch"], f["broker_epoch"],
                         _corr(f, ctx, "StopReplica"), parts)


# -- data-plane requests (from a client or a follower) ------------------------------------
PRODUCE_PARTITION = (
    Field("tp", "str"), Field("record_count", "int", 1), Field("producer_id", "int", NO),
    Field("producer_epoch", "int", NO), Field("base_sequence", "int", NO),
    Field("current_leader_epoch", "int", NO), Field("batch_id", "str", ""),
    Field("timestamp", "ms", 0))


def _produce(f: dict, ctx) -> M.Produce:
    parts = []
    for p in f["partitions"]:
        batch = M.Batch(p["batch_id"] or ctx.batch_id(), ctx.src, p["record_count"],
                        p["timestamp"] * 1000, p["producer_id"], p["producer_epoch"],
                        p["base_sequence"])
        parts.append(M.ProducePartition(p["tp"], batch, p["current_leader_epoch"],
                                        p["current_leader_epoch"], NO))
    return M.Produce(_corr(f, ctx, "Produce"), f["acks"], f["timeout_ms"] * 1000, tuple(parts))


FETCH_PARTITION = (Field("tp", "str"), Field("fetch_offset", "int"),
                   Field("current_leader_epoch", "int", NO), Field("last_fetched_epoch", "int", NO),
                   Field("log_start_offset", "int", NO))


def _sender_broker(ctx) -> int:
    """The sender's broker id (`b<id>`), or -1 for a sender that is no broker."""
    src = ctx.src
    return int(src[1:]) if src[:1] == "b" and src[1:].isdigit() else NO


def _replica_id(f: dict, ctx) -> int:
    return f["replica_id"] if f["replica_id"] != -2 else _sender_broker(ctx)


def _fetch(f: dict, ctx) -> M.Fetch:
    parts = tuple(M.FetchPartition(p["tp"], p["fetch_offset"], p["current_leader_epoch"],
                                   p["last_fetched_epoch"], p["log_start_offset"])
                  for p in f["partitions"])
    return M.Fetch(_replica_id(f, ctx), _corr(f, ctx, "Fetch"), f["max_wait_ms"] * 1000, parts,
                   client_metadata=f["client_metadata"], replica_epoch=f["replica_epoch"],
                   **session(f, ctx))


EPOCH_PARTITION = (Field("tp", "str"), Field("current_leader_epoch", "int", NO),
                   Field("leader_epoch", "int"))


def _offsets_for_leader_epoch(f: dict, ctx) -> M.OffsetsForLeaderEpoch:
    parts = tuple(M.OffsetForLeaderPartition(p["tp"], p["current_leader_epoch"], p["leader_epoch"])
                  for p in f["partitions"])
    return M.OffsetsForLeaderEpoch(_replica_id(f, ctx), _corr(f, ctx, "OffsetsForLeaderEpoch"), parts)


LIST_OFFSETS_PARTITION = (Field("tp", "str"), Field("current_leader_epoch", "int", NO),
                          Field("timestamp", "int", -1))


def _list_offsets(f: dict, ctx) -> M.ListOffsets:
    """A ListOffsets from the sender: a broker `b<id>` names its id, anyone else is a consumer
    (-1), unless `replica_id` says otherwise (-2: the debugging id, a follower may answer)."""
    replica = f["replica_id"] if f["replica_id"] is not None else _sender_broker(ctx)
    parts = tuple(M.ListOffsetsPartition(p["tp"], p["current_leader_epoch"], p["timestamp"])
                  for p in f["partitions"])
    return M.ListOffsets(replica, _corr(f, ctx, "ListOffsets"), parts)


def _metadata(f: dict, ctx) -> M.MetadataRequest:
    return M.MetadataRequest(_corr(f, ctx, "Metadata"))


# -- answers (to a follower, a partition leader, or a client) -----------------------------
RECORD = (Field("base_offset", "int"), Field("record_count", "int", 1),
          Field("leader_epoch", "int"), Field("producer_id", "int", NO),
          Field("producer_epoch", "int", NO), Field("base_sequence", "int", NO),
          Field("batch_id", "str", ""), Field("timestamp", "ms", 0))
FETCH_DATA = (  # `empty`: a v2 batch whose records are all gone (compacted), offsets kept
    Field("tp", "str"), Field("error", "error", 0), Field("high_watermark", "int", NO),
    Field("log_start_offset", "int", NO),
    Field("records", "tables", (), RECORD + (Field("empty", "bool", False),)),
    Field("diverging_epoch", "pair", None), Field("current_leader", "pair", None))


def record_entry(r: dict, ctx, producer: str = "") -> tuple:
    """A batch as a log holds it: (base offset, offsets it spans, leader epoch, Batch); an
    `empty` one holds no record (`Batch.count` 0)."""
    batch = M.Batch(r["batch_id"] or ctx.batch_id(), producer,
                    0 if r.get("empty") else r["record_count"],
                    r["timestamp"] * 1000, r["producer_id"], r["producer_epoch"],
                    r["base_sequence"])
    return (r["base_offset"], r["record_count"], r["leader_epoch"], batch)


def _fetch_response(f: dict, ctx) -> M.FetchResponse:
    parts = tuple(M.FetchPartitionData(
        p["tp"], p["error"], p["high_watermark"], p["log_start_offset"],
        tuple(record_entry(r, ctx) for r in p["records"]), p["diverging_epoch"],
        p["current_leader"]) for p in f["partitions"])
    if not getattr(ctx.run.node, "polls_when_told", False):
        parts = ctx.order_like_request("Fetch", parts)
    # a consumer that buffers answers collects them in the answer's order, and only those given
    return M.FetchResponse(_corr(f, ctx, "Fetch"), parts, (), **answer(f))


def _alter_partition_response(f: dict, ctx) -> M.AlterPartitionResponse:
    return M.AlterPartitionResponse(_corr(f, ctx, "AlterPartition"), f["tp"], f["error"],
                                    f["leader_epoch"], f["partition_epoch"], f["isr"])


PRODUCE_RESULT = (Field("tp", "str"), Field("error", "error", 0), Field("base_offset", "int", NO),
                  Field("log_start_offset", "int", NO), Field("current_leader", "pair", None))


def _produce_response(f: dict, ctx) -> M.ProduceResponse:
    results = tuple(M.ProducePartitionResult(r["tp"], r["error"], r["base_offset"],
                                             r["log_start_offset"], r["current_leader"])
                    for r in f["results"])
    return M.ProduceResponse(_corr(f, ctx, "Produce"), results, f["node_endpoints"])


METADATA_PARTITION = (Field("tp", "str"), Field("topic_id", "int", NO), Field("leader", "int"),
                      Field("leader_epoch", "int"))


def _metadata_response(f: dict, ctx) -> M.MetadataResponse:
    parts = tuple((p["tp"], _topic_id(p, ctx), p["leader"], p["leader_epoch"])
                  for p in f["partitions"])
    brokers = ctx.alive() if f["brokers"] is None else f["brokers"]
    return M.MetadataResponse(_corr(f, ctx, "Metadata"), brokers, parts)


def _answer(response, part, request: str, fields: tuple) -> Callable[[dict, Any], Any]:
    """The builder of an answer to the node's last `request`: one `part(tp, *fields)` per
    partition the probe lists."""
    def build(f: dict, ctx) -> Any:
        parts = tuple(part(p["tp"], *(p[name] for name in fields)) for p in f["partitions"])
        return response(_corr(f, ctx, request), parts)
    return build


EPOCH_END_OFFSET = (Field("tp", "str"), Field("error", "error", 0), Field("leader_epoch", "int", NO),
                    Field("end_offset", "int", NO))
_offsets_for_leader_epoch_response = _answer(
    M.OffsetsForLeaderEpochResponse, M.EpochEndOffset, "OffsetsForLeaderEpoch",
    ("error", "leader_epoch", "end_offset"))
LIST_OFFSETS_RESULT = (Field("tp", "str"), Field("error", "error", 0), Field("offset", "int", NO),
                       Field("leader_epoch", "int", NO))
_list_offsets_response = _answer(M.ListOffsetsResponse, M.ListOffsetsPartitionResponse,
                                 "ListOffsets", ("error", "offset", "leader_epoch"))


def _metadata_fetch_response(f: dict, ctx) -> Any:
    """The quorum leader's answer to the KRaft broker's last Fetch of the metadata log: the
    records from the offset it asked for, all committed unless `high_watermark` says less."""
    start = ctx.metadata_offset()
    records = build_records(f["records"], ctx.metadata_image(), ctx, start)
    entries = tuple((start + i, f["leader_epoch"], r) for i, r in enumerate(records))
    hw = start + len(entries) if f["high_watermark"] == NO else f["high_watermark"]
    return QuorumFetchResponse(f["leader_epoch"], ctx.src, 0, entries, hw, None,
                               _corr(f, ctx, "QuorumFetch"))


def _parts(sub: tuple, name: str = "partitions") -> Field:
    return Field(name, "tables", REQUIRED, sub)


BROKER, PRODUCER, CONSUMER, CONTROLLER = ("broker",), ("producer",), ("consumer",), ("controller",)
ZK_CONTROLLER = ("zk_controller",)


def _sender_id(f: dict, ctx) -> int:
    return f["broker"] if f["broker"] != NO else int(ctx.src[1:])


def _alter_partition(f: dict, ctx) -> M.AlterPartition:
    broker = _sender_id(f, ctx)
    return M.AlterPartition(_corr(f, ctx, "AlterPartition"), broker, f["tp"],
                            f["leader_epoch"], f["partition_epoch"], tuple(f["isr"]),
                            ctx.registered_epoch(broker) if f["broker_epoch"] is None
                            else f["broker_epoch"], tuple(f["isr_epochs"]),
                            ctx.alter_partition_topic_id(f["tp"]) if f["topic_id"] is None
                            else f["topic_id"])


def _controlled_shutdown(f: dict, ctx) -> M.ControlledShutdown:
    """Its broker epoch left out: the one the controller holds for the sender, on a profile
    whose ControlledShutdown carries one (v2, IBP 2.2), else -1."""
    broker = _sender_id(f, ctx)
    epoch = f["broker_epoch"]
    if epoch is None:
        epoch = ctx.registered_epoch(broker) if ctx.sends_broker_epoch() else -1
    return M.ControlledShutdown(_corr(f, ctx, "ControlledShutdown"), broker, epoch)


LIVE_BROKER = (Field("id", "int"), Field("epoch", "int", NO))


def _broker_change(f: dict, ctx) -> ZM.BrokerChange:
    """ZooKeeper's registrations become `live_brokers` as the step begins (`ctx`), and the
    controller is told."""
    ctx.set_registrations(f["live_brokers"])
    return ZM.BrokerChange(tuple(b["id"] for b in f["live_brokers"]))


def _topic_change(f: dict, ctx) -> ZM.TopicChange:
    return ZM.TopicChange(f["topic"], tuple(tuple(p["replicas"]) for p in f["partitions"]))


def _broker_heartbeat(f: dict, ctx) -> BrokerHeartbeat:
    return BrokerHeartbeat(_sender_id(f, ctx), *(f[k] for k in (
        "broker_epoch", "metadata_offset", "want_shutdown", "expired")))


def _broker_registration(f: dict, ctx) -> BrokerRegistration:
    return BrokerRegistration(_sender_id(f, ctx), f["incarnation"], f["previous_broker_epoch"])

KINDS: dict[str, Kind] = {
    "LeaderAndIsr": Kind(BROKER, CONTROL + (_parts(PARTITION_STATE), Field("full", "bool", False)),
                         _leader_and_isr, "the controller's LeaderAndIsr", mode="zk"),
    "UpdateMetadata": Kind(BROKER, CONTROL + (_parts(PARTITION_STATE), Field("alive", "ints", None),
                                              Field("deleted", "strs", ())),
                           _update_metadata, "the controller's UpdateMetadata", mode="zk"),
    "StopReplica": Kind(BROKER, CONTROL + (_parts(STOP_PARTITION),), _stop_replica,
                        "the controller's StopReplica", mode="zk"),
    "MetadataFetchResponse": Kind(
        BROKER, (Field("corr", "int", 0), Field("leader_epoch", "int", 1),
                 Field("high_watermark", "int", NO), _parts(METADATA_RECORD, "records")),
        _metadata_fetch_response, "the quorum leader's answer to a KRaft broker's Fetch of "
        "the metadata log", mode="kraft", wire_kind="QuorumFetchResponse"),
    "Produce": Kind(BROKER, (Field("acks", "int", -1), Field("timeout_ms", "int", 30000),
                             Field("corr", "int", 0), _parts(PRODUCE_PARTITION)),
                    _produce, "a producer's Produce"),
    "Fetch": Kind(BROKER, (Field("replica_id", "int", -2), Field("max_wait_ms", "int", 0),
                           Field("corr", "int", 0), _parts(FETCH_PARTITION),
                           Field("client_metadata", "bool", False),
                           Field("replica_epoch", "int", NO)) + SESSION_FIELDS,
                  _fetch, "a follower's (replica_id >= 0) or a consumer's (-1) Fetch"),
    "OffsetsForLeaderEpoch": Kind(BROKER, (Field("replica_id", "int", -2), Field("corr", "int", 0),
                                           _parts(EPOCH_PARTITION)),
                                  _offsets_for_leader_epoch, "OffsetsForLeaderEpoch"),
    "ListOffsets": Kind(BROKER, (Field("replica_id", "int", None), Field("corr", "int", 0),
                                 _parts(LIST_OFFSETS_PARTITION)),
                        _list_offsets, "a consumer's (or a replica's) ListOffsets, timestamp a "
                        "time in ms, -1 LATEST, -2 EARLIEST, -3 MAX_TIMESTAMP, -4 EARLIEST_LOCAL"),
    "Metadata": Kind(BROKER, (Field("corr", "int", 0),), _metadata, "a client's Metadata request"),
    "FetchResponse": Kind(BROKER + CONSUMER, (Field("corr", "int", 0), _parts(FETCH_DATA)) + ANSWER,
                          _fetch_response, "the leader's answer to this follower's or "
                          "consumer's last Fetch", True),
    "AlterPartitionResponse": Kind(
        BROKER, (Field("corr", "int", 0), Field("tp", "str"), Field("error", "error", 0),
                 Field("leader_epoch", "int"), Field("partition_epoch", "int"),
                 Field("isr", "ints")), _alter_partition_response,
        "the controller's answer to this leader's last AlterPartition"),
    "ProduceResponse": Kind(PRODUCER, (Field("corr", "int", 0), _parts(PRODUCE_RESULT, "results"),
                                       Field("node_endpoints", "ints", ())),
                            _produce_response, "a broker's answer to the producer's Produce", True),
    "MetadataResponse": Kind(PRODUCER + CONSUMER, (Field("corr", "int", 0),
                                                   _parts(METADATA_PARTITION),
                                                   Field("brokers", "ints", None)),
                             _metadata_response, "a broker's Metadata answer", True),
    "AlterPartition": Kind(
        CONTROLLER + ZK_CONTROLLER,
        (Field("corr", "int", 0), Field("broker", "int", NO), Field("tp", "str"),
         Field("leader_epoch", "int"), Field("partition_epoch", "int"), Field("isr", "ints"),
         Field("broker_epoch", "int", None), Field("isr_epochs", "ints", ()),
         Field("topic_id", "int", None)),
        _alter_partition, "a partition leader's AlterPartition (KIP-497)", True),
    "Shutdown": Kind(BROKER + ZK_CONTROLLER, (), lambda f, ctx: None, "the operator begins "
                     "the broker's (controlled) shutdown, or stops a controller: no message",
                     act=lambda b, _src, _f: b.begin_shutdown()),
    "Disconnect": Kind(PRODUCER + CONSUMER, (), lambda f, ctx: None, "the client's connection "
                       "to the sender closes under its requests (MockClient.disconnect, a "
                       "response prepared with disconnect = true): no message",
                       True, act=lambda p, src, _f: p.on_disconnect(src)),
    "ControlledShutdown": Kind(
        ZK_CONTROLLER, (Field("corr", "int", 0), Field("broker", "int", NO),
                        Field("broker_epoch", "int", None)),
        _controlled_shutdown, "a ZooKeeper-mode broker's ControlledShutdown", True),
    "BrokerChange": Kind(
        ZK_CONTROLLER, (_parts(LIVE_BROKER, "live_brokers"),), _broker_change,
        "ZooKeeper's notification that the registered brokers changed (from zk)"),
    "TopicChange": Kind(
        ZK_CONTROLLER, (Field("topic", "str"), _parts((Field("replicas", "ints"),))),
        _topic_change, "ZooKeeper's notification that a topic was created (from zk)"),
    "PartitionModifications": Kind(
        ZK_CONTROLLER, (Field("topic", "str"), _parts((Field("replicas", "ints"),))),
        lambda f, ctx: ZM.PartitionModifications(*_topic_change(f, ctx)),
        "ZooKeeper's notification that a topic's assignment was rewritten: all of it, e.g. "
        "with partitions added (from zk)"),
    "PreferredReplicaElection": Kind(
        ZK_CONTROLLER, (Field("partitions", "strs"),),
        lambda f, ctx: ZM.PreferredReplicaElection(f["partitions"]),
        "ZooKeeper's notification that partitions were named for a preferred leader "
        "election (from zk)"),
    "PartitionReassignment": Kind(
        ZK_CONTROLLER, (_parts((Field("tp", "str"), Field("replicas", "ints"))),),
        lambda f, ctx: ZM.PartitionReassignment(tuple((p["tp"], tuple(p["replicas"]))
                                                     for p in f["partitions"])),
        "ZooKeeper's notification that partitions were named for a reassignment (from zk)"),
    "BrokerHeartbeat": Kind(
        CONTROLLER, (Field("broker", "int", NO), Field("broker_epoch", "int"),
                     Field("metadata_offset", "int", 0), Field("want_shutdown", "bool", False),
                     Field("expired", "bool", False)), _broker_heartbeat, "a KRaft broker's "
        "heartbeat (KIP-631; `expired`: it outstayed its deadline in the controller's queue)", True),
    "BrokerRegistration": Kind(
        CONTROLLER, (Field("broker", "int", NO), Field("incarnation", "int", 1),
                     Field("previous_broker_epoch", "int", -1)), _broker_registration,
        "a KRaft broker's registration (KIP-631; PreviousBrokerEpoch, KIP-966: -1 for none)", True),
    "OffsetsForLeaderEpochResponse": Kind(
        CONSUMER, (Field("corr", "int", 0), _parts(EPOCH_END_OFFSET)),
        _offsets_for_leader_epoch_response,
        "the leader's answer to the consumer's position validation (KIP-320)", True),
    "ListOffsetsResponse": Kind(
        BROKER + CONSUMER, (Field("corr", "int", 0), _parts(LIST_OFFSETS_RESULT)),
        _list_offsets_response, "the leader's answer to a consumer's or follower's reset", True),
}
KINDS.update(RAFT_KINDS)  # the KRaft quorum's own, to a voter under test
KINDS.update(ZK_CONTROLLER_KINDS)  # /controller itself, to a ZooKeeper-mode controller
KINDS.update(APP_KINDS)  # the application's calls on a consumer under test
KINDS.update(PRODUCER_KINDS)  # a broker's InitProducerId answer to a producer
KINDS.update(ADMIN_KINDS | CONTROLLER_ADMIN_KINDS | ELECTION_RESULT_KINDS | RESTART_KINDS)
