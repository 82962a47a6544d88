"""Judge what real clients saw, Jepsen-style, from their operation histories alone.

Contract: `check(ops)` takes the operations of a live run (dicts as `epochsim.live.driver` and
the gateways record them: `send`, `ack`, `error`, `read`, `read_end`, `epoch`; each with
`client`) and returns the anomalies found, each `{"check", "message"}`, in a stable order. It
knows nothing of the model: only what the clients were told.
- `acked_write_lost`: a write acknowledged on a partition that a reader read to its end, and
  never read there; or acknowledged at an offset a reader found holding another record.
- `duplicate`: one record read at two offsets.
- `out_of_order`: one client's records on one partition read (or acknowledged) in an order
  other than the order it sent them.
- `phantom_read`: a record read that no client sent.
- `epoch_regression`: a client whose requests name an older leader epoch for a partition
  after naming a newer one.
`load(paths)` reads history files (a last line cut short by a killed process is skipped);
`summary(ops)` counts sends, acks, errors and reads, and lists the partitions never read to
their end (where a lost write could hide).
"""

from __future__ import annotations

import json

CHECKS = ("acked_write_lost", "duplicate", "out_of_order", "phantom_read", "epoch_regression")


def load(paths: list[str]) -> list[dict]:
    ops = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    ops.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return ops


def _index(key: str) -> int | None:
    """The send index of a record key `client:i`."""
    _, _, i = str(key).rpartition(":")
    return int(i) if i.isdigit() else None


def check(ops: list[dict]) -> list[dict]:
    found: list[dict] = []
    sent = {op["key"] for op in ops if op["op"] == "send"}
    acked = [op for op in ops if op["op"] == "ack"]
    reads = [op for op in ops if op["op"] == "read"]
    read_to_end = {op["tp"] for op in ops if op["op"] == "read_end"}
    at: dict[tuple[str, int], str] = {}  # (tp, offset) -> key read there
    offsets: dict[tuple[str, str], set] = {}  # (tp, key) -> offsets it was read at
    for op in reads:
        at[(op["tp"], op["offset"])] = op["key"]
        offsets.setdefault((op["tp"], op["key"]), set()).add(op["offset"])
    for op in acked:
        tp, key, offset = op["tp"], op["key"], op["offset"]
        if tp in read_to_end and (tp, key) not in offsets:
            found.append(_a("acked_write_lost", f"{key} acknowledged at {tp}@{offset}, never read "
                                                f"from {tp} though it was read to its end"))
        elif (tp, offset) in at and at[(tp, offset)] != key:
            found.append(_a("acked_write_lost", f"{key} acknowledged at {tp}@{offset}, but "
                                                f"{tp}@{offset} holds {at[(tp, offset)]}"))
    for (tp, key), where in sorted(offsets.items()):
        if len(where) > 1:
            found.append(_a("duplicate", f"{key} read from {tp} at offsets {sorted(where)}"))
        if key not in sent:
            found.append(_a("phantom_read", f"{key} read from {tp}@{min(where)}, never sent"))
    found += _order(sorted((tp, offset, key) for (tp, offset), key in at.items()), "read")
    found += _order(sorted((op["tp"], op["offset"], op["key"]) for op in acked
                           if op["offset"] >= 0), "acknowledged")
    found += _epochs(ops)
    return found


def _order(rows: list[tuple], how: str) -> list[dict]:
    """Rows (tp, offset, key) in offset order: each client's send indexes must rise."""
    out, last = [], {}
    for tp, offset, key in rows:
        client, i = str(key).rpartition(":")[0], _index(key)
        if i is None:
            continue
        prev = last.get((tp, client))
        if prev is not None and i < prev[0]:
            out.append(_a("out_of_order", f"{key} {how} at {tp}@{offset}, after "
                                          f"{client}:{prev[0]} at {tp}@{prev[1]}"))
        last[(tp, client)] = (max(i, prev[0]) if prev else i, offset)
    return out


def _epochs(ops: list[dict]) -> list[dict]:
    out, seen = [], {}
    for op in ops:
        if op["op"] != "epoch":
            continue
        key = (op["client"], op["tp"])
        if key in seen and op["epoch"] < seen[key]:
            out.append(_a("epoch_regression", f"{op['client']} named leader epoch {op['epoch']} "
                                              f"for {op['tp']} after {seen[key]}"))
        seen[key] = max(op["epoch"], seen.get(key, op["epoch"]))
    return out


def _a(check_name: str, message: str) -> dict:
    return {"check": check_name, "message": message}


def summary(ops: list[dict], partitions: list[str]) -> dict:
    count = {name: sum(1 for op in ops if op["op"] == name)
             for name in ("send", "ack", "error", "read")}
    read_to_end = {op["tp"] for op in ops if op["op"] == "read_end"}
    count["unread_partitions"] = [tp for tp in partitions if tp not in read_to_end]
    count["acked_keys"] = len({op["key"] for op in ops if op["op"] == "ack"})
    return count
