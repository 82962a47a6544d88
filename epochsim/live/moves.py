"""How a client got through a leader move, read from a run's trace: a real client's (its wire
frames, live or simulated) or the model's own (its messages).

Contract: `leader_move(events, client, tp)` finds the run's first `move_leader` fault on `tp`
and follows `client`'s requests and answers after it until the new leader first acknowledges a
write to `tp`. It returns `{"move_us", "to", "first_error_us", "recovered_us", "latency_ms"
(recovered - move), "metadata_requests" (Metadata requests the client sent in between),
"produce_to_old" (Produce requests naming tp sent to another broker), "errors" (tp answered
with an error), "produce_versions" (wire versions; none for the model's client),
"metadata_names_new_us" (the first Metadata answer the client read that names the new
leader)}`; `recovered_us` and `latency_ms` are None when it never recovered, and the result is
None without such a fault. Only the trace's `send` events are read.
"""

from __future__ import annotations

import json


def read_events(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _request(e: dict) -> tuple[str | None, list[str]]:
    """(api, partitions) of a request: a wire frame's note, or the model's message."""
    if "api" in e:
        return e["api"], [b[0] for b in e.get("batches", [])]
    if e.get("msg") == "Produce":
        return "Produce", [p[0] for p in e.get("parts", [])]
    return ("Metadata", []) if e.get("msg") == "Metadata" else (None, [])


def _answer(e: dict, asked: dict) -> tuple[str | None, list[tuple[str, int]]]:
    """(api, [(tp, error)]) of an answer; a Metadata answer's rows are (tp, leader)."""
    if "api" in e:
        if e["api"] == "Produce":
            return "Produce", [(p[0], p[1]) for p in e.get("parts", [])]
        return e["api"], [(p[0], p[1]) for p in e.get("parts", [])]
    if e.get("msg") == "ProduceResponse":
        errs = dict(map(tuple, e.get("errs", [])))
        return "Produce", [(tp, errs.get(tp, 0)) for tp in asked.pop(e.get("corr"), [])]
    if e.get("msg") == "MetadataResponse":
        return "Metadata", [(p[0], p[1]) for p in e.get("parts", [])]
    return None, []


def leader_move(events: list[dict], client: str, tp: str) -> dict | None:
    move = next((e for e in events if e.get("kind") == "fault" and e.get("action") == "move_leader"
                 and e.get("resolved", e.get("target")) == tp), None)
    if move is None:
        return None
    move_us, to = move["t"], move["params"]["to"]
    out = {"move_us": move_us, "to": to, "first_error_us": None, "recovered_us": None,
           "latency_ms": None, "metadata_requests": 0, "produce_to_old": 0, "errors": 0,
           "produce_versions": [], "metadata_names_new_us": None}
    versions, asked = set(), {}
    for e in events:
        if e.get("kind") != "send":
            continue
        if e["node"] == client:
            api, tps = _request(e)
            if api == "Produce":
                asked[e.get("corr")] = tps
            if e["t"] < move_us:
                continue
            if api == "Metadata":
                out["metadata_requests"] += 1
            elif api == "Produce" and tp in tps:
                if "v" in e:
                    versions.add(e["v"])
                out["produce_to_old"] += e["dst"] != to
        elif e.get("dst") == client:
            api, rows = _answer(e, asked)
            if e["t"] < move_us:
                continue
            if api == "Metadata" and out["metadata_names_new_us"] is None \
                    and any(row == (tp, int(to[1:])) for row in rows):
                out["metadata_names_new_us"] = e["t"]
            for part_tp, error in rows if api == "Produce" else []:
                if part_tp != tp:
                    continue
                if error:
                    out["errors"] += 1
                    if out["first_error_us"] is None:
                        out["first_error_us"] = e["t"]
                elif e["node"] == to:
                    out["recovered_us"] = e["t"]
                    out["latency_ms"] = round((e["t"] - move_us) / 1000, 1)
                    out["produce_versions"] = sorted(versions)
                    return out
    out["produce_versions"] = sorted(versions)
    return out
