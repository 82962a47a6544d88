"""A violation told in words: the few events that matter, as numbered plain sentences.

Contract:
- `story(run, violation=None, limit=16)` returns sentences "t=4.002s b3 applied
  StopReplica(delete) for t-0 issued at leader epoch 2 (own leader epoch 3) -> VIOLATION
  stop_replica_out_of_order" for the violation (default: the first). It keeps, from the first
  fault on, the faults, the controller's decisions on the partition, the StopReplica requests
  to the nodes involved and what the network did to them (held, dropped, released), those
  nodes' state changes on the partition, crashes and controller changes, and the witnesses;
  past `limit`, the faults and witnesses stay and the earliest of the rest go;
- `numbered(sentences)` prefixes "1. ", "2. ", ...;
- `events_table(run, violation=None, before=12, after=12)` is the table of events around
  each of the violation's witnesses (seq, time, node, kind, sentence, witness invariants),
  leaving out the data-plane chatter (fetches, produce, replication, high watermarks).
Pure functions of a loaded `Run`; nothing is drawn.
"""

from __future__ import annotations

from reports.lanes import event_tp
from reports.rundata import Run
from reports.style import seconds
from reports.words import describe, describe_send
from sim.core.trace import RESERVED_NODES
from sim.kafka import vocab as V

QUIET = RESERVED_NODES
NODE_STATE = {V.REPLICA_STATE, V.STOP_REPLICA, V.LOG_CREATED, V.LOG_DELETED, V.LAI_REJECTED,
              V.LAI_LEADER_UNAVAILABLE, V.TRUNCATE, V.METADATA_REJECTED}
LIFECYCLE = {V.CRASH, V.HALT, V.RESTART, V.BROKER_REGISTERED, V.BROKER_START_FAILED, V.CONTROLLER_ELECTED,
             V.CONTROLLER_RESIGNED}
CHATTER = {V.HW, V.REPLICATE, V.BATCH, V.BATCH_GROWN, V.SEND, V.DELIVER, V.APPEND, V.ACK, V.PRODUCE_RESULT}


def _focus(run: Run, violation: dict) -> tuple[set, set, list[int]]:
    """(partitions, nodes, witness seqs) of a violation."""
    seqs = sorted(s for s in violation["seqs"] if 0 <= s < len(run.events))
    evs = [run.events[s] for s in seqs]
    tps = {event_tp(e) for e in evs} - {None}
    nodes = {e["node"] for e in evs} - QUIET
    return tps, nodes, seqs


def _about(ev: dict, tps: set) -> bool:
    tp = event_tp(ev)
    return tp is None or not tps or tp in tps


class _Teller:
    """Walks the trace once and keeps (seq, sentence, must_keep) for the events that matter."""

    def __init__(self, run: Run, violation: dict):
        self.run, self.violation = run, violation
        self.tps, self.nodes, self.witnesses = _focus(run, violation)
        self.sends: dict[int, dict] = {}
        self.held: set[int] = set()
        self.lines: list[tuple[int, str, bool]] = []

    def tell(self) -> list[tuple[int, str, bool]]:
        last = self.witnesses[-1] if self.witnesses else len(self.run.events) - 1
        last_t = self.run.events[last]["t"]
        started = False
        for ev in self.run.events:
            if ev["seq"] > last and (ev["t"] > last_t or ev["node"] not in self.nodes):
                break
            started = started or ev["kind"] == V.FAULT or ev["seq"] in self.witnesses
            text = self._sentence(ev) if started else None
            if text is not None:
                self.lines.append((ev["seq"], self._stamp(ev, text), self._must(ev)))
        return self.lines

    def _must(self, ev: dict) -> bool:
        return ev["kind"] == V.FAULT or ev["seq"] in self.witnesses

    def _stamp(self, ev: dict, text: str) -> str:
        text = f"t={seconds(ev['t'])} {text}"
        if ev["seq"] in self.witnesses:
            if ev["seq"] == self.witnesses[-1]:
                text += f" \u2192 VIOLATION {self.violation['invariant']}"
            else:
                text += f" (witness of {self.violation['invariant']})"
        return text

    def _sentence(self, ev: dict) -> str | None:
        kind, node = ev["kind"], ev["node"]
        if ev["seq"] in self.witnesses or kind == V.FAULT:
            return describe(ev)
        if kind == V.PARTITION_STATE:
            return describe(ev) if ev["tp"] in self.tps else None
        if kind in LIFECYCLE:
            return describe(ev) if node in self.nodes or kind != V.CRASH else None
        if kind in NODE_STATE:
            return describe(ev) if node in self.nodes and _about(ev, self.tps) else None
        return self._network(ev)

    def _network(self, ev: dict) -> str | None:
        kind = ev["kind"]
        if kind == V.SEND and ev.get("dst") in self.nodes and ev.get("msg") == "StopReplica" \
                and any(p[0] in self.tps for p in ev.get("parts", [])):
            self.sends[ev["mid"]] = ev
            return f"{ev['node']} sent {describe_send(ev)} to {ev['dst']}"
        msg = self.sends.get(ev.get("mid"))
        if msg is None:
            return None
        what = f"{describe_send(msg)} {msg['node']}\u2192{msg['dst']}"
        if kind in (V.HOLD, V.STALL):
            self.held.add(ev["mid"])
            return f"the network held {what}" + (" on a cut link" if kind == V.STALL else "")
        if kind == V.DROP:
            return f"the network dropped {what} ({ev.get('reason')})"
        if kind == V.DELIVER and ev["mid"] in self.held:
            return f"the network released {what}, sent at {seconds(msg['t'])}"
        return None


