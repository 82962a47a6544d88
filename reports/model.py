"""The timeline model: one pass folds a trace into intervals, one list per lane.

Contract: `build(events, end_us)` returns a `Model`. Every span is half-open
[start_us, end_us) in integer µs; spans of zero length are dropped. Keys and values:
- `truth[tp]`: (leader id, leader_epoch) as the controller recorded it (`partition_state`);
- `roles[(tp, broker)]`: (role, leader_epoch), role one of leader | follower | offline
  (crashed) | stopped (StopReplica without delete) | deleted (log deleted);
- `views[(tp, broker)]`: (leader id, leader_epoch) in the broker's metadata cache;
- `clients[(client, tp)]`: (leader id, leader_epoch) the client knows (`client_epoch`);
  `behind` / `other_leader` find where a view's epoch is older / its leader another;
- `controllers[node]`: (controller_epoch,) while the node acts as the active controller;
- `faults`: `FaultSpan`s (windows from an action to its undo, or instants);
- `marks`: produce outcomes (ack / retry / failed) and `latency` (t, ms, client) per ack;
- `messages[mid]`: the LeaderAndIsr and StopReplica messages, with delivery and holds;
- `leaderless`: (t, number of partitions without a leader) at every change;
- `metadata_log`: KRaft's metadata log and each broker's applied offset
  (`reports.metadata_log.MetadataLog`), empty in ZooKeeper mode.
It knows the trace vocabulary only; fault windows are paired in `reports.faultspans`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reports import metadata_log
from reports.faultspans import FaultSpans
from reports.words import describe_send
from sim.kafka import vocab as V

CONTROL_KINDS = ("LeaderAndIsr", "StopReplica")


@dataclass(frozen=True)
class Span:
    start_us: int
    end_us: int
    value: tuple


@dataclass(frozen=True)
class Mark:
    t_us: int
    node: str
    tp: str | None
    what: str  # ack | retry | failed
    error: int = 0
    seq: int = -1


@dataclass
class Message:
    mid: int
    send_us: int
    src: str
    dst: str
    msg: str
    tps: tuple
    text: str
    send_seq: int
    deliver_us: int | None = None
    deliver_seq: int | None = None
    held: bool = False
    dropped: str | None = None
    # what the receiver did with it: tp -> (issued leader epoch, result) for StopReplica
    outcome: dict = field(default_factory=dict)


class Steps:
    """Step functions per key: `set(key, t, value)` closes the running span, opens another."""

    def __init__(self) -> None:
        self.current: dict = {}
        self.spans: dict = {}

    def set(self, key, t_us: int, value) -> None:
        cur = self.current.get(key)
        if cur is not None and cur[1] == value:
            return
        if cur is not None:
            self._close(key, cur, t_us)
        if value is None:
            self.current.pop(key, None)
        else:
            self.current[key] = (t_us, value)
            self.spans.setdefault(key, [])

    def get(self, key):
        cur = self.current.get(key)
        return None if cur is None else cur[1]

    def _close(self, key, cur, t_us: int) -> None:
        if t_us > cur[0]:
            self.spans[key].append(Span(cur[0], t_us, cur[1]))

    def finish(self, end_us: int) -> dict:
        for key, cur in list(self.current.items()):
            self._close(key, cur, max(end_us, cur[0]))
        self.current = {}
        return self.spans


@dataclass
class Model:
    end_us: int
    truth: dict = field(default_factory=dict)
    roles: dict = field(default_factory=dict)
    views: dict = field(default_factory=dict)
    clients: dict = field(default_factory=dict)
    controllers: dict = field(default_factory=dict)
    faults: list = field(default_factory=list)
    marks: list = field(default_factory=list)
    latency: list = field(default_factory=list)
    messages: dict = field(default_factory=dict)
    leaderless: list = field(default_factory=list)
    metadata_log: metadata_log.MetadataLog = field(default_factory=metadata_log.MetadataLog)

    def partitions(self) -> list[str]:
        return sorted(self.truth, key=tp_key)

    def brokers_of(self, tp: str) -> list[str]:
        """Brokers that hosted a replica of `tp` at some time."""
        return sorted((b for (t, b) in self.roles if t == tp), key=node_key)

    def clients_of(self, tp: str) -> list[str]:
        return sorted((c for (c, t) in self.clients if t == tp), key=node_key)


def tp_key(tp: str):
    topic, _, index = tp.rpartition("-")
    return (topic, int(index)) if index.isdigit() else (tp, -1)


def node_key(node: str):
    """Controllers, then brokers, then clients; numbers in numeric order (b2 before b10)."""
    head = node.rstrip("0123456789")
    num = node[len(head):]
    group = {"c": 0, "b": 1}.get(head, 2)
    return (group, head, int(num) if num else -1)


class Builder:
    """Folds events one at a time (`step`), then `finish(end_us)` returns the Model."""

    def __init__(self) -> None:
        self.truth = Steps()
        self.roles = Steps()
        self.views = Steps()
        self.clients = Steps()
        self.controllers = Steps()
        self.faults = FaultSpans()
        self.before_crash: dict[str, dict] = {}
        self.last_delivered: dict[str, Message] = {}
        self.leaderless: set[str] = set()
        self.meta_log = metadata_log.MetadataLogFold()
        self.m = Model(0)

    def step(self, ev: dict) -> None:
        handler = _HANDLERS.get(ev["kind"])
        if handler is not None:
            handler(self, ev)
        if ev["kind"] in metadata_log.KINDS:
            self.meta_log.step(ev)
        self.faults.step(ev)

    # -- controller truth ------------------------------------------------------------------
    def partition_state(self, ev):
        self.truth.set(ev["tp"], ev["t"], (ev["leader"], ev["leader_epoch"]))
        self._count_leaderless(ev["t"], ev["tp"], ev["leader"] < 0)

    def topic_deleted(self, ev):
        for tp in list(self.truth.current):
            if tp.rpartition("-")[0] == ev["topic"]:
                self.truth.set(tp, ev["t"], None)
                self._count_leaderless(ev["t"], tp, False)

    def _count_leaderless(self, t_us: int, tp: str, leaderless: bool) -> None:
        before = len(self.leaderless)
        if leaderless:
            self.leaderless.add(tp)
        else:
            self.leaderless.discard(tp)
        if len(self.leaderless) != before or not self.m.leaderless:
            self.m.leaderless.append((t_us, len(self.leaderless)))

    def controller_elected(self, ev):
        self.controllers.set(ev["node"], ev["t"], (ev["controller_epoch"],))

    def controller_resigned(self, ev):
        self.controllers.set(ev["node"], ev["t"], None)

    # -- brokers ---------------------------------------------------------------------------
    def replica_state(self, ev):
        self.roles.set((ev["tp"], ev["node"]), ev["t"], (ev["role"], ev["leader_epoch"]))

    def stop_replica(self, ev):
        msg = self.last_delivered.get(ev["node"])
        if msg is not None and msg.msg == "StopReplica" and msg.deliver_us == ev["t"]:
            msg.outcome[ev["tp"]] = (ev.get("issued_epoch"), ev.get("result"))
        if ev.get("result") != "applied":
            return
        key = (ev["tp"], ev["node"])
        role = ("deleted", None) if ev.get("delete") else ("stopped", ev.get("local_epoch"))
        self.roles.set(key, ev["t"], role)

    def log_deleted(self, ev):
        self.roles.set((ev["tp"], ev["node"]), ev["t"], ("deleted", None))

    def metadata(self, ev):
        for tp, leader, epoch in ev.get("changes", []):
            value = None if epoch == -2 else (leader, epoch)  # -2: the topic was deleted
            self.views.set((tp, ev["node"]), ev["t"], value)

    def crash(self, ev):
        node, t = ev["node"], ev["t"]
        self.controllers.set(node, t, None)
        saved = {}
        for key in sorted(k for k in self.roles.current if k[1] == node):
            saved[key] = self.roles.get(key)
            self.roles.set(key, t, ("offline", None))
        self.before_crash[node] = saved

    def restart(self, ev):
        # a restarted broker keeps deleted logs deleted; everything else waits for LeaderAndIsr
        for key, value in self.before_crash.pop(ev["node"], {}).items():
            if self.roles.get(key) == ("offline", None):
                self.roles.set(key, ev["t"], value if value and value[0] == "deleted" else None)

    # -- clients ---------------------------------------------------------------------------
    def client_epoch(self, ev):
        self.clients.set((ev["node"], ev["tp"]), ev["t"], (ev["leader"], ev["leader_epoch"]))

    def ack(self, ev):
        self.m.marks.append(Mark(ev["t"], ev["node"], ev.get("tp"), "ack", 0, ev["seq"]))
        self.m.latency.append((ev["t"], ev.get("latency_us", 0) / 1000.0, ev["node"]))

    def produce_error(self, ev):
        if ev.get("action") == "retry":
            self.m.marks.append(Mark(ev["t"], ev["node"], ev.get("tp"), "retry",
                                     ev.get("error", 0), ev["seq"]))

    def produce_failed(self, ev):
        self.m.marks.append(Mark(ev["t"], ev["node"], ev.get("tp"), "failed",
                                 ev.get("error", 0), ev["seq"]))

    # -- control messages ------------------------------------------------------------------
    def send(self, ev):
        if ev.get("msg") in CONTROL_KINDS:
            tps = tuple(p[0] for p in ev.get("parts", []))
            self.m.messages[ev["mid"]] = Message(ev["mid"], ev["t"], ev["node"], ev["dst"],
                                                 ev["msg"], tps, describe_send(ev), ev["seq"])

    def deliver(self, ev):
        msg = self.m.messages.get(ev["mid"])
        if msg is not None and msg.deliver_us is None:
            msg.deliver_us, msg.deliver_seq = ev["t"], ev["seq"]
            self.last_delivered[ev["node"]] = msg

    def hold(self, ev):
        msg = self.m.messages.get(ev["mid"])
        if msg is not None:
            msg.held = True

    def drop(self, ev):
        msg = self.m.messages.get(ev["mid"])
        if msg is not None:
            msg.dropped = ev.get("reason", "?")

    def finish(self, end_us: int) -> Model:
        m = self.m
        m.end_us = end_us
        m.truth = self.truth.finish(end_us)
        m.roles = self.roles.finish(end_us)
        m.views = self.views.finish(end_us)
        m.clients = self.clients.finish(end_us)
        m.controllers = self.controllers.finish(end_us)
        m.faults = self.faults.finish(end_us)
        m.metadata_log = self.meta_log.finish(end_us)
        return m


_HANDLERS = {
    V.PARTITION_STATE: Builder.partition_state, V.TOPIC_DELETED: Builder.topic_deleted,
    V.CONTROLLER_ELECTED: Builder.controller_elected,
    V.CONTROLLER_RESIGNED: Builder.controller_resigned,
    V.REPLICA_STATE: Builder.replica_state, V.STOP_REPLICA: Builder.stop_replica,
    V.LOG_DELETED: Builder.log_deleted, V.METADATA: Builder.metadata,
    V.CRASH: Builder.crash, V.RESTART: Builder.restart,
    V.CLIENT_EPOCH: Builder.client_epoch, V.ACK: Builder.ack,
    V.PRODUCE_ERROR: Builder.produce_error, V.PRODUCE_FAILED: Builder.produce_failed,
    V.SEND: Builder.send, V.DELIVER: Builder.deliver, V.HOLD: Builder.hold, V.STALL: Builder.hold, V.DROP: Builder.drop,
}


def build(events, end_us: int | None = None) -> Model:
    """Fold `events` (in trace order) into a Model ending at `end_us` (default: last event)."""
    builder = Builder()
    last = 0
    for ev in events:
        builder.step(ev)
        last = ev["t"]
    return builder.finish(last if end_us is None else end_us)


def behind(spans: list[Span], truth: list[Span]) -> list[tuple[int, int]]:
    """Intervals where a view's leader epoch (value[1]) is older than the truth's.

    Both lists are sorted and non-overlapping; where the view has no value, it is not
    compared (a broker that has not heard of a partition yet is not behind on it)."""
    return _where(spans, truth, lambda view, true: view[1] < true[1])


def other_leader(spans: list[Span], truth: list[Span]) -> list[tuple[int, int]]:
    """Intervals where a view names another leader than the truth's (value[0]): what makes a
    producer's request go astray. An older epoch naming the same broker is not counted: a
    producer addresses the leader, and that broker acknowledges it as usual."""
    return _where(spans, truth, lambda view, true: view[0] != true[0])


def _where(spans: list[Span], truth: list[Span], differs) -> list[tuple[int, int]]:
    """Merged intervals where both lists have a value and `differs(view, truth)`."""
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(spans) and j < len(truth):
        a, b = spans[i], truth[j]
        lo, hi = max(a.start_us, b.start_us), min(a.end_us, b.end_us)
        if lo < hi and differs(a.value, b.value):
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        if a.end_us <= b.end_us:
            i += 1
        else:
            j += 1
    return out
