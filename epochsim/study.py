"""The KIP-951 leader-discovery latency study behind `epochsim study` (docs/kip-951-study.md).

Contract: `study_jobs(scenarios, seeds)` crosses each scenario with the three discovery modes
(`MODES`) and `seeds` seeds starting at the scenario's own `seed`; `run_study(jobs, workers)`
runs them (over a process pool when `workers > 1`) and returns one result per run in job
order. A run sets `protocol.leader_discovery` to its mode and makes every client follow it
(brokers send KIP-951 hints only in `kip951` mode, as a 3.7 broker to a 3.7 client). Latency
comes from the trace alone: `ack` events (produce latency, batch creation to acknowledgement)
and `consume` events (end-to-end latency), for batches created after `WARMUP_US`, so start-up
metadata discovery is left out. `summarise` averages each percentile over the seeds, as the
KIP averaged its three runs; `format_table` prints modes side by side with their ratios in
fixed formatting, so the same seeds give the same text. No wall clock enters a result.
`epochsim.study_plot` draws the pictures: per scenario, the three modes in one figure.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import scenarios
from epochsim.runner import header_for, schedule_for
from invariants.metrics import group_samples, percentile
from invariants.registry import Monitor
from sim.core.trace import Trace
from sim.kafka.cluster import Cluster
from sim.kafka.faults import ACTIONS

MODES = ("metadata", "kip951", "refresh_no_backoff")
RATIOS = (("kip951", "metadata"), ("refresh_no_backoff", "metadata"),
          ("kip951", "refresh_no_backoff"))
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))
WARMUP_US = 1_500_000  # the study scenarios start their clients at 1 s
BUCKET_US = 20_000  # time resolution of the latency-over-time series
# the fault actions a latency plot marks, with a line of their colour (`FaultAction.mark_colour`)
MARKED = {name: a.mark_colour for name, a in ACTIONS.items() if a.mark_colour}
STUDY_DIR = Path(scenarios.__file__).resolve().parent / "study"


def default_scenarios() -> list[str]:
    return sorted(str(p) for p in STUDY_DIR.glob("*.toml"))


def with_mode(scenario, mode: str):
    """`scenario` with `mode` as the protocol's discovery mode, followed by every client."""
    o = scenario.options
    options = replace(o, protocol=replace(o.protocol, leader_discovery=mode),
                      producers=tuple(replace(p, leader_discovery="") for p in o.producers),
                      consumers=tuple(replace(c, leader_discovery="") for c in o.consumers))
    return replace(scenario, options=options)


def study_jobs(scenario_list: list, seeds: int, check: bool = False,
               warmup_us: int = WARMUP_US) -> list[tuple]:
    """(scenario, mode, seed, check, warmup_us) for each run; batches created before
    `warmup_us` are not measured (a KRaft variant's timeline starts later,
    `epochsim.study_kraft.warmup_us`)."""
    return [(sc, mode, sc.seed + k, check, warmup_us) for sc in scenario_list for mode in MODES
            for k in range(seeds)]


def run_study(jobs: list[tuple], workers: int = 1, progress=None) -> list[dict]:
    if workers <= 1:
        results = []
        for job in jobs:
            results.append(run_arm(job))
            if progress:
                progress(len(results), len(jobs))
        return results
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        results = []
        for result in pool.map(run_arm, jobs):
            results.append(result)
            if progress:
                progress(len(results), len(jobs))
        return results


