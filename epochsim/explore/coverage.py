"""Which protocol situations a search reached, folded from run traces.

Contract: `RunFold` reads one run's events in order and records
- cells `request/relation/role`: each delivered request of kind LeaderAndIsr, StopReplica,
  UpdateMetadata, Fetch, Produce (and each MetadataResponse, as `Metadata`), per partition,
  with the relation of the epoch it carries (what its sender knew, for clients and followers)
  to the receiver's own leader epoch (`older`, `equal`, `newer`) and the receiver's role for
  that partition when it arrived (`leader`, `follower`, `none`);
- fault kinds fired (and those that found nothing to act on);
- named situations (elections, truncations, KIP-951 hints applied, reordered deliveries,
  retried batches that were already appended, produce errors by name...).
`Coverage` adds runs up (cells and situations count runs that reached them) and answers
whether the situation an invariant guards was ever reached (`RELEVANT`). It reads trace
events only, in the vocabulary of `sim.kafka.vocab`.
"""

from __future__ import annotations

from collections import Counter

from sim.kafka.vocab import ERROR_NAMES

REQUESTS = ("LeaderAndIsr", "StopReplica", "UpdateMetadata", "Fetch", "Produce", "Metadata")
RELATIONS = ("older", "equal", "newer")
ROLES = ("leader", "follower", "none")
CELLS = tuple(f"{r}/{rel}/{role}" for r in REQUESTS for rel in RELATIONS for role in ROLES)

# invariant -> (the situation it guards, in words; cells or situations, any of which counts)
RELEVANT: dict[str, tuple[str, tuple]] = {
    "stop_replica_out_of_order": ("a StopReplica older than the receiver's leader epoch was "
                                  "delivered", ("StopReplica/older/*",)),
    "stray_replica": ("a StopReplica at the receiver's own leader epoch was delivered "
                      "(a cancelled reassignment)", ("StopReplica/equal/*",)),
    "stale_leader_append": ("a Produce reached a leader that was behind the epoch its sender "
                            "knew", ("Produce/newer/leader",)),
    "leader_epoch_monotonic": ("a LeaderAndIsr older than the receiver's epoch was delivered",
                               ("LeaderAndIsr/older/*",)),
    "single_leader_per_epoch": ("a LeaderAndIsr at the receiver's own epoch was delivered",
                                ("LeaderAndIsr/equal/*",)),
    "log_divergence": ("a leader was demoted while it led", ("LeaderAndIsr/newer/leader",)),
    "acked_write_lost": ("a leader was demoted while it led", ("LeaderAndIsr/newer/leader",)),
    "high_watermark_monotonic": ("a follower's Fetch requests reached the leader out of order",
                                 ("situation:reordered Fetch",)),
    "client_leader_epoch_regression": ("a client received metadata older than it knew",
                                       ("Metadata/older/none",)),
    "leader_hint_misapplied": ("a Produce reached a broker that does not lead the partition, "
                               "where KIP-951 answers with a hint",
                               ("Produce/*/none", "Produce/*/follower", "Produce/older/*")),
    "duplicate_append": ("a batch was retried after its first attempt had been appended",
                         ("situation:retry of an appended batch",)),
    "out_of_order_append": ("a batch was retried after its first attempt had been appended",
                            ("situation:retry of an appended batch",)),
    "spurious_out_of_order_sequence": ("a broker answered OUT_OF_ORDER_SEQUENCE_NUMBER or "
                                       "UNKNOWN_PRODUCER_ID",
                                       ("situation:produce error OUT_OF_ORDER_SEQUENCE_NUMBER",
                                        "situation:produce error UNKNOWN_PRODUCER_ID")),
    "unreported_data_loss": ("a broker answered UNKNOWN_PRODUCER_ID",
                             ("situation:produce error UNKNOWN_PRODUCER_ID",)),
    "idempotence_mode_violated": ("a producer asked for requested idempotence",
                                  ("situation:idempotence requested",)),
    "consumer_skipped_record": ("a replica truncated its log, or an unclean election gave the "
                                "partition another log (a consumer may have read what it "
                                "lacks)", ("situation:follower truncated",
                                           "situation:unclean election")),
    "produce_stalled_after_heal": ("a partition's leader changed while a producer wrote to it",
                                   ("situation:leader election",)),
    "consume_stalled_after_heal": ("a consumer's Fetch failed (its leader moved or was down)",
                                   ("situation:consumer fetch error",)),
    "under_replicated_after_heal": ("an AlterPartition was lost (the controller it went to was "
                                    "down, or a link lost it)", ("situation:AlterPartition lost",)),
}


