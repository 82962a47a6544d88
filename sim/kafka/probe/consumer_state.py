"""A probe's consumer state: set a consumer's state directly, as FetcherTest does.

Contract: `CONSUMER_STATE` lists the fields a consumer probe's `[probe.state]` may hold;
`set_consumer(consumer, state, ctx)` gives the consumer its metadata cache, assignment, pauses,
positions and poll mode, then lets it send what that state calls for (`set_consumer` says how).
A state the consumer cannot take is a FieldProblem naming its key.
"""

from __future__ import annotations

from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.state import METADATA, metadata_in_flight, set_client_metadata
from sim.kafka.probe.wire import NO

POSITION = (Field("tp", "str"), Field("offset", "int"), Field("offset_epoch", "int", NO),
            Field("leader", "int", NO), Field("leader_epoch", "int", NO),
            Field("awaiting_validation", "bool", False))
RESET = (Field("tp", "str"), Field("strategy", "str"))
CONSUMER_STATE = (Field("name", "str"), Field("metadata", "tables", (), METADATA),
                  Field("brokers", "ints", None), Field("positions", "tables", (), POSITION),
                  Field("metadata_in_flight_to", "int", NO), Field("assignment", "strs", None),
                  Field("paused", "strs", ()), Field("polls_when_told", "bool", False),
                  Field("max_poll_records", "int", NO), Field("resets", "tables", (), RESET))
STRATEGIES = ("earliest", "latest", "none")


def set_consumer(consumer, state: dict, ctx) -> None:
    """The consumer's metadata cache and positions, then its first requests: each position is
    an offset with the leader epoch of the record before it (`offset_epoch`, -1: none) and the
    (leader, epoch) it was last fetched from or validated against (by default the metadata's
    current leader), or waits for validation (`awaiting_validation`, Kafka's
    `seekUnvalidated`: only with an offset epoch and a leader epoch, else it fetches); a
    partition without a position waits for a reset (ListOffsets), by `auto_offset_reset` unless
    `resets` names its own strategy (`requestOffsetReset(tp, strategy)`: earliest, latest or
    none). `assignment` (default every partition of its topic) and `paused` are its
    `assignFromUser` and `pause` calls.
    `polls_when_told`: the application polls only on `Poll` steps (`consumer_poll.py`), at most
    `max_poll_records` records a poll (`max.poll.records`; default unlimited, FetcherTest's
    `buildFetcher()`)."""
    _set_poll(consumer, state)
    set_client_metadata(consumer, state["metadata"], state["brokers"], ctx)
    if state["metadata_in_flight_to"] != NO:
        metadata_in_flight(consumer, state["metadata_in_flight_to"], ctx)
    assignment = consumer.tps if state["assignment"] is None else state["assignment"]
    _known_tps(consumer, assignment, consumer.tps, "node.assignment")
    consumer.assign(assignment)
    _known_tps(consumer, state["paused"], consumer.assigned, "node.paused")
    consumer.pause(state["paused"])
    for i, pos in enumerate(state["positions"]):
        _set_position(consumer, pos, f"node.positions[{i}]")
    for i, reset in enumerate(state["resets"]):
        _set_reset(consumer, reset, f"node.resets[{i}]")
    consumer.running = True
    consumer.fetch()  # what it can send at once: Fetch, OffsetsForLeaderEpoch, ListOffsets


def _known_tps(consumer, tps, allowed: list, key: str) -> None:
    for tp in tps:
        if tp not in allowed:
            raise FieldProblem(key, f"{tp!r} is not a partition {consumer.name} may name here",
                               f"use one of {', '.join(allowed)}")


def _set_position(consumer, pos: dict, key: str) -> None:
    tp = pos["tp"]
    if tp not in consumer.assigned:
        raise FieldProblem(f"{key}.tp", f"{tp!r} is not a partition assigned to {consumer.name}",
                           f"use one of {', '.join(consumer.assigned)}")
    if (pos["leader"] == NO) != (pos["leader_epoch"] == NO):
        raise FieldProblem(key, "a position's leader needs its leader_epoch",
                           "give both, or neither for the metadata's current leader")
    consumer.awaiting_reset.pop(tp, None)
    consumer.position[tp], consumer.offset_epoch[tp] = pos["offset"], pos["offset_epoch"]
    leader = (consumer.meta.current_leader(tp) if pos["leader"] == NO
              else (pos["leader"], pos["leader_epoch"]))
    consumer.position_leader[tp] = leader
    if not pos["awaiting_validation"]:
        return
    if not consumer.validates:
        raise FieldProblem(f"{key}.awaiting_validation", "this consumer does not validate "
                           "positions (KIP-320's client side came in 2.3)",
                           "leave it out, or pick a 2.3 or later profile")
    # `seekUnvalidated` -> `validatePosition`: only a position with an offset epoch, against a
    # leader with an epoch, waits; another starts fetching
    if pos["offset_epoch"] >= 0 and leader[1] >= 0:
        consumer.awaiting[tp] = leader


def _set_reset(consumer, reset: dict, key: str) -> None:
    """`requestOffsetReset(tp, strategy)` before the first request is sent."""
    _known_tps(consumer, [reset["tp"]], consumer.assigned, f"{key}.tp")
    if reset["strategy"] not in STRATEGIES:
        raise FieldProblem(f"{key}.strategy", f"{reset['strategy']!r} is no reset strategy",
                           f"use one of {', '.join(STRATEGIES)}")
    consumer.request_reset(reset["tp"], reset["strategy"])


def _set_poll(consumer, state: dict) -> None:
    consumer.polls_when_told = state["polls_when_told"]
    limit = state["max_poll_records"]
    if limit == NO:
        return
    if not consumer.polls_when_told:
        raise FieldProblem("node.max_poll_records", "records are limited per poll only when "
                           "the application polls when told", "set polls_when_told = true")
    if limit < 1:
        raise FieldProblem("node.max_poll_records", f"{limit} records a poll returns nothing",
                           "give 1 or more")
    consumer.max_poll_records = limit
