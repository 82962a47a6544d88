"""The invariant catalogue and the monitor that runs them over a trace.

Contract: `INVARIANTS` maps each public name (part of the interface) to its class; the
`Monitor` feeds every event to the shared folds, then to the handlers of the selected
invariants, and `finish()` returns (violations sorted by time then seq, metrics). With
`stop_at_first`, `failed` turns true at the first safety violation so a caller can stop early.
"""

from __future__ import annotations

from invariants import clients, control, idempotence, leadership, replication
from invariants.folds import ReplicaLogs, Truth
from invariants.idempotence import IdempotenceFold
from invariants.metrics import METRIC_KINDS, Metrics

_CLASSES = [
    leadership.SingleLeaderPerEpoch, leadership.LeaderEpochMonotonic, leadership.StaleLeaderAppend,
    control.StopReplicaOutOfOrder, control.StrayReplica,
    replication.AckedWriteLost, replication.LogDivergence, replication.HighWatermarkMonotonic,
    idempotence.DuplicateAppend, idempotence.OutOfOrderAppend,
    idempotence.SpuriousOutOfOrderSequence, idempotence.UnreportedDataLoss,
    idempotence.IdempotenceModeViolated,
    clients.ClientLeaderEpochRegression, clients.LeaderHintMisapplied,
]
INVARIANTS = {cls.name: cls for cls in _CLASSES}

# Which event kinds each shared fold reads (routing saves a call per fold per event).
TRUTH_KINDS = frozenset({"partition_state", "topic_deleted", "crash", "restart",
                         "controller_elected", "controller_resigned", "end"})
LOG_KINDS = frozenset({"append", "replicate", "hw", "truncate", "log_start", "log_created",
                       "log_deleted"})
IDEM_KINDS = frozenset({"client_config", "append"})


class Context:
    """What invariants share: the header, cluster truth, replica logs, idempotence facts."""

    def __init__(self, header: dict):
        self.header = header
        self.brokers = header.get("options", {}).get("cluster", {}).get("brokers", 0)
        self.protocol = header.get("options", {}).get("protocol", {})  # resolved switches
        self.truth = Truth()
        self.logs = ReplicaLogs()
        self.idem = IdempotenceFold()
        self.end_t = 0
        self.end_seq = None


class Monitor:
    def __init__(self, header: dict, names: list[str]):
        unknown = [n for n in names if n not in INVARIANTS]
        if unknown:
            raise ValueError(f"unknown invariant {unknown[0]!r}; known: {sorted(INVARIANTS)}")
        self.ctx = Context(header)
        self.invariants = [INVARIANTS[n](self.ctx) for n in names]
        self.metrics = Metrics()
        self.dispatch: dict[str, list] = {}
        for inv in self.invariants:
            for kind, method in inv.handlers.items():
                self.dispatch.setdefault(kind, []).append(getattr(inv, method))
        self.failed = False

    def step(self, ev: dict) -> None:
        ctx = self.ctx
        ctx.end_t = ev["t"]
        ctx.end_seq = ev["seq"]
        kind = ev["kind"]
        if kind in TRUTH_KINDS:
            ctx.truth.step(ev)
        if kind in LOG_KINDS:
            ctx.logs.step(ev)
        if kind in IDEM_KINDS:
            ctx.idem.step(ev)
        if kind in METRIC_KINDS:
            self.metrics.step(ev, ctx.truth)
        handlers = self.dispatch.get(kind)
        if handlers:
            for handler in handlers:
                handler(ev)
                if handler.__self__.violations:
                    self.failed = True

    def finish(self) -> tuple[list, dict]:
        for inv in self.invariants:
            inv.finish()
        violations = sorted((v for inv in self.invariants for v in inv.violations),
                            key=lambda v: (v.t_us, v.seqs[:1], v.invariant))
        return violations, self.metrics.result(self.ctx)


def check_events(header: dict, events, names: list[str] | None = None) -> tuple[list, dict]:
    """Offline check of a stored trace's events."""
    monitor = Monitor(header, names if names is not None else header.get("invariants", list(INVARIANTS)))
    for ev in events:
        monitor.step(ev)
    return monitor.finish()