def election_outside_isr(isrs: dict, ev: dict) -> bool:
    """Fold a `partition_state` event into `isrs` (tp -> the ISR the controller last wrote)
    and say whether it elected a leader from outside the ISR before it (an unclean election)."""
    before = isrs.get(ev["tp"])
    isrs[ev["tp"]] = tuple(ev.get("isr", ()))
    return (ev["reason"].startswith("elect") and before is not None and ev["leader"] >= 0
            and ev["leader"] not in before)


def relation(request_epoch: int, local_epoch: int) -> str:
    if request_epoch < local_epoch:
        return "older"
    return "equal" if request_epoch == local_epoch else "newer"


class RunFold:
    """The coverage of one run; feed it every event in trace order."""

    def __init__(self):
        self.cells: Counter = Counter()
        self.faults: Counter = Counter()
        self.situations: Counter = Counter()
        self._replicas: dict[str, dict] = {}  # node -> tp -> (role, leader_epoch, leader)
        self._known: dict[str, dict] = {}  # client -> tp -> (leader, leader_epoch)
        self._pending: dict[int, tuple] = {}  # mid -> (request, [(tp, epoch)])
        self._kind_of: dict[int, str] = {}
        self._last_mid: dict[tuple, int] = {}
        self._appended: set = set()
        self._fault_label: dict[int, str] = {}
        self._isr: dict[str, tuple] = {}  # tp -> the ISR the controller last wrote

    def step(self, ev: dict) -> None:
        handler = _HANDLERS.get(ev["kind"])
        if handler is not None:
            handler(self, ev)

    # -- requests --------------------------------------------------------------------------
    def _cell(self, request: str, req_epoch: int, node: str, tp: str) -> None:
        role, local, _leader = self._replicas.get(node, {}).get(tp, ("none", -1, -1))
        self.cells[f"{request}/{relation(req_epoch, local)}/{role}"] += 1

    def on_send(self, ev: dict) -> None:
        mid, msg, src = ev["mid"], ev["msg"], ev["node"]
        self._kind_of[mid] = msg
        if msg == "LeaderAndIsr":
            parts = [(tp, epoch) for tp, _leader, epoch in ev["parts"]]
        elif msg == "Produce":
            known = self._known.get(src, {})
            parts = [(tp, known.get(tp, (-1, wire))[1]) for tp, _bid, wire in ev["parts"]]
        elif msg == "Fetch":
            parts = self._fetched(src, ev["dst"])
        elif msg == "MetadataResponse":
            parts = [(tp, epoch) for tp, _leader, epoch in ev["parts"]]
        else:
            return
        self._pending[mid] = ("Metadata" if msg == "MetadataResponse" else msg, parts)

    def _fetched(self, src: str, dst: str) -> list:
        """What a follower (or consumer) fetching from `dst` asks for, with its epochs."""
        leader = int(dst[1:]) if dst[1:].isdigit() else -1
        if src in self._replicas:
            return [(tp, epoch) for tp, (role, epoch, led_by) in sorted(self._replicas[src].items())
                    if role == "follower" and led_by == leader]
        return [(tp, epoch) for tp, (led_by, epoch) in sorted(self._known.get(src, {}).items())
                if led_by == leader]

    def on_deliver(self, ev: dict) -> None:
        mid, node = ev["mid"], ev["node"]
        link = (ev["src"], node)
        if mid < self._last_mid.get(link, -1):
            self.situations[f"reordered {self._kind_of.get(mid, '?')}"] += 1
        else:
            self._last_mid[link] = mid
        pending = self._pending.pop(mid, None)
        if pending is None:
            return
        request, parts = pending
        for tp, epoch in parts:
            if request == "Metadata":
                local = self._known.get(node, {}).get(tp, (-1, -1))[1]
                self.cells[f"Metadata/{relation(epoch, local)}/none"] += 1
            else:
                self._cell(request, epoch, node, tp)

    def on_stop_replica(self, ev: dict) -> None:
        self._cell("StopReplica", ev["issued_epoch"], ev["node"], ev["tp"])
        replicas = self._replicas.get(ev["node"], {})
        if ev["result"] == "fenced":
            self.situations["StopReplica fenced"] += 1
        elif ev["delete"]:
            replicas.pop(ev["tp"], None)
        elif ev["tp"] in replicas:
            _role, epoch, leader = replicas[ev["tp"]]
            replicas[ev["tp"]] = ("none", epoch, leader)

    def on_metadata(self, ev: dict) -> None:
        for tp, _leader, epoch in ev["changes"]:
            if epoch >= 0:
                self._cell("UpdateMetadata", epoch, ev["node"], tp)

    # -- state the relations are judged against --------------------------------------------
    def on_replica_state(self, ev: dict) -> None:
        self._replicas.setdefault(ev["node"], {})[ev["tp"]] = (ev["role"], ev["leader_epoch"],
                                                                ev["leader"])

    def on_log_deleted(self, ev: dict) -> None:
        self._replicas.get(ev["node"], {}).pop(ev["tp"], None)

    def on_crash(self, ev: dict) -> None:
        self._replicas.pop(ev["node"], None)
        self._known.pop(ev["node"], None)

    def on_client_epoch(self, ev: dict) -> None:
        self._known.setdefault(ev["node"], {})[ev["tp"]] = (ev["leader"], ev["leader_epoch"])
        if ev.get("source") == "hint":
            self.situations["hint applied"] += 1

    # -- situations ---------------------------------------------------------------------------
    def on_fault(self, ev: dict) -> None:
        label = ev["action"]
        if label == "rule":
            label = f"rule:{ev.get('params', {}).get('rule', '?')}"
        self._fault_label[ev["step"]] = label
        skipped = str(ev.get("outcome", "")).startswith("skipped")
        self.faults[f"{label} (skipped)" if skipped else label] += 1

    def on_fault_outcome(self, ev: dict) -> None:
        if not str(ev["outcome"]).startswith("rule "):
            self.faults[f"{self._fault_label.get(ev['step'], '?')} (no effect)"] += 1

    def on_append(self, ev: dict) -> None:
        for b in ev["batches"]:
            self._appended.add(b["bid"])

    def on_produce_error(self, ev: dict) -> None:
        if ev["bid"] in self._appended:
            self.situations["retry of an appended batch"] += 1

    def on_produce_result(self, ev: dict) -> None:
        self.situations[f"produce error {ERROR_NAMES.get(ev['error'], ev['error'])}"] += 1

    def on_partition_state(self, ev: dict) -> None:
        reason = ev["reason"]
        unclean = election_outside_isr(self._isr, ev)
        if reason.startswith("elect"):
            self.situations["leader election"] += 1
            if unclean:
                self.situations["unclean election"] += 1
        elif reason in ("reassign_start", "reassign_complete", "reassign_cancel"):
            self.situations[reason.replace("_", " ")] += 1

    def on_client_config(self, ev: dict) -> None:
        self.situations[f"idempotence {ev.get('idempotence')}"] += 1

    def on_fetch_error(self, ev: dict) -> None:
        self.situations["consumer fetch error"] += 1

    def on_drop(self, ev: dict) -> None:
        if ev.get("msg") in ("AlterPartition", "Produce"):
            self.situations[f"{ev['msg']} lost"] += 1

    def on_simple(self, ev: dict) -> None:
        self.situations[_SIMPLE[ev["kind"]]] += 1


