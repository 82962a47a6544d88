"""The documented shape of every trace event: its kind, and the type of each field it has.

Contract: `event_problem(ev)` returns None for an event of a kind `sim.kafka.vocab` defines
whose documented fields have their documented types (docs/trace.md, the `type` column), and
otherwise what is wrong, in words ("unknown kind 'apend'", "field base_offset of batch 0 is
"x", not an int"). A field the docs do not name is let through (the trace of a newer harness
may add one); a missing field is left to the reader that needs it. `read_checked(path)` is
`sim.core.trace.read_trace` with every event so checked (a TraceError names the line).
`FIELDS` is kept equal to the docs' tables by tests/test_trace_docs.py; `ROWS` gives the
members of the documented arrays of rows, whose shapes the docs give in words.
"""

from __future__ import annotations

from sim.core.trace import read_trace
from sim.kafka.vocab import ALL_KINDS

_I, _S, _B = "int", "string", "bool"
_TP = {"tp": _S, "topic_id": _I}

#: kind -> field -> documented type, as written in docs/trace.md
FIELDS: dict[str, dict[str, str]] = {
    "send": {"mid": _I, "dst": _S, "msg": _S, "controller_epoch": _I, "parts": "array",
             "full": _B, "n_parts": _I, "corr": _I, "error": _I, "errs": "array",
             "n_batches": _I, "tp": _S, "leader_epoch": _I, "isr": "array of int",
             "isr_epochs": "array of int", "session_id": _I, "session_epoch": _I, "n_forgotten": _I, "conn": _I, "hash": _S,
             "bytes": _I, "api": _S, "v": _I, "wire_corr": _I, "batches": "array",
             "topics": "array of string", "producer_id": _I, "producer_epoch": _I, "start": _I,
             "epoch": _I,
             "last_epoch": _I, "last_offset": _I, "pre_vote": _B, "granted": _B, "fetch_offset": _I,
             "preferred_successors": "array of string",
             "records": _I, "high_watermark": _I, "broker": _I, "broker_epoch": _I,
             "metadata_offset": _I, "fenced": _B, "want_shutdown": _B,
             "should_shutdown": _B, "voter": _S, "kraft_versions": "array of int"},
    "deliver": {"mid": _I, "src": _S},
    "drop": {"mid": _I, "dst": _S, "msg": _S, "reason": _S},
    "stall": {"mid": _I},
    "hold": {"mid": _I, "rule": _I},
    "fault": {"step": _I, "action": _S, "target": _S, "resolved": "string or null",
              "params": "object", "outcome": _S, "part_of": _S},
    "fault_outcome": {"step": _I, "outcome": _S},
    "disconnect": {"peer": _S},
    "crash": {},
    "restart": {},
    "unhealed": {"cut_links": _I, "rules": "list of int"},
    "unsettled": {"links": "list of [string, string]"},
    "end": {"end_us": _I, "events": _I, "stopped_by": _S, "settled": _B},
    "probe_step": {"step": _I, "deliver": _S, "from": _S, "to": _S, "body": "object",
                   "unsolicited": _B},
    "probe_check": {"step": _I, "check": _S, "kafka": "any", "model": "any", "agree": _B},
    "controller_elected": {"controller_epoch": _I},
    "controller_resigned": {"controller_epoch": _I, "reason": _S},
    "partition_state": {**_TP, "leader": _I, "leader_epoch": _I, "partition_epoch": _I,
                        "isr": "array of int", "replicas": "array of int", "reason": _S,
                        "controller_epoch": _I, "elr": "array of int",
                        "last_known_elr": "array of int"},
    "topic_deleted": {"topic": _S, "topic_id": _I},
    "topic_deletion_completed": {"topic": _S, "topic_id": _I},
    "alter_partition": {"tp": _S, "from": _I, "leader_epoch": _I, "partition_epoch": _I,
                        "isr": "array of int", "error": _I, "already": _B},
    "replicas_offline": {"broker": _I, "tps": "array of string"},
    "quorum_election": {"epoch": _I, "end_offset": _I},
    "quorum_prospective": {"epoch": _I, "end_offset": _I},
    "quorum_leader": {"epoch": _I, "end_offset": _I, "high_watermark": _I},
    "quorum_resigned": {"epoch": _I, "reason": _S},
    "voters_changed": {"voters": "array of string", "offset": _I},
    "voter_change": {"op": _S, "voter": _S, "error": _I},
    "metadata_append": {"offset": _I, "epoch": _I, "record": "object"},
    "metadata_commit": {"epoch": _I, "high_watermark": _I, "records": "array"},
    "metadata_truncate": {"to_offset": _I, "end_offset": _I},
    "metadata_reach": {"leader": "string or null", "epoch": _I, "brokers": "array",
                       "slowed": _B},
    "metadata_apply": {"from_offset": _I, "to_offset": _I, "expected_offset": _I,
                       "records": "array of string"},
    "broker_registered": {"broker_epoch": _I, "previous_epoch": _I, "reason": _S,
                          "known_in_us": _I},
    "broker_start_failed": {"error": _S, "registered_epoch": _I, "expires_in_us": _I},
    "replica_state": {**_TP, "role": _S, "leader": _I, "leader_epoch": _I,
                      "partition_epoch": _I, "isr": "array of int", "controller_epoch": _I},
    "lai_rejected": {"controller_epoch": _I, "partitions": "array"},
    "lai_leader_unavailable": {"controller_epoch": _I, "partitions": "array"},
    "metadata": {"controller_epoch": _I, "changes": "array", "alive": "array of int"},
    "metadata_fenced": {"controller_epoch": _I, "corr": _I, "tps": "array of string",
                        "alive": _B},
    "stop_replica": {**_TP, "delete": _B, "req_epoch": _I, "issued_epoch": _I,
                     "local_epoch": _I, "controller_epoch": _I, "result": _S, "error": _I},
    "upgrade": {"profile": _S, "protocol": "object"},
    "stale_controller": {"request": _S, "req_controller_epoch": _I,
                         "local_controller_epoch": _I},
    "log_created": dict(_TP),
    "log_deleted": {**_TP, "reason": _S},
    "log_dir_failure": {"dir": _I, "tps": "array of string", "halt": _B},
    "append": {"producer": _S, "corr": _I, "acks": _I, "batches": "array of objects"},
    "dup_append": {"tp": _S, "bid": _S, "base_offset": _I},
    "replicate": {"leader": _I, "batches": "array"},
    "truncate": {**_TP, "to_offset": _I, "reason": _S},
    "halt": {**_TP, "log_end_offset": _I, "leader_end_offset": _I},
    "hw": {"role": _S, "hws": "array"},
    "log_start": {**_TP, "log_start_offset": _I},
    "produce_result": {"tp": _S, "bid": _S, "error": _I},
    "wire_closed": {"peer": _S, "conn": _I, "reason": _S, "api": _S, "v": _I},
    "batch": {"bid": _S, "tp": _S, "count": _I, "created_us": _I},
    "batch_grown": {"bid": _S, "tp": _S, "count": _I},
    "ack": {"bid": _S, "tp": _S, "base_offset": _I, "count": _I, "acks": "string or int",
            "latency_us": _I, "has_offset": _B},
    "produce_error": {"bid": _S, "tp": _S, "error": _I, "action": _S, "attempts": _I},
    "produce_failed": {"bid": "string or null", "tp": _S, "error": _I, "error_name": _S,
                       "mode": _S, "message_format": _I, "in_sequence": _B},
    "client_config": {"idempotence": _S, "effective_idempotence": _S, "acks": "string or int",
                      "leader_discovery": _S, "role": _S},
    "client_epoch": {**_TP, "leader": _I, "leader_epoch": _I, "source": _S, "from": _S,
                     "previous_epoch": _I, "dropped": _B},
    "client_error": {"error": _S, "message": _S, "action": _S},
    "metadata_rejected": {"tp": _S, "leader_epoch": _I, "known_epoch": _I, "source": _S},
    "consume": {"tp": _S, "offset": _I, "next_offset": _I, "batches": _I, "count": _I,
                "leader_epoch": _I, "end_to_end_us": "array of ints", "read": "array"},
    "validate_position": {"tp": _S, "broker": _I, "leader_epoch": _I, "offset": _I,
                          "offset_epoch": _I, "error": _I, "end_epoch": _I, "end_offset": _I,
                          "action": _S, "position": _I},
    "fetch_error": {"tp": _S, "error": _I, "broker": _I, "leader_epoch": _I, "position": _I,
                    "action": _S},
    "reset_position": {"tp": _S, "broker": _I, "leader_epoch": _I, "timestamp": _I, "error": _I,
                       "offset": _I, "offset_epoch": _I, "action": _S, "position": _I},
    "consumer_error": {"tp": _S, "exception": _S, "offset": _I, "divergent": "array"},
}

