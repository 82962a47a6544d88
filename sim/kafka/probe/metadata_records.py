"""KRaft metadata records a probe delivers to a KRaft broker, as the quorum leader's answer to
its Fetch of the metadata log (`MetadataFetchResponse`).

Contract: `RECORD` is the fields a record may set (Kafka's record fields in snake case; `type`
is the record type). `check_records(steps, state, brokers)` refuses, when the scenario loads, a
record of an unknown type, one without the fields its type needs, and a PartitionChangeRecord
for a partition no earlier record (or the starting state) created; problems are
`FieldProblem`s naming the key. `build_records(records, image, ctx)` makes the model's
`MetadataRecord`s: a PartitionRecord carries the whole state (ISR default the replicas, epochs
default 0, KIP-966's `elr` and `last_known_elr` default empty); a PartitionChangeRecord names
only what changes and is merged as
`PartitionRegistration.merge` does: the partition epoch goes up by one, and the leader epoch too
when it names a leader; a RemoveTopicRecord names the topic by id or name; a
BrokerRegistrationChangeRecord's or UnregisterBrokerRecord's broker epoch defaults to the one
the broker's image holds.
"""

from __future__ import annotations

from typing import Any

from sim.kafka import kraft_messages as K
from sim.kafka.messages import PartitionState
from sim.kafka.probe.fields import Field, FieldProblem

RECORD = (Field("type", "str"), Field("name", "str", ""), Field("topic_id", "int", None),
          Field("tp", "str", ""), Field("leader", "int", None), Field("leader_epoch", "int", None),
          Field("partition_epoch", "int", None), Field("isr", "ints", None),
          Field("replicas", "ints", None), Field("broker", "int", None),
          Field("fenced", "bool", None), Field("broker_epoch", "int", None),
          Field("in_controlled_shutdown", "bool", None), Field("incarnation", "int", None),
          Field("elr", "ints", None), Field("last_known_elr", "ints", None))
# type -> (fields it needs, fields it may set besides `type`)
TYPES = {
    K.TOPIC: (("name",), ("name", "topic_id")),
    K.PARTITION: (("tp", "leader", "replicas"),
                  ("tp", "topic_id", "leader", "leader_epoch", "partition_epoch", "isr", "replicas",
                   "elr", "last_known_elr")),
    K.PARTITION_CHANGE: (("tp",), ("tp", "leader", "isr", "replicas")),
    K.REMOVE_TOPIC: ((), ("name", "topic_id")),
    K.REGISTER_BROKER: (("broker",), ("broker", "fenced", "incarnation")),
    K.BROKER_CHANGE: (("broker",), ("broker", "fenced", "broker_epoch", "in_controlled_shutdown")),
    K.UNREGISTER_BROKER: (("broker",), ("broker", "broker_epoch")),
}
UNSET = ("", None)


def check_records(steps, state: dict, key_of) -> None:
    """The load-time checks of a controller's starting `records` and of every
    MetadataFetchResponse of `steps`, in order (`key_of(i)` is step i's key)."""
    created = {p["tp"] for p in state.get("partitions", ())}
    _check_list(state.get("records", ()), "node.records", created)
    for i, step in enumerate(steps):
        if step.kind == "MetadataFetchResponse":
            _check_list(step.fields["records"], f"{key_of(i)}.body.records", created)


def _check_list(records, prefix: str, created: set) -> None:
    """`records` in order, `created` the partitions made so far (grown by their
    PartitionRecords)."""
    for j, rec in enumerate(records):
        key = f"{prefix}[{j}]"
        _check_record(rec, key)
        if rec["type"] == K.PARTITION:
            created.add(rec["tp"])
        elif rec["type"] == K.PARTITION_CHANGE and rec["tp"] not in created:
            raise FieldProblem(f"{key}.tp", f"{rec['tp']!r} has no PartitionRecord before it",
                               "create the partition first (a PartitionRecord, or the state)")
        elif rec["type"] == K.REMOVE_TOPIC and rec["name"] == "" and rec["topic_id"] is None:
            raise FieldProblem(key, "a RemoveTopicRecord names no topic",
                               "give its name or topic_id")


def _check_record(rec: dict, key: str) -> None:
    kind = rec["type"]
    if kind not in TYPES:
        raise FieldProblem(f"{key}.type", f"unknown record type {kind!r}",
                           f"use one of: {', '.join(TYPES)}")
    needs, allowed = TYPES[kind]
    for name in needs:
        if rec[name] in UNSET:
            raise FieldProblem(f"{key}.{name}", f"a {kind} needs {name}", f"give {name}")
    extra = [n for n, value in rec.items() if n != "type" and value not in UNSET
             and n not in allowed]
    if extra:
        raise FieldProblem(f"{key}.{extra[0]}", f"a {kind} has no {extra[0]}",
                           f"a {kind} takes: {', '.join(allowed)}")


