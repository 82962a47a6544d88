"""Run metrics (not violations), folded from the trace like invariants.

Contract: `Metrics.result(ctx)` returns a flat JSON dict that sweeps aggregate: produce latency
percentiles (ms), acknowledgement and failure counts, retries by error, appends accepted at an
epoch older than the controller's, acks=1 batches lost, duplicates written, sends completed
without an offset, partition-time without a live leader, messages and faults; in a KRaft run
also each broker's metadata lag (`invariants.kraft.MetadataLag`).
"""

from __future__ import annotations

from invariants.kraft import MetadataLag
from invariants.replication import lost_batches

METRIC_KINDS = frozenset({"send", "drop", "ack", "batch_grown", "produce_failed", "produce_error", "append", "fault",
                          "stale_controller", "stop_replica", "controller_elected",
                          "partition_state"}) | MetadataLag.KINDS


def percentile(sorted_values: list, q: float):
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def group_samples(done_us: int, first_latency_us: int, joins) -> list[tuple[int, int]]:
    """(created_us, latency_us) of each record group of a batch that completed at `done_us`
    (acknowledged, or taken by a consumer): its first records, `first_latency_us` old, then
    one group per `batch_grown` time in `joins`, timed from when it joined. A group is one
    linger.ms of one partition's records, so groups hold the same number of records (within
    one) and percentiles over groups are percentiles over records."""
    out = [(done_us - first_latency_us, first_latency_us)]
    out.extend((t, done_us - t) for t in joins)
    return out


def group_latencies(ack: dict, joined: dict) -> list[int]:
    """The latencies of an acknowledged batch's record groups (`group_samples`). Pops the
    batch's entry of `joined` (bid -> join times)."""
    return [lat for _created, lat in group_samples(ack["t"], ack["latency_us"],
                                                   joined.pop(ack["bid"], ()))]


class Metrics:
    def __init__(self):
        self.latencies_us: list[int] = []  # one per record group (see `group_latencies`)
        self.joined: dict[str, list[int]] = {}  # bid -> when later record groups joined it
        self.acks1: list[tuple] = []
        self.acks_all: list[tuple] = []
        self.counts: dict[str, int] = {"acked": 0, "acked_records": 0, "failed": 0, "retries": 0,
                                       "sends": 0, "drops": 0, "faults": 0, "stale_epoch_appends": 0,
                                       "no_offset_acks": 0, "stale_controller_rejections": 0,
                                       "stop_replica_fenced": 0, "controller_elections": 0}
        self.errors: dict[str, int] = {}
        self.leaderless_since: dict[str, int] = {}
        self.leaderless_us = 0
        self.batches_appended: dict[str, int] = {}
        self.metadata_lag = MetadataLag()  # KRaft runs only

    def step(self, ev: dict, truth) -> None:
        kind = ev["kind"]
        c = self.counts
        if kind in MetadataLag.KINDS:
            self.metadata_lag.step(ev)
            return
        if kind == "send":
            c["sends"] += 1
        elif kind == "drop":
            c["drops"] += 1
        elif kind == "ack":
            c["acked"] += 1
            c["acked_records"] += ev["count"]  # a batch that grew acks every record group
            self.latencies_us.extend(group_latencies(ev, self.joined))
            c["no_offset_acks"] += not ev["has_offset"]
            item = (ev["tp"], ev["bid"], ev["base_offset"], ev["seq"], ev["t"])
            if ev["acks"] == 1:
                self.acks1.append(item)
            elif ev["acks"] == "all":
                self.acks_all.append(item)
        elif kind == "batch_grown":
            self.joined.setdefault(ev["bid"], []).append(ev["t"])
        elif kind == "produce_failed":
            c["failed"] += 1
            self.joined.pop(ev["bid"], None)
            name = ev.get("error_name", str(ev["error"]))
            self.errors[f"failed:{name}"] = self.errors.get(f"failed:{name}", 0) + 1
        elif kind == "produce_error":
            c["retries"] += 1
            key = f"retry:{ev['error']}"
            self.errors[key] = self.errors.get(key, 0) + 1
        elif kind == "append":
            for b in ev["batches"]:
                st = truth.parts.get(b["tp"])
                if st is not None and b["leader_epoch"] < st["leader_epoch"]:
                    c["stale_epoch_appends"] += 1
                self.batches_appended[b["bid"]] = self.batches_appended.get(b["bid"], 0) + 1
        elif kind == "fault":
            c["faults"] += 1
        elif kind == "stale_controller":
            c["stale_controller_rejections"] += 1
        elif kind == "stop_replica" and ev["result"] == "fenced":
            c["stop_replica_fenced"] += 1
        elif kind == "controller_elected":
            c["controller_elections"] += 1
        elif kind == "partition_state":
            self._leaderless(ev)

    def _leaderless(self, ev: dict) -> None:
        tp = ev["tp"]
        if ev["leader"] < 0:
            self.leaderless_since.setdefault(tp, ev["t"])
        elif tp in self.leaderless_since:
            self.leaderless_us += ev["t"] - self.leaderless_since.pop(tp)

    def result(self, ctx) -> dict:
        lat = sorted(self.latencies_us)
        end_t = ctx.end_t
        leaderless = self.leaderless_us + sum(end_t - t for t in self.leaderless_since.values())
        out = dict(self.counts)
        for name, q in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999), ("max", 1.0)):
            v = percentile(lat, q)
            out[f"produce_latency_{name}_ms"] = None if v is None else round(v / 1000.0, 3)
        out["acks1_lost"] = len(lost_batches(ctx, self.acks1))
        power_lost = ctx.logs.power_lost
        out["acked_lost_to_power_loss"] = sum(1 for item in lost_batches(ctx, self.acks_all)
                                              if item[1] in power_lost) if power_lost else 0
        idem = ctx.idem.seq_of
        out["duplicates_non_idempotent"] = sum(n - 1 for bid, n in self.batches_appended.items()
                                              if n > 1 and bid not in idem)
        out["leaderless_partition_ms"] = round(leaderless / 1000.0, 3)
        out["errors"] = dict(sorted(self.errors.items()))
        out.update(self.metadata_lag.result())
        return out
