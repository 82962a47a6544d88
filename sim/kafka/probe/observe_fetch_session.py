"""What a probe can check of a fetching client's side of its fetch sessions (KIP-227, 1.1+).

Contract: `FETCH_SESSION` holds the checks a consumer and a broker (as a follower) share, read
after a step. `fetch_sent.<field>` (no argument) reads the last Fetch the node sent during the
step, "none" when it sent none: its FetchMetadata (`session_id`, `session_epoch`; 0 and -1
for a Fetch without a session), the partitions it names (`partitions`, in its order: in a
session's incremental Fetch those that join the session, then those altered) and those it
forgets (`forgotten`, ForgottenTopicsData). `fetch_session_<field>:<broker>` reads the node's
`FetchSessionHandler` for that broker (`b1` or `1`): `id` and `epoch` are Kafka's
`nextMetadata`, what the Fetch in flight carries, or else the next Fetch will; `partitions`
its `sessionPartitions`, in their order; "none" without a session with that broker. The model
names partitions by topic name: no check reads a topic id. Kafka's session ids are the ones a
probe's answers carry (`FetchResponse.session_id`).
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import NONE, Observable, Seen


def _last_fetch(seen: Seen):
    for _dst, kind, body in reversed(seen.sent):
        if kind == "Fetch":
            return body
    return None


def _sent(read: Callable) -> Callable[[Seen, str], Any]:
    def check(seen: Seen, _arg: str) -> Any:
        body = _last_fetch(seen)
        return read(body) if body is not None else NONE
    return check


def _handler(seen: Seen, broker: str):
    """The node's session with `broker` (a consumer's `sessions`, a follower's
    `fetch_handlers`), or None."""
    broker = broker[1:] if broker[:1] == "b" else broker
    if not broker.isdigit():
        return None
    node = seen.node
    handlers = getattr(node, "sessions", None) if hasattr(node, "assigned") \
        else getattr(node, "fetch_handlers", None)
    return handlers.get(int(broker)) if handlers else None


def _handler_field(read: Callable) -> Callable[[Seen, str], Any]:
    def check(seen: Seen, broker: str) -> Any:
        handler = _handler(seen, broker)
        return read(handler) if handler is not None else NONE
    return check


FETCH_SESSION = {
    "fetch_sent.session_id": Observable(False, _sent(lambda f: f.session_id), "the session id "
                                        "of the last Fetch the node sent during the step (0: "
                                        "none), none if it sent none"),
    "fetch_sent.session_epoch": Observable(False, _sent(lambda f: f.session_epoch), "its "
                                           "session epoch (0: full, opening a session; -1: "
                                           "full without one; above 0: incremental)"),
    "fetch_sent.partitions": Observable(False, _sent(lambda f: [p.tp for p in f.partitions]),
                                        "the partitions it names, in its order (incremental: "
                                        "those joining the session, then those altered)"),
    "fetch_sent.forgotten": Observable(False, _sent(lambda f: list(f.forgotten)), "the "
                                       "partitions it tells the session to forget"),
    "fetch_session_id": Observable(True, _handler_field(lambda h: h.session_id), "the session "
                                   "id the node's Fetch in flight to a broker (arg b1), or its "
                                   "next, carries (`nextMetadata`); none without a session"),
    "fetch_session_epoch": Observable(True, _handler_field(lambda h: h.epoch), "that Fetch's "
                                      "session epoch"),
    "fetch_session_partitions": Observable(True, _handler_field(lambda h: list(h.parts)),
                                           "the partitions of the node's session with the "
                                           "broker (`sessionPartitions`), in their order"),
}