_SIMPLE = {"truncate": "follower truncated", "dup_append": "duplicate caught by the dedup cache",
           "metadata_rejected": "stale metadata rejected by a client", "hold": "message held",
           "stale_controller": "request of a stale controller fenced",
           "controller_elected": "controller elected", "lai_rejected": "LeaderAndIsr rejected"}
_HANDLERS = {
    "send": RunFold.on_send, "deliver": RunFold.on_deliver,
    "stop_replica": RunFold.on_stop_replica, "metadata": RunFold.on_metadata,
    "replica_state": RunFold.on_replica_state, "log_deleted": RunFold.on_log_deleted,
    "crash": RunFold.on_crash, "client_epoch": RunFold.on_client_epoch,
    "fault": RunFold.on_fault, "fault_outcome": RunFold.on_fault_outcome,
    "append": RunFold.on_append, "produce_error": RunFold.on_produce_error,
    "produce_result": RunFold.on_produce_result, "partition_state": RunFold.on_partition_state,
    "client_config": RunFold.on_client_config, "drop": RunFold.on_drop,
    "fetch_error": RunFold.on_fetch_error,
    **{k: RunFold.on_simple for k in _SIMPLE},
}


class Coverage:
    """Coverage summed over runs: cells and situations count the runs that reached them."""

    def __init__(self):
        self.runs = 0
        self.cells: Counter = Counter()
        self.situations: Counter = Counter()
        self.faults: Counter = Counter()
        self.judged: Counter = Counter()  # after-heal rule -> runs in which it judged something

    def add_events(self, events, judged: dict | None = None, also: tuple = ()) -> RunFold:
        """Fold one run's events (into the folds `also` as well, each event once); `judged`
        is its verdict's `liveness_judged` metric. Returns the run's own fold."""
        fold = RunFold()
        steps = (fold.step,) + tuple(other.step for other in also)
        for ev in events:
            for fold_step in steps:
                fold_step(ev)
        self.add(fold)
        for rule, n in (judged or {}).items():
            self.judged[rule] += n > 0  # a rule that never judged stays listed, at 0
        return fold

    def add(self, fold: RunFold) -> None:
        self.runs += 1
        self.cells.update(set(fold.cells))
        self.situations.update(set(fold.situations))
        self.faults.update(fold.faults)

    def reached(self, pattern: str) -> int:
        """Runs that reached a cell pattern (`*` matches any part) or `situation:<name>`."""
        if pattern.startswith("situation:"):
            return self.situations.get(pattern[len("situation:"):], 0)
        want = pattern.split("/")
        return max((n for cell, n in self.cells.items()
                    if all(w in ("*", part) for w, part in zip(want, cell.split("/")))), default=0)

    def relevance(self, invariant: str | None) -> dict | None:
        """Whether the situation `invariant` guards was reached, or None if none is known."""
        if invariant not in RELEVANT:
            return None
        words, patterns = RELEVANT[invariant]
        return {"invariant": invariant, "situation": words,
                "runs": max(self.reached(p) for p in patterns), "patterns": list(patterns)}

    def to_json(self, invariant: str | None = None) -> dict:
        return {"runs_folded": self.runs, "cells_reached": len(self.cells),
                "cells_total": len(CELLS),
                "cells": {c: self.cells[c] for c in CELLS if self.cells[c]},
                "faults": dict(sorted(self.faults.items())),
                "situations": dict(sorted(self.situations.items())),
                "liveness_judged": dict(sorted(self.judged.items())),
                "relevant": self.relevance(invariant)}