# -- one run -------------------------------------------------------------------------------
class ApplyWaits:
    """KRaft runs: how long each metadata record committed after the warm-up waited before
    each broker applied it (`metadata_commit` to `metadata_apply`, µs), the first time it
    applied it (a restart's replay of the log is not lag). Records of the cluster's start are
    left out, as start-up batches are from the latencies."""

    KINDS = frozenset({"metadata_commit", "metadata_apply"})

    def __init__(self, warmup_us: int):
        self.warmup_us = warmup_us
        self.committed_at: dict[int, int] = {}  # offset -> when it first committed
        self.waits: dict[str, list[int]] = {}
        self.high: dict[str, int] = {}  # per broker, the highest metadata offset it reached

    def __eq__(self, other) -> bool:  # probes compare by what they folded
        return isinstance(other, ApplyWaits) and vars(self) == vars(other)

    __hash__ = None  # mutable: never a dict key

    def step(self, ev: dict) -> None:
        if ev["kind"] == "metadata_commit":
            for offset, _epoch, _record in ev["records"]:
                self.committed_at.setdefault(offset, ev["t"])
            return
        node = ev["node"]
        waits = self.waits.setdefault(node, [])
        # a restarted broker replays the log from 0: records it applied before are no lag
        first = max(ev["from_offset"], self.high.get(node, 0))
        for offset in range(first, ev["to_offset"]):
            t = self.committed_at.get(offset)
            if t is not None and t >= self.warmup_us:
                waits.append(ev["t"] - t)
        self.high[node] = max(self.high.get(node, 0), ev["to_offset"])

    def result(self) -> dict:
        """{} in ZooKeeper mode; else {broker: {"p50_ms", "max_ms", "records"}} (None
        without a measured record)."""
        if not self.committed_at:
            return {}
        out = {}
        for node in sorted(self.waits, key=lambda n: (len(n), n)):
            w = sorted(self.waits[node])
            out[node] = {"p50_ms": round(w[len(w) // 2] / 1000, 3) if w else None,
                         "max_ms": round(w[-1] / 1000, 3) if w else None, "records": len(w)}
        return out


class Probe:
    """Folds what the study needs out of a run's events as they are recorded."""

    KINDS = frozenset({"ack", "batch", "batch_grown", "consume", "send", "produce_error", "fetch_error",
                       "produce_failed", "client_epoch", "fault", "metadata_rejected"}
                      ) | ApplyWaits.KINDS  # what `step` reads

    def __init__(self, warmup_us: int = WARMUP_US):
        self.warmup_us = warmup_us
        self.lag = ApplyWaits(warmup_us)  # KRaft runs: each broker's commit-to-apply wait
        self.stale_metadata = 0  # leaders a client refused as older than the one it knew
        self.produce: list[tuple[int, int]] = []  # (created_us, latency_us)
        self.e2e: list[tuple[int, int]] = []
        self.faults: list[list] = []
        self.counts = {"produce_errors": 0, "fetch_errors": 0, "metadata_requests": 0,
                       "hints_applied": 0, "produce_failed": 0, "follower_unknown_epoch": 0,
                       "unfinished": 0}
        self.open: set[str] = set()  # measured batches neither acked nor failed yet
        self.joined: dict[str, list[int]] = {}  # bid -> when later record groups joined it

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind in ApplyWaits.KINDS:
            self.lag.step(ev)
        elif kind == "metadata_rejected":
            self.stale_metadata += 1
        elif kind == "ack":
            # one sample per record group: the batch's first records, then each that joined it
            self.produce.extend(group_samples(ev["t"], ev["latency_us"],
                                              self.joined.get(ev["bid"], ())))
            self.open.discard(ev["bid"])
        elif kind == "batch":
            if ev["created_us"] >= self.warmup_us:
                self.open.add(ev["bid"])
        elif kind == "batch_grown":
            self.joined.setdefault(ev["bid"], []).append(ev["t"])
        elif kind == "consume":
            for e2e, (_base, bid) in zip(ev["end_to_end_us"], ev["read"]):
                self.e2e.extend(group_samples(ev["t"], e2e, self.joined.get(bid, ())))
        elif kind == "send":
            self._send(ev)
        elif kind == "produce_error":
            self.counts["produce_errors"] += 1
        elif kind == "fetch_error":
            self.counts["fetch_errors"] += 1
        elif kind == "produce_failed":
            self.counts["produce_failed"] += 1
            self.open.discard(ev["bid"])
        elif kind == "client_epoch" and ev["source"] == "hint":
            self.counts["hints_applied"] += 1
        elif kind == "fault" and ev["action"] in MARKED:
            self.faults.append([ev["t"], ev["action"], ev.get("resolved")])

    def _send(self, ev: dict) -> None:
        if ev["msg"] == "Metadata":
            self.counts["metadata_requests"] += 1
        elif ev["msg"] == "FetchResponse" and ev["dst"].startswith("b"):
            # a follower that knew the new epoch before its leader: replica.fetch.backoff.ms
            self.counts["follower_unknown_epoch"] += sum(e[1] == 75 for e in ev.get("errs", ()))


def run_arm(job: tuple) -> dict:
    """Run one (scenario, mode, seed[, check]) and return its JSON-native result."""
    scenario, mode, seed = job[:3]
    check = len(job) > 3 and job[3]
    warmup = job[4] if len(job) > 4 else WARMUP_US
    sc = with_mode(scenario, mode)
    schedule = schedule_for(sc, seed)
    trace = Trace(header_for(sc, seed, schedule), None)
    probe = Probe(warmup)
    trace.observe(probe.step, Probe.KINDS)
    monitor = Monitor(trace.header, sc.invariants) if check else None
    if monitor:
        trace.observe(monitor.step, monitor.kinds)
    Cluster(sc.options, schedule, seed, trace).run()
    # batches still open at the end are missing from the percentiles: count them, never hide them
    probe.counts["unfinished"] = len(probe.open)
    violated = sorted({v.invariant for v in monitor.finish()[0]}) if monitor else None
    out = {"scenario": sc.name, "mode": mode, "seed": seed, "trace_digest": trace.digest(),
           "produce": latency_summary(probe.produce, warmup),
           "e2e": latency_summary(probe.e2e, warmup),
           "counts": probe.counts, "violated": violated, "faults": probe.faults,
           "series": {"produce": series(probe.produce), "e2e": series(probe.e2e)}}
    lag = probe.lag.result()
    if lag:  # KRaft only: a ZooKeeper-mode result keeps the shape it always had
        out["warmup_us"] = warmup
        out["kraft"] = {"apply_wait": lag, "stale_metadata": probe.stale_metadata}
    return out


def _measured(samples: list[tuple[int, int]], warmup_us: int) -> list[int]:
    return sorted(lat for created, lat in samples if created >= warmup_us)


def latency_summary(samples: list[tuple[int, int]], warmup_us: int = WARMUP_US) -> dict | None:
    """Percentiles (ms) of the samples created after the warm-up, or None if there are none."""
    values = _measured(samples, warmup_us)
    if not values:
        return None
    out = {name: round(percentile(values, q) / 1000.0, 3) for name, q in QUANTILES}
    out["n"] = len(values)
    return out


def series(samples: list[tuple[int, int]]) -> list[list]:
    """Per BUCKET_US of creation time: [bucket start (s), median (ms), max (ms)]."""
    buckets: dict[int, list[int]] = {}
    for created, lat in samples:
        buckets.setdefault(created // BUCKET_US, []).append(lat)
    out = []
    for key in sorted(buckets):
        values = sorted(buckets[key])
        out.append([key * BUCKET_US / 1e6, values[len(values) // 2] / 1000.0, values[-1] / 1000.0])
    return out


# -- the comparison table --------------------------------------------------------------------
def summarise(results: list[dict]) -> list[dict]:
    """Rows (scenario, latency kind, metric) with the mean over seeds per mode."""
    order = list(dict.fromkeys(r["scenario"] for r in results))
    rows = []
    for name in order:
        mine = [r for r in results if r["scenario"] == name]
        for kind in ("produce", "e2e"):
            if not all(r[kind] for r in mine):
                continue
            for metric, _ in QUANTILES:
                means = {}
                for mode in MODES:
                    values = [r[kind][metric] for r in mine if r["mode"] == mode]
                    means[mode] = sum(values) / len(values) if values else None
                rows.append({"scenario": name, "latency": kind, "metric": metric, "ms": means})
    return rows


def _warmups(results: list[dict]) -> str:
    """The warm-up(s) of the results, in words: "1500 ms", or one per scenario when they differ
    (a KRaft variant's timeline starts later)."""
    per = {r["scenario"]: r.get("warmup_us", WARMUP_US) for r in results}
    if len(set(per.values())) <= 1:
        return f"{next(iter(per.values()), WARMUP_US) // 1000} ms"
    return ", ".join(f"{us // 1000} ms ({name})" for name, us in per.items())


def _ratio(a, b) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}"


def format_table(results: list[dict]) -> str:
    rows = summarise(results)
    seeds = sorted({r["seed"] for r in results})
    width = max([len(r["scenario"]) for r in rows] + [8])
    ratio_names = [f"{a}/{b}".replace("refresh_no_backoff", "refresh") for a, b in RATIOS]
    lines = [f"KIP-951 leader discovery: latency in ms, mean over {len(seeds)} seed(s) "
             f"({', '.join(map(str, seeds))}); batches created after {_warmups(results)}",
             f"{'scenario':<{width}}  {'latency':<7} {'metric':<6}"
             + "".join(f"{m:>19}" for m in MODES) + "".join(f"{n:>18}" for n in ratio_names)]
    for row in rows:
        ms = row["ms"]
        cells = "".join(f"{ms[m]:>19.2f}" if ms[m] is not None else f"{'-':>19}" for m in MODES)
        ratios = "".join(f"{_ratio(ms[a], ms[b]):>18}" for a, b in RATIOS)
        lines.append(f"{row['scenario']:<{width}}  {row['latency']:<7} {row['metric']:<6}"
                     f"{cells}{ratios}")
    lines.append("")
    lines.append(format_counts(results, width))
    if any("kraft" in r for r in results):
        lines += ["", format_kraft(results, width)]
    return "\n".join(lines)


KRAFT_COLUMNS = ("stale_metadata", "apply_wait_p50_ms", "apply_wait_max_ms", "slowest_broker")


def format_kraft(results: list[dict], width: int) -> str:
    """KRaft runs only: per scenario and mode, how many leaders clients refused as older than
    the one they knew (`stale_metadata`: a Metadata answer or hint from a broker whose metadata
    lagged; sum over seeds), and how long committed metadata records waited before a broker
    applied them (commit to apply, records committed after the warm-up: the median of the
    brokers' medians, the largest maximum, and the broker that had it; over seeds)."""
    lines = [f"{'scenario':<{width}}  {'mode':<19}"
             + "".join(f"{k:>{len(k) + 2}}" for k in KRAFT_COLUMNS)]
    for name in dict.fromkeys(r["scenario"] for r in results):
        for mode in MODES:
            mine = [r["kraft"] for r in results if r["scenario"] == name and r["mode"] == mode
                    and "kraft" in r]
            if not mine:
                continue
            lags = [(b, v) for k in mine for b, v in k["apply_wait"].items()
                    if v["max_ms"] is not None]
            p50s = sorted(v["p50_ms"] for _, v in lags)
            worst = max(lags, key=lambda bv: (bv[1]["max_ms"], bv[0]), default=None)
            cells = [str(sum(k["stale_metadata"] for k in mine)),
                     f"{p50s[len(p50s) // 2]:.2f}" if p50s else "-",
                     f"{worst[1]['max_ms']:.2f}" if worst else "-", worst[0] if worst else "-"]
            lines.append(f"{name:<{width}}  {mode:<19}"
                         + "".join(f"{c:>{len(k) + 2}}" for c, k in zip(cells, KRAFT_COLUMNS)))
    return "\n".join(lines)


def format_counts(results: list[dict], width: int) -> str:
    """Per scenario and mode, the protocol work behind the latencies (sums over seeds)."""
    keys = ("acked", "unfinished", "produce_failed", "produce_errors", "metadata_requests",
            "hints_applied", "fetch_errors", "follower_unknown_epoch")
    lines = [f"{'scenario':<{width}}  {'mode':<19}" + "".join(f"{k:>{len(k) + 2}}" for k in keys)
             + f"{'violated':>10}"]
    for name in dict.fromkeys(r["scenario"] for r in results):
        for mode in MODES:
            mine = [r for r in results if r["scenario"] == name and r["mode"] == mode]
            sums = "".join(f"{sum(_count(r, k) for r in mine):>{len(k) + 2}}" for k in keys)
            checked = [r["violated"] for r in mine if r["violated"] is not None]
            violated = "-" if not checked else (",".join(sorted({v for vs in checked for v in vs}))
                                                or "none")
            lines.append(f"{name:<{width}}  {mode:<19}{sums}{violated:>10}")
    return "\n".join(lines)


def _count(result: dict, key: str) -> int:
    if key == "acked":  # measured batches acknowledged
        return result["produce"]["n"] if result["produce"] else 0
    return result["counts"][key]