def build_records(records: tuple, image, ctx, first_offset: int = 0) -> list:
    """The model's records for `records`, to be written from `first_offset` on, each read
    against the image as it will be once the records before it are applied (a scratch copy:
    the node's own image is not touched); a broker registered among them has the offset of its
    RegisterBrokerRecord as its epoch."""
    parts = dict(image.parts) if image is not None else {}
    topics = dict(image.topics) if image is not None else {}
    brokers = {b: r.epoch for b, r in image.brokers.items()} if image is not None else {}
    out = []
    for i, rec in enumerate(records):
        record = _record(rec, parts, topics, brokers, ctx)
        if record.kind == K.REGISTER_BROKER:
            brokers[rec["broker"]] = first_offset + i
        elif record.kind in (K.PARTITION, K.PARTITION_CHANGE):
            parts[rec["tp"]] = _state_of(record)
        elif record.kind == K.TOPIC:
            topics[rec["name"]] = record.get("topic_id")
        out.append(record)
    return out


def _state_of(record) -> PartitionState:
    get = record.get
    return PartitionState(get("tp"), get("topic_id"), get("leader"), get("leader_epoch"),
                          get("partition_epoch"), get("isr"), get("replicas"),
                          elr=get("elr", ()), last_known_elr=get("last_known_elr", ()))


def _record(rec: dict, parts: dict, topics: dict, brokers: dict, ctx) -> Any:
    kind = rec["type"]
    if kind == K.TOPIC:
        topic_id = rec["topic_id"] if rec["topic_id"] is not None else ctx.topic_id(rec["name"] + "-0")
        return K.MetadataRecord.of(kind, name=rec["name"], topic_id=topic_id)
    if kind == K.PARTITION:
        replicas = tuple(rec["replicas"])
        topic_id = rec["topic_id"] if rec["topic_id"] is not None else \
            topics.get(rec["tp"].rpartition("-")[0], ctx.topic_id(rec["tp"]))
        elr = {k: tuple(rec[k]) for k in ("elr", "last_known_elr") if rec[k]}  # KIP-966
        return K.MetadataRecord.of(
            kind, tp=rec["tp"], topic_id=topic_id, leader=rec["leader"],
            leader_epoch=_or(rec["leader_epoch"], 0), partition_epoch=_or(rec["partition_epoch"], 0),
            isr=tuple(_or(rec["isr"], replicas)), replicas=replicas, **elr)
    if kind == K.PARTITION_CHANGE:
        # a partition the broker has not applied (it ignored an answer): merged onto nothing
        old = parts.get(rec["tp"]) or PartitionState(
            rec["tp"], ctx.topic_id(rec["tp"]), -1, -1, -1, (), ())
        leader = _or(rec["leader"], old.leader)
        return K.MetadataRecord.of(
            kind, tp=old.tp, topic_id=old.topic_id, leader=leader,
            leader_epoch=old.leader_epoch + (rec["leader"] is not None),
            partition_epoch=old.partition_epoch + 1, isr=tuple(_or(rec["isr"], old.isr)),
            replicas=tuple(_or(rec["replicas"], old.replicas)))
    if kind == K.REMOVE_TOPIC:
        topic_id = rec["topic_id"] if rec["topic_id"] is not None else topics.get(rec["name"], -1)
        return K.MetadataRecord.of(kind, topic_id=topic_id)
    if kind == K.REGISTER_BROKER:
        return K.MetadataRecord.of(kind, broker=rec["broker"], fenced=bool(rec["fenced"]),
                                   incarnation=_or(rec["incarnation"], 0))
    epoch = _or(rec["broker_epoch"], brokers.get(rec["broker"], -1))
    if kind == K.UNREGISTER_BROKER:
        return K.MetadataRecord.of(kind, broker=rec["broker"], broker_epoch=epoch)
    return K.MetadataRecord.of(kind, broker=rec["broker"], fenced=bool(rec["fenced"]),
                               broker_epoch=_or(rec["broker_epoch"], brokers.get(rec["broker"], -1)),
                               in_controlled_shutdown=bool(rec["in_controlled_shutdown"]))


def _or(value, default):
    return default if value is None else value
