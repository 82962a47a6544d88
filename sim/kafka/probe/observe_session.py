"""What a probe can check of a broker's fetch sessions (KIP-227).

Contract: `SESSION` holds the broker observables of a Fetch answer's partitions, of the node's
session cache (its size, the sessions it holds, its evictions and cached partitions), and of the session the step's Fetch answer carried (`session_id`; 0 when it carried none, as a session-less or error answer does, and
the sessions are numbered 1, 2, ... as the node opened them: `sim.kafka.probe.wire_session`),
and `session_observable(name)` those of one partition it holds, `session.<field>:<tp>`: the
request the session caches for it (`CachedPartition`, what `FetchContext.foreachPartition`
yields in Kafka's FetchSessionTest), `none` when the session does not hold it.
`fetch_sent_observable(name)` reads the same fields of a partition in the last Fetch the node
sent during the step (a follower's), `fetch_sent.<field>:<tp>`, and `list_offsets_sent.<field>:<tp>`
those of its last ListOffsets (an out-of-range reset's).
"""

from __future__ import annotations

from typing import Any

from sim.kafka.probe.observable import NONE, Observable, Seen
from sim.kafka.probe.observe_consumer import sent_field

SESSION_FIELDS = ("fetch_offset", "current_leader_epoch", "last_fetched_epoch", "log_start_offset")


def _answer_session_id(seen: Seen, _arg: str) -> Any:
    return getattr(seen.answer, "session_id", NONE) if seen.answer is not None else NONE


def _session(seen: Seen):
    sid = _answer_session_id(seen, "")
    cache = getattr(seen.node, "fetch_sessions", None)
    return cache.get(sid) if cache is not None and isinstance(sid, int) and sid else None


def _session_partitions(seen: Seen, _arg: str) -> Any:
    s = _session(seen)
    return s.in_order(s.parts) if s is not None else []


def _answer_partitions(seen: Seen, _arg: str) -> Any:
    errors = getattr(seen.answer, "partition_errors", None)  # an ElectLeaders answer's
    if errors is not None:
        return [tp for tp, _error in errors]
    parts = getattr(seen.answer, "partitions", None) if seen.answer is not None else None
    return [p.tp for p in parts] if parts is not None else NONE


SESSION = {
    "answer_partitions": Observable(False, _answer_partitions, "the partitions a Fetch answer "
                                    "carries, in its order (an incremental answer carries "
                                    "only those with news), or an ElectLeaders answer names"),
    "session_count": Observable(False, lambda s, _a: len(s.node.fetch_sessions.sessions),
                                 "how many fetch sessions the node holds (Kafka's cache.size)"),
    "session_ids": Observable(False, lambda s, _a: sorted(s.node.fetch_sessions.sessions),
                              "the sessions the node holds, by number (which evictions left)"),
    "session_evictions": Observable(False, lambda s, _a: s.node.fetch_sessions.evictions,
                                    "sessions the node's cache evicted (`evictionsMeter`)"),
    "session_partitions_cached": Observable(False,
                                            lambda s, _a: s.node.fetch_sessions.total_partitions,
                                            "partitions its sessions held at their last use "
                                            "(`totalPartitions`)"),
    "session_id": Observable(False, _answer_session_id, "the fetch session the answer carried "
                             "(0: none; numbered 1, 2, ... as the node opened them)"),
    "session_partitions": Observable(False, _session_partitions, "the partitions that session "
                                     "holds, in its order (`partitionMap`'s)"),
}


def session_observable(name: str) -> Observable | None:
    """`session.<field>` of one partition of the answer's session (see the module contract)."""
    fld = name[len("session."):]
    if fld not in SESSION_FIELDS:
        return None

    def read(seen: Seen, tp: str) -> Any:
        s = _session(seen)
        cached = s.parts.get(tp) if s is not None else None
        return getattr(cached.fp, fld) if cached is not None else NONE
    return Observable(True, read, f"the {fld} the answer's session caches for the partition")


# a follower's requests a check may read: prefix -> (request kind, partition fields)
SENT = {"fetch_sent": ("Fetch", SESSION_FIELDS),
        "list_offsets_sent": ("ListOffsets", ("current_leader_epoch", "timestamp"))}


def fetch_sent_observable(name: str) -> Observable | None:
    """`fetch_sent.<field>` (`list_offsets_sent.<field>`): the field of the partition in the
    node's last Fetch (ListOffsets) sent during the step."""
    prefix, _, fld = name.partition(".")
    kind, fields = SENT.get(prefix, ("", ()))
    if fld not in fields:
        return None
    return Observable(True, sent_field(kind, fld), f"the {fld} of the partition in the last "
                      f"{kind} the node sent during the step (a follower's)")