def summary(cov: Coverage, invariant: str | None) -> list[str]:
    """A short printable summary: the request matrix, faults fired, the relevant situation."""
    lines = [f"coverage over {cov.runs} runs: {len(cov.cells)}/{len(CELLS)} request situations "
             "reached (runs per relation; L leader, F follower, N none = receiver's role)"]
    for request in REQUESTS:
        parts = []
        for rel in RELATIONS:
            counts = [cov.cells.get(f"{request}/{rel}/{role}", 0) for role in ROLES]
            parts.append(f"{rel} " + " ".join(f"{r[0].upper()}{n}" for r, n in zip(ROLES, counts)))
        lines.append(f"  {request:<15}" + "  |  ".join(parts))
    fired = ", ".join(f"{k} {v}" for k, v in sorted(cov.faults.items())) or "none"
    lines.append(f"  faults fired: {fired}")
    if cov.judged:
        lines.append("  liveness rules judged something in: " + ", ".join(
            f"{rule} {n} runs" for rule, n in sorted(cov.judged.items())))
        if invariant in cov.judged and not cov.judged[invariant]:
            lines.append(f"  NOT JUDGED: {invariant} judged nothing in any run (too short a settle "
                         "window, or client timeouts too long for it); the search says nothing "
                         "about it")
    rel = cov.relevance(invariant)
    if rel is not None:
        if rel["runs"]:
            lines.append(f"  relevant to {invariant}: {rel['situation']}: reached in "
                         f"{rel['runs']} runs")
        else:
            lines.append(f"  NOT REACHED: no run got to the situation {invariant} guards "
                         f"({rel['situation']}); the search says nothing about it")
    return lines
