"""The invariant catalogue and the monitor that runs them over a trace.

Contract: `INVARIANTS` maps each public name (part of the interface) to its class; the
`Monitor` feeds every event to the shared folds, then to the handlers of the selected
invariants, and `finish()` returns (violations sorted by time then seq, metrics). With
`stop_at_first`, `failed` turns true at the first safety violation so a caller can stop early.
"""

from __future__ import annotations

from invariants import (
    clients,
    control,
    idempotence,
    kraft,
    kraft_voters,
    leadership,
    quiet,
    recovery,
    replication,
)
from invariants.folds import ReplicaLogs, Truth
from invariants.idempotence import IdempotenceFold
from invariants.metrics import METRIC_KINDS, Metrics
from sim.core.trace import TraceError
from sim.kafka.options import MAX_NUMBER, ClusterOptions, limit

_CLASSES = [
    leadership.SingleLeaderPerEpoch, leadership.LeaderEpochMonotonic, leadership.StaleLeaderAppend,
    control.StopReplicaOutOfOrder, control.StrayReplica, recovery.UnderReplicatedAfterHeal,
    recovery.ProduceStalledAfterHeal, recovery.ConsumeStalledAfterHeal,
    replication.AckedWriteLost, replication.LogDivergence, replication.HighWatermarkMonotonic,
    idempotence.DuplicateAppend, idempotence.OutOfOrderAppend,
    idempotence.SpuriousOutOfOrderSequence, idempotence.UnreportedDataLoss,
    idempotence.IdempotenceModeViolated,
    clients.ClientLeaderEpochRegression, clients.LeaderHintMisapplied,
    clients.ConsumerSkippedRecord,
    kraft.MetadataLogSafety, kraft.MetadataAppliedInOrder, kraft.FencedBrokerAck,
    kraft.DemotedLeaderAppend, kraft.IsrAnswerBeforeCommit, kraft.BrokerMetadataStalled,
    kraft_voters.VoterChangesOneAtATime,
]
INVARIANTS = {cls.name: cls for cls in _CLASSES}

# Which event kinds each shared fold reads (routing saves a call per fold per event).
TRUTH_KINDS = frozenset({"partition_state", "topic_deleted", "crash", "restart", "log_dir_failure",
                         "controller_elected", "controller_resigned", "end"})
LOG_KINDS = frozenset({"append", "replicate", "hw", "truncate", "log_start", "log_created",
                       "log_deleted"})
IDEM_KINDS = frozenset({"client_config", "append"})
VERSION_KINDS = frozenset({"upgrade"})
QUIET_KINDS = quiet.QuietClock.KINDS


# The most brokers a scenario may have (the options' limit, which the loader checks):
# invariants build per-broker state, so an edited header's count must not make them allocate
# without bound.
MAX_BROKERS = limit(ClusterOptions, "brokers").hi
# The options the invariants read: numbers of the cluster, and the clients' settings by name.
_CLUSTER_NUMBERS = ("min_insync_replicas", "replica_fetch_wait_max_ms",
                    "controller_request_retry_ms")
_CLIENT_NUMBERS = {"producers": ("request_timeout_ms", "retry_backoff_ms",
                                 "retry_backoff_max_ms"),
                   "consumers": ()}


def options_problem(options) -> str | None:
    """What is wrong with the options of a trace header that the invariants read, as
    "<key>: <problem>", or None. A trace `epochsim run` wrote always passes: a failure means
    the header was edited (a huge broker count would exhaust memory, a number where a list
    of clients belongs would crash a rule)."""
    if not isinstance(options, dict):
        # without the cluster's size every broker id looks unknown: refuse, do not guess
        return "options: missing or not an object (the scenario's resolved options)"
    for key in ("cluster", "protocol"):
        if not isinstance(options.get(key, {}), dict):
            return f"options.{key}: must be an object"
    nodes = options.get("protocol", {}).get("nodes", {})
    if not isinstance(nodes, dict) or not all(isinstance(v, dict) for v in nodes.values()):
        return "options.protocol.nodes: must be an object of node name -> switches"
    cluster = options.get("cluster", {})
    brokers = cluster.get("brokers")
    if type(brokers) is not int or not 1 <= brokers <= MAX_BROKERS:
        return f"options.cluster.brokers: {_shown(brokers)} is not a broker count 1..{MAX_BROKERS}"
    for key in _CLUSTER_NUMBERS:
        if key in cluster and not _whole(cluster[key]):
            return f"options.cluster.{key}: {_shown(cluster[key])} is not a whole number"
    for section, numbers in _CLIENT_NUMBERS.items():
        clients = options.get(section, [])
        if not isinstance(clients, list):
            return f"options.{section}: {_shown(clients)} is not an array of clients"
        for i, client in enumerate(clients):
            key = f"options.{section}[{i}]"
            if not isinstance(client, dict) or not isinstance(client.get("name", ""), str):
                return f"{key}: {_shown(client)} is not a client object with a name"
            for name in numbers:
                if name in client and not _whole(client[name]):
                    return f"{key}.{name}: {_shown(client[name])} is not a whole number"
    return None


