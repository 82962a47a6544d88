"""The application's calls on a client under test, as probe steps (`from = "app"`).

Contract: `APP_KINDS` maps each call a consumer probe may make mid-test to its `Kind` (joined
into `sim.kafka.probe.wire.KINDS`): `Seek` (`seek`, or `seekUnvalidated` with
`awaiting_validation`; the fields of a starting state's position), `Pause`, `Resume` and
`Assign` (`assignFromUser`), `SeekToBeginning` and `SeekToEnd` (`requestOffsetReset` by
EARLIEST or LATEST), each with the partitions it names, and `Poll` (the application's
poll, which collects the buffered Fetch answers: only for a consumer that `polls_when_told`). A call is an act on the
consumer itself, through the consumer's own methods (`sim.kafka.consumer_subscription`), as a
Kafka unit test calls `SubscriptionState`; nothing is sent for it. `check_app_steps(steps,
assigned, tps, protocol, where)` refuses, as the scenario loads, what Kafka's own calls would throw on
or the profile cannot do: a call naming a partition that is not assigned at that step
(IllegalStateException "No current assignment for partition"), an `Assign` of a partition of
another topic, a position's leader without its epoch, and `seekUnvalidated` before 2.3 (no
validation). A producer's `Send` (`tp`, `record_count`, `batch_id`: the application's `send`,
`Producer.app_send`; `wake = false`: a test's `appendToAccumulator`, which wakes no send loop),
`Close` (`force`: the producer's close, `Producer.initiate_close`) and `SetProducerId` (`producer_id`, `producer_epoch`: the test's own
`resetProducerId` and `setProducerIdAndEpoch` at 1.0-2.4, `Producer.set_producer_id`) are
checked by `check_producer_steps`: a partition of the producer's topic, a name no batch of the
starting state nor an earlier `Send` has, a new id only where the release's test sets one.
"""

from __future__ import annotations

from typing import Any

from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.kind import NO, Kind
from sim.kafka.probe.wire_producer import check_init_producer_id

CONSUMER = ("consumer",)
PRODUCER = ("producer",)
SEND = (Field("tp", "str"), Field("record_count", "int", 1), Field("batch_id", "str"),
        Field("wake", "bool", True))
PRODUCER_ID = (Field("producer_id", "int"), Field("producer_epoch", "int", 0))
SEEK = (Field("tp", "str"), Field("offset", "int"), Field("offset_epoch", "int", NO),
        Field("leader", "int", NO), Field("leader_epoch", "int", NO),
        Field("awaiting_validation", "bool", False))
PARTITIONS = (Field("partitions", "strs"),)


def _seek(consumer, _src: str, f: dict) -> None:
    leader = None if f["leader"] == NO else (f["leader"], f["leader_epoch"])
    consumer.seek(f["tp"], f["offset"], f["offset_epoch"], leader, f["awaiting_validation"])


def _fields(f: dict, ctx) -> dict:
    """An act's record in the `probe_step` event: its checked fields."""
    return dict(f)


APP_KINDS = {
    "Seek": Kind(CONSUMER, SEEK, _fields, "the application's seek (`awaiting_validation`: "
                 "seekUnvalidated)", act=_seek),
    "Pause": Kind(CONSUMER, PARTITIONS, _fields, "the application pauses partitions",
                  act=lambda c, _src, f: c.pause(f["partitions"])),
    "Resume": Kind(CONSUMER, PARTITIONS, _fields, "the application resumes partitions",
                   act=lambda c, _src, f: c.resume(f["partitions"])),
    "Assign": Kind(CONSUMER, PARTITIONS, _fields, "the application assigns partitions "
                   "(assignFromUser)", act=lambda c, _src, f: c.assign(f["partitions"])),
    "SeekToBeginning": Kind(CONSUMER, PARTITIONS, _fields, "the application seeks to the "
                            "beginning: a reset by EARLIEST (requestOffsetReset)",
                            act=lambda c, _src, f: c.request_offset_reset(f["partitions"],
                                                                          "earliest")),
    "SeekToEnd": Kind(CONSUMER, PARTITIONS, _fields, "the application seeks to the end: a "
                      "reset by LATEST (requestOffsetReset)",
                      act=lambda c, _src, f: c.request_offset_reset(f["partitions"], "latest")),
    "Poll": Kind(CONSUMER, (), _fields, "the application polls: the buffered Fetch answers are "
                 "collected (FetchCollector.collectFetch; with polls_when_told)",
                 act=lambda c, _src, f: c.poll()),
    "Send": Kind(PRODUCER, SEND, _fields, "the application sends records to a partition "
                 "(KafkaProducer.send: RecordAccumulator.append)",
                 act=lambda p, _src, f: p.app_send(f["tp"], f["record_count"], f["batch_id"],
                                                   f["wake"])),
    "Close": Kind(PRODUCER, (Field("force", "bool", False),), _fields, "the application closes "
                  "the producer (KafkaProducer.close: initiateClose; force: forceClose)",
                  act=lambda p, _src, f: p.initiate_close(f["force"])),
    "SetProducerId": Kind(PRODUCER, PRODUCER_ID, _fields, "the test resets the producer id and "
                          "sets a new one (resetProducerId, setProducerIdAndEpoch; 1.0-2.4)",
                          act=lambda p, _src, f: p.set_producer_id(f["producer_id"],
                                                                   f["producer_epoch"])),
}


