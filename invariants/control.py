"""Control-plane invariants: StopReplica ordering (KIP-570) and stray replicas (KAFKA-13972)."""

from __future__ import annotations

from invariants.base import Invariant


class StopReplicaOutOfOrder(Invariant):
    """A broker applies a StopReplica for a partition after it applied a LeaderAndIsr with a
    newer leader epoch than the one current when the StopReplica was issued (ref §4 row 6).
    `issued_epoch` is recorded for every request version, even those whose wire form has none."""

    name = "stop_replica_out_of_order"
    handlers = {"replica_state": "on_state", "stop_replica": "on_stop"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.applied: dict[tuple, tuple] = {}  # (node, tp, topic_id) -> (max epoch, seq)

    def on_state(self, ev):
        key = (ev["node"], ev["tp"], ev["topic_id"])
        prev = self.applied.get(key)
        if prev is None or ev["leader_epoch"] > prev[0]:
            self.applied[key] = (ev["leader_epoch"], ev["seq"])

    def on_stop(self, ev):
        if ev["result"] in ("fenced", "offline"):  # nothing stopped (offline: a failed log dir)
            return
        if ev["result"] == "not_hosted" and not (
                ev["delete"] and self.ctx.logs.get(ev["node"], ev["tp"]) is not None):
            return  # found nothing to stop: no effect (a durable log left after a restart counts)
        prev = self.applied.get((ev["node"], ev["tp"], ev["topic_id"]))
        if prev is not None and prev[0] > ev["issued_epoch"]:
            what = "deleted" if ev["delete"] else "stopped"
            self.violate(ev["t"], f"{ev['node']} {what} {ev['tp']} on a StopReplica issued at leader "
                         f"epoch {ev['issued_epoch']} after applying LeaderAndIsr epoch {prev[0]}",
                         prev[1], ev["seq"])


class StrayReplica(Invariant):
    """Liveness: once faults heal and the controller's work settles, every live broker hosts
    exactly the replicas the controller assigns to it (ref §4 row 7; §6 liveness). A run
    whose controller still has a request on its way to a live broker at the end (`unsettled`:
    a delay rule can keep one, and the requests queued behind it, past the end; a cut link or
    a hold rule can keep one for good) is not judged: its brokers have not yet heard what the controller decided. A broker down at the
    end, or with a log directory that failed and no restart since, is not judged. In KRaft a
    broker learns by fetching the metadata log: one that cannot reach the quorum leader both
    ways at the end, or that `slow_metadata` slows, is not judged (`metadata_reach`), nor is a
    KRaft run with a delay or reorder rule still in force, or with a cut link at the end: a
    voter cut from the others keeps standing for election, and the brokers that learn its
    epoch have their Fetches refused by the leader until the cut heals (as Kafka's observers
    do before pre-vote), so they cannot have heard what the controller decided. After
    `finish`, `note` says what was judged, or why nothing was (Jepsen's :unknown, not a
    pass)."""

    name = "stray_replica"
    rule = "liveness"
    handlers = {"log_created": "on_created", "log_deleted": "on_deleted",
                "unsettled": "on_unsettled", "metadata_reach": "on_reach",
                "unhealed": "on_unhealed"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.hosted: dict[tuple, int] = {}  # (node, tp) -> seq of log_created
        self.unsettled = False
        self.cut_at_end = False  # a link still cut at the end (the harness's `unhealed`)
        self.kraft = False  # a `metadata_reach` came: the run is KRaft
        self.unreached: set[str] = set()  # KRaft: brokers that cannot learn the metadata log
        self.slowed = False
        self.note = "not judged: the run has not ended"

    def on_unsettled(self, ev):
        self.unsettled = True

    def on_unhealed(self, ev):
        self.cut_at_end = bool(ev.get("cut_links"))

    def on_reach(self, ev):
        self.kraft = True
        self.unreached = {b for b, reach, slow in ev["brokers"] if not reach or slow}
        self.slowed = ev["slowed"]

    def on_created(self, ev):
        self.hosted[(ev["node"], ev["tp"])] = (ev["seq"], ev["topic_id"])

    def on_deleted(self, ev):
        self.hosted.pop((ev["node"], ev["tp"]), None)

    def finish(self):
        truth = self.ctx.truth
        end = truth.end
        why_not = self._why_not(truth)
        if why_not:
            self.note = f"not judged: {why_not}"
            return
        # a broker whose failed log dir is not back yet holds files it cannot serve or delete
        brokers = [f"b{i}" for i in range(1, self.ctx.brokers + 1)
                   if f"b{i}" not in truth.down and f"b{i}" not in truth.failed_dirs
                   and f"b{i}" not in self.unreached]
        self.note = f"judged {len(brokers)} live broker{'s' if len(brokers) != 1 else ''}"
        if self.unreached:
            self.note += (f" (not {', '.join(sorted(self.unreached))}: cut from the quorum "
                          "leader or slowed)")
        for b in brokers:
            for tp in sorted(truth.parts):
                st = truth.parts[tp]
                assigned = int(b[1:]) in st["replicas"]
                held = self.hosted.get((b, tp))
                seq = held[0] if held else None
                if held is not None and held[1] != st["topic_id"]:
                    self.violate(end["t"], f"{b} still hosts {tp} of an earlier incarnation of the "
                                 f"topic (topic id {held[1]}, now {st['topic_id']})", seq, end["seq"])
                    continue
                if assigned and seq is None:
                    self.violate(end["t"], f"{b} lacks its assigned replica of {tp} "
                                 f"(replicas {st['replicas']})", truth.state_seq[tp], end["seq"])
                elif not assigned and seq is not None:
                    self.violate(end["t"], f"{b} still hosts {tp} although the controller assigns "
                                 f"it to {st['replicas']}", seq, truth.state_seq[tp], end["seq"])
        for (b, tp), (seq, _tid) in sorted(self.hosted.items()):
            if tp not in truth.parts and b in brokers:
                self.violate(end["t"], f"{b} still hosts {tp} of a deleted topic", seq, end["seq"])

    def _why_not(self, truth) -> str | None:
        """Why the run cannot be judged, or None when it can."""
        end = truth.end
        if end is None:
            return "the trace has no end"
        if not end.get("settled"):
            return f"the run was cut off before its end ({end.get('stopped_by')})"
        if truth.active_controller is None:
            return "no controller was active at the end"
        if self.unsettled:
            return ("a controller request was still on its way to a live broker at the end "
                    "(unsettled)")
        if self.slowed:
            return "a delay or reorder rule was still in force at the end (KRaft)"
        if self.kraft and self.cut_at_end:
            return ("a link was still cut at the end (KRaft: a cut voter's rising epoch can "
                    "keep the brokers from the metadata log)")
        return None
