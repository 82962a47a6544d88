"""Shared folds that several invariants read: cluster truth and every replica's log.

Contract: `Truth` follows the controller's `partition_state` events (the ground truth of
leaders, epochs, ISR and assignment, and which elections an admin's ElectLeaders (UNCLEAN)
made outside the ISR: `operator_unclean`), topic deletion, node crashes/restarts, failed log
directories (a broker's replicas in one are offline until it restarts) and the end marker.
`ReplicaLogs` rebuilds each broker's log of each partition (batch rows `(base_offset, count,
leader_epoch, bid)`) from `log_created`, `append`, `replicate`, `truncate`, `log_start` and
`log_deleted`, plus each replica's HW. Both are fed before the invariants see an event.
"""

from __future__ import annotations

from bisect import bisect_left

from sim.kafka.vocab import ADMIN_UNCLEAN_ELECTION


class Truth:
    def __init__(self):
        self.parts: dict[str, dict] = {}  # tp -> last partition_state event
        self.state_seq: dict[str, int] = {}
        self.down: set[str] = set()
        self.crash_seq: dict[str, int] = {}  # node -> seq of its last crash
        self.failed_dirs: set[str] = set()  # brokers with a failed log dir, until a restart
        self.offline: set[tuple] = set()  # (broker, tp): a replica in a failed log dir
        self.end: dict | None = None
        self.active_controller: str | None = None
        # tp -> (t, seq) of each election an admin's ElectLeaders (UNCLEAN) made outside the ISR
        self.operator_unclean: dict[str, list[tuple[int, int]]] = {}

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == "partition_state":
            old = self.parts.get(ev["tp"])
            if ev["reason"] == ADMIN_UNCLEAN_ELECTION and old is not None \
                    and ev["leader"] >= 0 and ev["leader"] not in old["isr"]:
                self.operator_unclean.setdefault(ev["tp"], []).append((ev["t"], ev["seq"]))
            self.parts[ev["tp"]] = ev
            self.state_seq[ev["tp"]] = ev["seq"]
        elif kind == "topic_deleted":
            for tp in [tp for tp, st in self.parts.items() if st["topic_id"] == ev["topic_id"]]:
                del self.parts[tp]
        elif kind == "crash":
            self.down.add(ev["node"])
            self.crash_seq[ev["node"]] = ev["seq"]
            if ev["node"] == self.active_controller:
                self.active_controller = None
        elif kind == "restart":
            self.down.discard(ev["node"])
            self.failed_dirs.discard(ev["node"])
            self.offline = {(b, tp) for b, tp in self.offline if b != ev["node"]}
        elif kind == "log_dir_failure":
            self.failed_dirs.add(ev["node"])
            self.offline.update((ev["node"], tp) for tp in ev["tps"])
        elif kind == "controller_elected":
            self.active_controller = ev["node"]
        elif kind == "controller_resigned" and ev["node"] == self.active_controller:
            self.active_controller = None
        elif kind == "end":
            self.end = ev


class ReplicaLog:
    __slots__ = ("topic_id", "bases", "rows", "hw", "log_start", "created_seq")

    def __init__(self, topic_id, created_seq):
        self.topic_id = topic_id
        self.bases: list[int] = []
        self.rows: list[tuple] = []  # (base_offset, count, leader_epoch, bid)
        self.hw = 0
        self.log_start = 0
        self.created_seq = created_seq

    def add(self, row: tuple) -> None:
        self.bases.append(row[0])
        self.rows.append(row)

    def truncate(self, offset: int) -> None:
        i = bisect_left(self.bases, offset)
        del self.bases[i:]
        del self.rows[i:]
        self.hw = min(self.hw, offset)

    def drop_below(self, offset: int) -> None:
        i = bisect_left(self.bases, offset)
        del self.bases[:i]
        del self.rows[:i]
        self.log_start = max(self.log_start, offset)

    def rows_between(self, lo: int, hi: int) -> list[tuple]:
        i = bisect_left(self.bases, lo)
        out = []
        while i < len(self.rows) and self.rows[i][0] < hi:
            out.append(self.rows[i])
            i += 1
        return out