def check_producer_steps(steps: tuple, producer, where) -> None:
    """Refuse a producer's `Send` naming a partition outside its topic, fewer than one record,
    or a `batch_id` a batch of the starting state or an earlier `Send` already has (checks
    read a batch by it), and a `SetProducerId` the producer cannot take (`_check_set_id`);
    `where(i)` is step i's key."""
    names = [pb.batch.bid for queue in producer.queues.values() for pb in queue]
    tps = producer.tps
    for i, step in enumerate(steps):
        key, f = f"{where(i)}.body", step.fields
        if step.kind == "SetProducerId":
            _check_set_id(producer, f, key)
        if step.kind == "InitProducerIdResponse":
            check_init_producer_id(f, key)
        if step.kind != "Send":
            continue
        _known([f["tp"]], tps, f"{key}.tp", "a partition of the producer's topic")
        if f["record_count"] < 1:
            raise FieldProblem(f"{key}.record_count", f"{f['record_count']} records is no send",
                               "give 1 or more")
        if f["batch_id"] in names:
            raise FieldProblem(f"{key}.batch_id", f"{f['batch_id']!r} already names a batch",
                               "give each Send its own batch_id")
        names.append(f["batch_id"])


def check_app_steps(steps: tuple, assigned: list[str], tps: list[str], protocol: Any,
                    where, polls: bool = False) -> None:
    """Refuse an application call Kafka would throw on, or the profile cannot make (see the
    module doc); `where(i)` is step i's key. `assigned` is the starting state's assignment,
    `tps` the partitions of the consumer's topic, `polls` whether it `polls_when_told`."""
    assigned = list(assigned)
    for i, step in enumerate(steps):
        if step.kind not in APP_KINDS:
            continue
        key, f = f"{where(i)}.body", step.fields
        if step.kind == "Poll":
            if not polls:
                raise FieldProblem(f"{where(i)}.deliver", "this consumer collects each answer "
                                   "as it arrives", "set probe.state.polls_when_told = true")
            continue
        named = [f["tp"]] if step.kind == "Seek" else list(f["partitions"])
        if step.kind == "Assign":
            _known(named, tps, f"{key}.partitions", "a partition of the consumer's topic")
            assigned = [tp for tp in tps if tp in named]
            continue
        _known(named, assigned, f"{key}.tp" if step.kind == "Seek" else f"{key}.partitions",
               "a partition assigned at this step (Kafka: No current assignment for partition)")
        if step.kind == "Seek":
            _check_seek(f, key, protocol)


def _known(named: list, allowed: list, key: str, what: str) -> None:
    for tp in named:
        if tp not in allowed:
            raise FieldProblem(key, f"{tp!r} is not {what}", f"use one of {', '.join(allowed)}")


def _check_seek(f: dict, key: str, protocol) -> None:
    if (f["leader"] == NO) != (f["leader_epoch"] == NO):
        raise FieldProblem(key, "a position's leader needs its leader_epoch",
                           "give both, or neither for the metadata's current leader")
    if f["awaiting_validation"] and protocol is not None and not protocol.consumer_validation:
        raise FieldProblem(f"{key}.awaiting_validation", "this consumer does not validate "
                           "positions (KIP-320's client side came in 2.3)",
                           "leave it out, or pick a 2.3 or later profile")


def _check_set_id(producer, f: dict, key: str) -> None:
    """`SetProducerId` is SenderTest's own call at 1.0-2.4 (`resetProducerId` is public there);
    from 2.5 (KIP-360) an idempotent producer resets its id itself, on an exhausted epoch, and
    takes the new one from its InitProducerId's answer (an `InitProducerIdResponse` step). An
    id or epoch below 0 is no producer's."""
    if producer.idempotence == "off":
        raise FieldProblem(key, "the producer is not idempotent: it has no producer id",
                           "set enable_idempotence, or leave the step out")
    if producer.protocol.client_retries_out_of_order:
        raise FieldProblem(key, "a 2.5+ producer (KIP-360) takes a new producer id only from "
                           "the answer to its own InitProducerId",
                           "pick a 1.0-2.4 profile, or answer with InitProducerIdResponse")
    if f["producer_id"] < 0 or not 0 <= f["producer_epoch"] <= 32767:
        raise FieldProblem(key, "a producer id is 0 or more, an epoch 0..32767 (a short)",
                           "give a valid producer_id and producer_epoch")