#: the fields of each object in `append.batches` (docs/trace.md, the second table of `append`)
APPEND_BATCH: dict[str, str] = {
    **_TP, "base_offset": _I, "count": _I, "leader_epoch": _I, "bid": _S, "sender_epoch": _I,
    "sender_topic_id": _I, "pid": _I, "producer_epoch": _I, "base_seq": _I}

#: (kind, field) -> the types of the members of each row of that array
ROWS: dict[tuple[str, str], tuple[str, ...]] = {
    ("replicate", "batches"): (_S, _I, _I, _I, _I, _S),
    ("hw", "hws"): (_S, _I, _I, _I),
    ("metadata", "changes"): (_S, _I, _I),
    ("lai_rejected", "partitions"): (_S, _I, _I, _I),
    ("lai_leader_unavailable", "partitions"): (_S, _I, _I, _I),
    ("consume", "read"): (_I, _S),
}


def _is_int(v) -> bool:
    return type(v) is int


def _is_str(v) -> bool:
    return type(v) is str


_ARRAYS = (list, tuple)  # a stored trace holds lists; the events a run shows its observers
#                          may hold the tuples they were built from


def _list_of(test):
    return lambda v: type(v) in _ARRAYS and all(test(x) for x in v)


_CHECKS = {
    _I: _is_int, _S: _is_str, _B: lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict, "array": lambda v: type(v) in _ARRAYS,
    "array of int": _list_of(_is_int), "array of ints": _list_of(_is_int),
    "list of int": _list_of(_is_int), "array of string": _list_of(_is_str),
    "array of strings": _list_of(_is_str),
    "array of objects": _list_of(lambda x: type(x) is dict),
    "list of [string, string]": _list_of(lambda x: type(x) in _ARRAYS and len(x) == 2
                                         and all(map(_is_str, x))),
    "string or int": lambda v: type(v) in (str, int),
    "string or null": lambda v: v is None or type(v) is str,
    "any": lambda v: True,
}
_COMMON = frozenset({"seq", "t", "node", "kind"})


