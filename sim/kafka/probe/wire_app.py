"""The application's calls on a consumer under test, as probe steps (`from = "app"`).

Contract: `APP_KINDS` maps each call a consumer probe may make mid-test to its `Kind` (joined
into `sim.kafka.probe.wire.KINDS`): `Seek` (`seek`, or `seekUnvalidated` with
`awaiting_validation`; the fields of a starting state's position), `Pause`, `Resume` and
`Assign` (`assignFromUser`), each with the partitions it names. A call is an act on the
consumer itself, through the consumer's own methods (`sim.kafka.consumer_subscription`), as a
Kafka unit test calls `SubscriptionState`; nothing is sent for it. `check_app_steps(steps,
assigned, tps, protocol, where)` refuses, as the scenario loads, what Kafka's own calls would throw on
or the profile cannot do: a call naming a partition that is not assigned at that step
(IllegalStateException "No current assignment for partition"), an `Assign` of a partition of
another topic, a position's leader without its epoch, and `seekUnvalidated` before 2.3 (no
validation).
"""

from __future__ import annotations

from typing import Any

from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.kind import NO, Kind

CONSUMER = ("consumer",)
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
}


def check_app_steps(steps: tuple, assigned: list[str], tps: list[str], protocol: Any,
                    where) -> None:
    """Refuse an application call Kafka would throw on, or the profile cannot make (see the
    module doc); `where(i)` is step i's key. `assigned` is the starting state's assignment,
    `tps` the partitions of the consumer's topic."""
    assigned = list(assigned)
    for i, step in enumerate(steps):
        if step.kind not in APP_KINDS:
            continue
        key, f = f"{where(i)}.body", step.fields
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