def _whole(value) -> bool:
    return type(value) is int and 0 <= value <= MAX_NUMBER


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Context:
    """What invariants share: the header, cluster truth, replica logs, idempotence facts."""

    def __init__(self, header: dict):
        self.header = header
        problem = options_problem(header.get("options"))
        if problem:
            raise TraceError(f"header (line 1): {problem}; the trace was edited or is not an "
                             "epochsim trace")
        options = header["options"]
        self.brokers = options["cluster"]["brokers"]
        self.protocol = options.get("protocol", {})  # the run's resolved switches
        # the switches of each node on another profile than the run's (per-node versions),
        # from the header, then as `upgrade` events change them
        self.node_protocols: dict[str, dict] = dict(self.protocol.get("nodes", {}))
        self.truth = Truth()
        self.logs = ReplicaLogs()
        self.idem = IdempotenceFold()
        cluster = options["cluster"]
        self.quiet = quiet.QuietClock(cluster.get("broker_session_timeout_ms", 0) * 1000
                                      if cluster.get("mode") == "kraft" else 0)
        self.end_t = 0
        self.end_seq = None

    def protocol_of(self, node: str) -> dict:
        """The switches node `node` runs now, as far as the events folded so far tell."""
        return self.node_protocols.get(node, self.protocol)

    def on_upgrade(self, ev: dict) -> None:
        self.node_protocols[ev["node"]] = ev["protocol"]


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
        # the kinds `step` reads: it may be shown only these (`Trace.observe`), as
        # `check_events` does too, so that online and offline checks fold the same events
        self.kinds = (TRUTH_KINDS | LOG_KINDS | IDEM_KINDS | QUIET_KINDS | METRIC_KINDS
                      | VERSION_KINDS | set(self.dispatch))
        self.failed = False
        self.liveness: dict[str, str] = {}
        self._routes: dict[str, tuple] = {}  # kind -> what `step` calls for it (`_route`)

    def _route(self, kind: str) -> tuple:
        """(folds, metrics?, handlers) for events of `kind`: the shared folds that read it, in
        the order truth, logs, idempotence, quiet clock, versions; whether the metrics do; the
        invariants' handlers. Worked out once per kind, so an event costs one lookup."""
        ctx = self.ctx
        folds = tuple(fn for kinds, fn in ((TRUTH_KINDS, ctx.truth.step),
                                           (LOG_KINDS, ctx.logs.step),
                                           (IDEM_KINDS, ctx.idem.step),
                                           (QUIET_KINDS, ctx.quiet.step),
                                           (VERSION_KINDS, ctx.on_upgrade)) if kind in kinds)
        route = self._routes[kind] = (folds, kind in METRIC_KINDS,
                                      tuple(self.dispatch.get(kind, ())))
        return route

    def step(self, ev: dict) -> None:
        ctx = self.ctx
        ctx.end_t = ev["t"]
        ctx.end_seq = ev["seq"]
        kind = ev["kind"]
        route = self._routes.get(kind)
        folds, metrics, handlers = route if route is not None else self._route(kind)
        for fold in folds:
            fold(ev)
        if metrics:
            self.metrics.step(ev, ctx.truth)
        for handler in handlers:
            handler(ev)
            if handler.__self__.violations:
                self.failed = True

    def finish(self) -> tuple[list, dict]:
        """(violations, metrics). Also sets `liveness`: for each selected rule that may judge
        nothing (the after-heal rules, stray_replica), what it judged or why it judged nothing;
        the metric `liveness_judged` holds the after-heal rules' counts."""
        for inv in self.invariants:
            inv.finish()
        violations = sorted((v for inv in self.invariants for v in inv.violations),
                            key=lambda v: (v.t_us, v.seqs[:1], v.invariant))
        metrics = self.metrics.result(self.ctx)
        after_heal = [inv for inv in self.invariants if isinstance(inv, quiet.AfterHeal)]
        # every rule that may judge nothing says so (stray_replica and the after-heal rules)
        self.liveness = {inv.name: inv.note for inv in self.invariants if hasattr(inv, "note")}
        metrics["liveness_judged"] = {inv.name: inv.judged for inv in after_heal}
        return violations, metrics


# What folding an event of the wrong shape raises (a missing field, a string for a list, ...).
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError)


def check_events(header: dict, events, names: list[str] | None = None,
                 whole: bool = False, notes: dict | None = None) -> tuple[list, dict]:
    """Offline check of a stored trace's events. A header or an event whose shape the
    invariants cannot read raises TraceError (without the file name: callers add it), and so
    does, with `whole`, a trace whose last event is not the run's `end`. A `notes` dict is
    filled with what each after-heal rule judged (`Monitor.liveness`).

    The same code folded the same events online when `epochsim run` wrote the trace, so an
    event it cannot fold offline has been edited, or comes from another harness version."""
    if names is None:
        names = header.get("invariants", list(INVARIANTS))
        unknown = [n for n in names if n not in INVARIANTS]
        if unknown:
            raise TraceError(f"header: unknown invariant {unknown[0]!r}; pass --invariants "
                             "to choose known ones")
    monitor = Monitor(header, names)
    kinds = monitor.kinds
    last = None
    for ev in events:
        last = ev
        try:
            if ev["kind"] in kinds:
                monitor.step(ev)
        except SHAPE_ERRORS as exc:
            raise TraceError(f"event seq {ev.get('seq')} ({ev.get('kind')}): "
                             f"{_shape_problem(exc)}; the trace was edited or comes from "
                             "another harness version") from None
    if whole and (last is None or last.get("kind") != "end"):
        # the end-of-run rules (liveness, stray replicas, lost acks) need the whole run
        raise TraceError("the trace has no `end` event: it is cut short (a partial copy, or a "
                         "run that did not finish); check a whole trace, or re-run the scenario")
    try:
        result = monitor.finish()
    except SHAPE_ERRORS as exc:
        raise TraceError(f"events do not fit together ({_shape_problem(exc)}); the trace was "
                         "edited or comes from another harness version") from None
    if notes is not None:
        notes.update(monitor.liveness)
    return result


def _shape_problem(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no field {exc}"
    return f"a field has the wrong shape: {exc}"