def event_problem(ev: dict) -> str | None:
    """What is wrong with the kind or field types of `ev`, or None (see the contract)."""
    kind = ev["kind"]
    fields = FIELDS.get(kind)
    if fields is None or kind not in ALL_KINDS:
        return f"unknown event kind {_short(kind)} (docs/trace.md lists the kinds)"
    for name, value in ev.items():
        spec = fields.get(name)
        if spec is not None and not _CHECKS[spec](value):
            return f"field {name} of a {kind} is {_short(value)}, not {_article(spec)}"
        rows = ROWS.get((kind, name))
        if rows is not None:
            problem = _rows_problem(value, rows)
            if problem:
                return f"field {name} of a {kind}: {problem}"
    if kind == "append":
        return _batches_problem(ev["batches"])
    return None


def _rows_problem(rows: list, types: tuple[str, ...]) -> str | None:
    for i, row in enumerate(rows):
        if type(row) not in _ARRAYS or len(row) != len(types):
            return f"row {i} is {_short(row)}, not a row of {len(types)} ({', '.join(types)})"
        for j, (value, spec) in enumerate(zip(row, types)):
            if not _CHECKS[spec](value):
                return f"member {j} of row {i} is {_short(value)}, not {_article(spec)}"
    return None


def _batches_problem(batches: list) -> str | None:
    for i, batch in enumerate(batches):
        for name, value in batch.items():
            spec = APPEND_BATCH.get(name)
            if spec is not None and not _CHECKS[spec](value):
                return (f"field {name} of batch {i} of an append is {_short(value)}, not "
                        f"{_article(spec)}")
    return None


def _article(spec: str) -> str:
    return f"an {spec}" if spec[0] in "aeiou" else f"a {spec}"


def _short(value) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def read_checked(path: str):
    """`read_trace(path)` whose events are each checked by `event_problem` (a TraceError
    naming the file and line for the first that fails)."""
    return read_trace(path, check=event_problem)