def story(run: Run, violation: dict | None = None, limit: int = 16) -> list[str]:
    """Sentences telling how `violation` (default: the first) came about; [] if none."""
    violation = violation if violation is not None else run.first_violation()
    if violation is None:
        return []
    lines = _Teller(run, violation).tell()
    if len(lines) > limit:
        must = sum(1 for _, _, m in lines if m)
        spare = max(0, limit - must)
        optional = [s for s, _, m in lines if not m]
        keep = set(optional[len(optional) - spare:]) if spare else set()
        lines = [ln for ln in lines if ln[2] or ln[0] in keep]
    return [text for _, text, _ in lines]


def numbered(sentences: list[str]) -> list[str]:
    return [f"{i}. {s}" for i, s in enumerate(sentences, start=1)]


def events_table(run: Run, violation: dict | None = None, before: int = 12,
                 after: int = 12) -> list[dict]:
    """Rows for the events around each witness of the violation (default: the first
    violation; without one, the first events of the run), in trace order."""
    violation = violation if violation is not None else run.first_violation()
    tps, nodes, seqs = _focus(run, violation) if violation is not None else (set(), set(), [])
    sends = {e["mid"]: e for e in run.events if e["kind"] == V.SEND}

    def worthy(ev):
        return _table_worthy(ev, run, nodes, tps, sends)

    picked: dict[int, dict] = {}
    for w in seqs or [-1]:
        if w >= 0:
            picked[w] = run.events[w]
        for ev in _take((run.events[i] for i in range(w - 1, -1, -1)), worthy, before):
            picked[ev["seq"]] = ev
        for ev in _take(iter(run.events[w + 1:]), worthy, after):
            picked[ev["seq"]] = ev
    return [_row(run, picked[s], sends) for s in sorted(picked)]


def _take(events, pred, n: int) -> list[dict]:
    out: list[dict] = []
    for ev in events:
        if len(out) >= n:
            break
        if pred(ev):
            out.append(ev)
    return out


DATA_MSGS = {"Fetch", "FetchResponse", "Produce", "ProduceResponse"}


def _table_worthy(ev: dict, run: Run, nodes: set, tps: set, sends: dict) -> bool:
    kind = ev["kind"]
    if ev["seq"] in run.witnesses or kind == V.FAULT:
        return True
    if kind in (V.SEND, V.DELIVER, V.HOLD, V.STALL, V.DROP):
        msg = sends.get(ev.get("mid"), {})
        if str(msg.get("msg", "")).endswith("Response") and not msg.get("error"):
            return False  # a plain acknowledgement tells nothing
        ends = {msg.get("node"), msg.get("dst")}
        return msg.get("msg") not in DATA_MSGS and bool(ends & nodes) and kind != V.DELIVER \
            or kind == V.DELIVER and ev["node"] in nodes and msg.get("msg") in CONTROL_MSGS
    if kind in CHATTER:
        return False
    if kind == V.PARTITION_STATE:
        return not tps or ev["tp"] in tps
    return not nodes or ev["node"] in nodes


CONTROL_MSGS = {"LeaderAndIsr", "StopReplica", "UpdateMetadata"}


def _row(run: Run, ev: dict, sends: dict) -> dict:
    text = describe(ev)
    if ev["kind"] in (V.DELIVER, V.HOLD, V.STALL, V.DROP) and ev.get("mid") in sends:
        msg = sends[ev["mid"]]
        what = f"{describe_send(msg)} {msg['node']}\u2192{msg['dst']} (sent {seconds(msg['t'])})"
        text = {V.DELIVER: f"{ev['node']} received {what}", V.HOLD: f"network held {what}",
                V.STALL: f"network held {what} on a cut link",
                V.DROP: f"network dropped {what} ({ev.get('reason')})"}[ev["kind"]]
    return {"seq": ev["seq"], "t_us": ev["t"], "time": seconds(ev["t"]), "node": ev["node"],
            "kind": ev["kind"], "text": text, "witness": run.witnesses.get(ev["seq"], [])}
