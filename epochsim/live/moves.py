"""How a real client got through a leader move, read from a run's trace (live or simulated).

Contract: `leader_move(events, client, tp)` finds the run's first `move_leader` fault on `tp`
and follows `client`'s frames after it until the new leader first acknowledges a write to
`tp`. It returns `{"move_us", "to", "first_error_us", "recovered_us", "latency_ms"
(recovered - move), "metadata_requests" (Metadata requests the client sent in between),
"produce_to_old" (Produce requests naming tp sent to another broker), "errors" (tp answered
with an error), "produce_versions", "metadata_names_new_us" (the first Metadata answer the
client read that names the new leader)}`; `recovered_us` and `latency_ms` are None when it never
recovered. Only the trace's `send` events of wire frames are read.
"""

from __future__ import annotations

import json


def read_events(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def leader_move(events: list[dict], client: str, tp: str) -> dict | None:
    move = next((e for e in events if e.get("kind") == "fault" and e.get("action") == "move_leader"
                 and e.get("resolved", e.get("target")) == tp), None)
    if move is None:
        return None
    move_us, to = move["t"], move["params"]["to"]
    out = {"move_us": move_us, "to": to, "first_error_us": None, "recovered_us": None,
           "latency_ms": None, "metadata_requests": 0, "produce_to_old": 0, "errors": 0,
           "produce_versions": [], "metadata_names_new_us": None}
    versions = set()
    for e in events:
        if e.get("kind") != "send" or e["t"] < move_us or "api" not in e:
            continue
        if e["node"] == client:  # a request
            if e["api"] == "Metadata":
                out["metadata_requests"] += 1
            elif e["api"] == "Produce" and any(b[0] == tp for b in e.get("batches", [])):
                versions.add(e["v"])
                if e["dst"] != to:
                    out["produce_to_old"] += 1
        elif e.get("dst") == client and e["api"] == "Metadata":
            if out["metadata_names_new_us"] is None and any(
                    p[0] == tp and f"b{p[1]}" == to for p in e.get("parts", [])):
                out["metadata_names_new_us"] = e["t"]
        elif e.get("dst") == client and e["api"] == "Produce":
            for part_tp, error, _base in e.get("parts", []):
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
