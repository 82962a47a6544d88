"""Client metadata invariants (ref §3.1, §3.3; KAFKA-7738, KIP-951)."""

from __future__ import annotations

from invariants.base import Invariant


class ClientLeaderEpochRegression(Invariant):
    """A client's known leader epoch for a partition never goes down, except when the topic is
    recreated under a new topic id (ref §3.1, §4 rows 9-10). A client that crashed starts
    over: its metadata cache is in memory only."""

    name = "client_leader_epoch_regression"
    handlers = {"client_epoch": "on_epoch", "crash": "on_crash"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.known: dict[tuple, tuple] = {}

    def on_crash(self, ev):
        for key in [k for k in self.known if k[0] == ev["node"]]:
            del self.known[key]

    def on_epoch(self, ev):
        key = (ev["node"], ev["tp"])
        prev = self.known.get(key)
        if prev is not None and prev[1] == ev["topic_id"] and ev["leader_epoch"] < prev[0]:
            self.violate(ev["t"], f"{ev['node']} went back from leader epoch {prev[0]} to "
                         f"{ev['leader_epoch']} for {ev['tp']} (from {ev.get('from')})",
                         prev[2], ev["seq"])
        self.known[key] = (ev["leader_epoch"], ev["topic_id"], ev["seq"])


class LeaderHintMisapplied(Invariant):
    """A KIP-951 CurrentLeader hint is applied only when strictly newer than the client's epoch
    and naming a broker that exists (ref §3.3.2)."""

    name = "leader_hint_misapplied"
    handlers = {"client_epoch": "on_epoch"}

    def on_epoch(self, ev):
        if ev["source"] != "hint":
            return
        if ev["leader_epoch"] <= ev["previous_epoch"]:
            self.violate(ev["t"], f"{ev['node']} applied a hint for {ev['tp']} at epoch "
                         f"{ev['leader_epoch']}, not newer than its {ev['previous_epoch']}", ev["seq"])
        elif not 1 <= ev["leader"] <= self.ctx.brokers:
            self.violate(ev["t"], f"{ev['node']} applied a hint naming unknown node {ev['leader']}",
                         ev["seq"])
