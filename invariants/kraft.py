"""KRaft invariants: the metadata log's safety, and brokers applying it in order.

Contract: folds over the KRaft trace kinds (`quorum_leader`, `metadata_commit`,
`metadata_apply`, `crash`, `restart`); a ZooKeeper-mode trace has none of them, so both hold
there vacuously. What is committed is what a quorum leader's `metadata_commit` says.
"""

from __future__ import annotations

import json

from invariants.base import Invariant


class MetadataLogSafety(Invariant):
    """Raft's safety for the metadata log (KIP-595; Raft's Election Safety, Leader
    Completeness and State Machine Safety): at most one quorum leader per epoch; a leader
    elected holds at least every record committed before (its log end reaches the highest
    committed offset); and a record committed at an offset is never replaced by another."""

    name = "metadata_log_safety"
    handlers = {"quorum_leader": "on_leader", "metadata_commit": "on_commit"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.leaders: dict[int, tuple[str, int]] = {}  # epoch -> (node, seq)
        self.committed: dict[int, tuple[str, int]] = {}  # offset -> (record text, seq)
        self.high_watermark = (0, None)  # (highest committed end offset, its seq)

    def on_leader(self, ev):
        first = self.leaders.setdefault(ev["epoch"], (ev["node"], ev["seq"]))
        if first[0] != ev["node"]:
            self.violate(ev["t"], f"{first[0]} and {ev['node']} both lead the quorum in "
                         f"epoch {ev['epoch']}", first[1], ev["seq"])
        hw, seq = self.high_watermark
        if ev["end_offset"] < hw:
            self.violate(ev["t"], f"{ev['node']} leads epoch {ev['epoch']} with its log ending "
                         f"at {ev['end_offset']}, below the committed offset {hw}", seq, ev["seq"])

    def on_commit(self, ev):
        for offset, epoch, record in ev["records"]:
            text = json.dumps([epoch, record], sort_keys=True)
            first = self.committed.setdefault(offset, (text, ev["seq"]))
            if first[0] != text:
                self.violate(ev["t"], f"the record committed at metadata offset {offset} "
                             f"changed: {first[0]} became {text}", first[1], ev["seq"])
        if ev["high_watermark"] > self.high_watermark[0]:
            self.high_watermark = (ev["high_watermark"], ev["seq"])


class MetadataAppliedInOrder(Invariant):
    """Each broker applies the metadata log's committed records in log order, from offset 0
    after each start, none skipped and none twice (`MetadataLoader`), and only committed ones
    (below the highest high watermark a quorum leader has recorded)."""

    name = "metadata_applied_in_order"
    handlers = {"metadata_apply": "on_apply", "metadata_commit": "on_commit",
                "crash": "on_restart", "restart": "on_restart"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.expected: dict[str, tuple[int, int | None]] = {}  # broker -> (next offset, seq)
        self.high_watermark = 0

    def on_commit(self, ev):
        self.high_watermark = max(self.high_watermark, ev["high_watermark"])

    def on_restart(self, ev):
        self.expected.pop(ev["node"], None)

    def on_apply(self, ev):
        node = ev["node"]
        expected, seq = self.expected.get(node, (0, None))
        if ev["from_offset"] != expected:
            self.violate(ev["t"], f"{node} applied metadata records from offset "
                         f"{ev['from_offset']} when its next record was {expected}",
                         seq, ev["seq"])
        if ev["to_offset"] > self.high_watermark:
            self.violate(ev["t"], f"{node} applied metadata records up to {ev['to_offset']}, "
                         f"beyond the committed {self.high_watermark}", ev["seq"])
        self.expected[node] = (ev["to_offset"], ev["seq"])


class MetadataLag:
    """Run metrics of a KRaft run (none in ZooKeeper mode): the committed high watermark of
    the metadata log, and for each broker its final metadata offset and how long committed
    records waited before it applied them (commit to apply, ms: p50 and max), the lag that
    lets a broker answer Metadata with a leader the controller already replaced."""

    KINDS = frozenset({"metadata_commit", "metadata_apply", "crash", "restart"})

    def __init__(self):
        self.committed_at: dict[int, int] = {}  # offset -> when it first committed
        self.high_watermark = 0
        self.applied: dict[str, int] = {}
        self.waits: dict[str, list[int]] = {}

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == "metadata_commit":
            for offset, _epoch, _record in ev["records"]:
                self.committed_at.setdefault(offset, ev["t"])
            self.high_watermark = max(self.high_watermark, ev["high_watermark"])
        elif kind == "metadata_apply":
            node = ev["node"]
            waits = self.waits.setdefault(node, [])
            for offset in range(ev["from_offset"], ev["to_offset"]):
                if offset in self.committed_at:
                    waits.append(ev["t"] - self.committed_at[offset])
            self.applied[node] = ev["to_offset"]
        elif kind in ("crash", "restart") and ev["node"] in self.applied:
            self.applied[ev["node"]] = 0

    def result(self) -> dict:
        """{} without KRaft events; else `metadata_high_watermark` and `metadata_lag`."""
        if not self.committed_at:
            return {}
        lag = {}
        for node in sorted(self.applied, key=lambda n: (len(n), n)):
            waits = sorted(self.waits.get(node, ()))
            lag[node] = {"applied_offset": self.applied[node],
                         "p50_ms": round(waits[len(waits) // 2] / 1000, 3) if waits else None,
                         "max_ms": round(waits[-1] / 1000, 3) if waits else None}
        return {"metadata_high_watermark": self.high_watermark, "metadata_lag": lag}