class ReplicaLogs:
    def __init__(self):
        self.logs: dict[tuple[str, str], ReplicaLog] = {}  # (node, tp) -> log
        self.bid_topic: dict[str, int] = {}  # batch id -> topic id it was appended under
        self.bid_base: dict[str, int] = {}  # batch id -> base offset of its latest leader append
        self.power_lost: set[str] = set()  # batch ids some replica lost in a power loss
        self.power_cut: dict[str, set] = {}  # tp -> replicas a power loss cut the log of
        self.hosts: dict[str, set] = {}  # tp -> every node that held a replica of it
        self.power_lost_by: dict[str, set] = {}  # batch id -> replicas a power loss took it from
        self.held_by: dict[str, set] = {}  # batch id -> other replicas holding it at such a loss

    def get(self, node: str, tp: str) -> ReplicaLog | None:
        return self.logs.get((node, tp))

    def lost_to_every_replica_power(self, tp: str, bid: str) -> bool:
        """Whether a power loss took batch `bid` and either every replica of `tp` had its log
        cut by one (no replica kept the whole of its log: Kafka, which leaves flushing to the
        OS, may lose the batch whatever it elects) or power losses took it from every replica
        that held it (none kept it: one that never held it, down or out of the ISR when it was
        acknowledged, counts for nothing). Otherwise a replica that never lost power, or kept
        the batch through its power loss, held it, and the election lost it: a controller that
        elects only replicas holding every acknowledged batch keeps it (KIP-966's ELR and
        unclean-shutdown handling)."""
        if bid not in self.power_lost:
            return False
        return self.hosts.get(tp, set()) <= self.power_cut.get(tp, set()) or \
            self.held_by.get(bid, set()) <= self.power_lost_by.get(bid, set())

    def _lost_to_power(self, node: str, tp: str, rows: list) -> None:
        """`node`'s power loss took the batches of `rows` from its log of `tp`: note each, and
        which other replicas of `tp` hold it now (a power loss is rare: a scan is cheap)."""
        lost = {row[3] for row in rows}
        self.power_lost.update(lost)
        self.power_cut.setdefault(tp, set()).add(node)
        for bid in lost:
            self.power_lost_by.setdefault(bid, set()).add(node)
        for (other, other_tp), log in self.logs.items():
            if other_tp == tp and other != node:
                for bid in lost.intersection(row[3] for row in log.rows):
                    self.held_by.setdefault(bid, set()).add(other)

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        node = ev["node"]
        if kind == "append":
            for b in ev["batches"]:
                self.bid_topic[b["bid"]] = b["topic_id"]
                self.bid_base[b["bid"]] = b["base_offset"]
                log = self.logs.get((node, b["tp"]))
                if log is not None:
                    log.add((b["base_offset"], b["count"], b["leader_epoch"], b["bid"]))
        elif kind == "replicate":
            for tp, _tid, base, count, epoch, bid in ev["batches"]:
                log = self.logs.get((node, tp))
                if log is not None:
                    log.add((base, count, epoch, bid))
        elif kind == "hw":
            for tp, _tid, hw, _epoch in ev["hws"]:
                log = self.logs.get((node, tp))
                if log is not None:
                    log.hw = hw
        elif kind == "truncate":
            log = self.logs.get((node, ev["tp"]))
            if log is not None:
                if ev["reason"] == "power_loss":
                    self._lost_to_power(node, ev["tp"], log.rows_between(ev["to_offset"], 1 << 62))
                log.truncate(ev["to_offset"])
        elif kind == "log_start":
            log = self.logs.get((node, ev["tp"]))
            if log is not None:
                log.drop_below(ev["log_start_offset"])
        elif kind == "log_created":
            self.logs[(node, ev["tp"])] = ReplicaLog(ev["topic_id"], ev["seq"])
            self.hosts.setdefault(ev["tp"], set()).add(node)
        elif kind == "log_deleted":
            self.logs.pop((node, ev["tp"]), None)
