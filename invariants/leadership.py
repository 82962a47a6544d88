"""Leadership invariants: one leader per epoch, monotonic epochs, no stale-leader appends."""

from __future__ import annotations

from invariants.base import Invariant


class SingleLeaderPerEpoch(Invariant):
    """For each (partition, topic id, leader epoch) at most one broker ever acts as leader
    (ref §6 item 2; RaftEventSimulationTest SingleLeader)."""

    name = "single_leader_per_epoch"
    handlers = {"replica_state": "on_state"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.leaders: dict[tuple, tuple] = {}

    def on_state(self, ev):
        if ev["role"] != "leader":
            return
        key = (ev["tp"], ev["topic_id"], ev["leader_epoch"])
        first = self.leaders.setdefault(key, (ev["node"], ev["seq"]))
        if first[0] != ev["node"]:
            self.violate(ev["t"], f"{ev['node']} and {first[0]} both led {ev['tp']} "
                         f"at leader epoch {ev['leader_epoch']}", first[1], ev["seq"])


class LeaderEpochMonotonic(Invariant):
    """Per broker and partition, the applied leader epoch never decreases while the replica
    lives (ref §6 item 1)."""

    name = "leader_epoch_monotonic"
    handlers = {"replica_state": "on_state", "log_deleted": "on_deleted"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.last: dict[tuple, tuple] = {}

    def on_state(self, ev):
        key = (ev["node"], ev["tp"], ev["topic_id"])
        prev = self.last.get(key)
        if prev is not None and ev["leader_epoch"] < prev[0]:
            self.violate(ev["t"], f"{ev['node']} moved {ev['tp']} back from leader epoch {prev[0]} "
                         f"to {ev['leader_epoch']}", prev[1], ev["seq"])
        self.last[key] = (ev["leader_epoch"], ev["seq"])

    def on_deleted(self, ev):
        self.last.pop((ev["node"], ev["tp"], ev["topic_id"]), None)


class StaleLeaderAppend(Invariant):
    """A broker acting as leader at epoch e appends a batch whose sender already knew a newer
    leader epoch when it sent the request (the race KIP-359 narrows, ref §4 row 8). An epoch
    the sender knew of a deleted incarnation of the topic (`sender_topic_id`, another topic id)
    says nothing about the new one, whose epochs start again at 0 (ref §4 row 10)."""

    name = "stale_leader_append"
    handlers = {"append": "on_append"}

    def on_append(self, ev):
        for b in ev["batches"]:
            if b["sender_epoch"] > b["leader_epoch"] and "sender_topic_id" not in b:
                self.violate(ev["t"], f"{ev['node']} appended {b['bid']} to {b['tp']} at leader epoch "
                             f"{b['leader_epoch']} though {ev['producer']} knew epoch {b['sender_epoch']}",
                             ev["seq"])
