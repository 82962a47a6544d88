"""The KRaft metadata log as the reports show it: the committed high watermark over time, the
quorum's leaders and epochs, and each broker's applied metadata offset, so that how far behind
each broker is can be read at a glance.

Contract: `MetadataLogFold.step(ev)` folds a trace's events in order (`KINDS` are the ones it
reads); `finish(end_us)` returns a `MetadataLog`, empty (`bool(log)` false) for a ZooKeeper-mode
trace, which has none of these events. Series are step functions, lists of (t_us, value) sorted
by time: `high_watermark` (the committed high watermark, never decreasing: the largest any
quorum leader reported), `applied[broker]` (the broker's metadata offset, the next record it
will apply; None while it is down, 0 from its restart, when it replays the log from the start).
`leaders` holds `QuorumLeader` spans (voter, epoch, start_us, end_us): from `quorum_leader` to
its resignation, its crash or the next leader. `lag(broker)` is the broker's records behind the
high watermark over time; `summary()` one row per broker: its offset and the high watermark at
the end, the most records it was behind, its longest stretch behind (ms), and how long
committed records waited before it applied them (commit to apply, p50 and max, ms), the wait
`invariants.kraft.MetadataLag` reports in the verdict. It reads the trace vocabulary only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.kafka import vocab as V

KINDS = frozenset({V.QUORUM_LEADER, V.QUORUM_RESIGNED, V.METADATA_COMMIT, V.METADATA_APPLY,
                   V.CRASH, V.RESTART})


@dataclass(frozen=True)
class QuorumLeader:
    voter: str
    epoch: int
    start_us: int
    end_us: int


@dataclass
class MetadataLog:
    end_us: int = 0
    high_watermark: list = field(default_factory=list)  # [(t_us, hw)]
    applied: dict = field(default_factory=dict)  # broker -> [(t_us, offset | None)]
    leaders: list = field(default_factory=list)  # [QuorumLeader]
    waits: dict = field(default_factory=dict)  # broker -> sorted commit-to-apply waits, µs

    def __bool__(self) -> bool:
        return bool(self.high_watermark or self.applied or self.leaders)

    def brokers(self) -> list[str]:
        return sorted(self.applied, key=lambda n: (len(n), n))

    def lag(self, broker: str) -> list[tuple[int, int | None]]:
        """(t_us, records behind the committed high watermark) at every change; None while
        the broker is down."""
        out: list = []
        hw_i, hw, mine, offset = 0, 0, self.applied.get(broker, []), None
        times = sorted({t for t, _ in self.high_watermark} | {t for t, _ in mine})
        my_i = 0
        for t in times:
            while hw_i < len(self.high_watermark) and self.high_watermark[hw_i][0] <= t:
                hw = self.high_watermark[hw_i][1]
                hw_i += 1
            while my_i < len(mine) and mine[my_i][0] <= t:
                offset = mine[my_i][1]
                my_i += 1
            if my_i == 0:
                continue  # it has not applied anything yet: not behind, not started
            value = None if offset is None else max(0, hw - offset)
            if not out or out[-1][1] != value:
                out.append((t, value))
        return out

    def summary(self) -> list[dict]:
        """One row per broker (see the module's contract)."""
        hw_end = self.high_watermark[-1][1] if self.high_watermark else 0
        rows = []
        for broker in self.brokers():
            lag = self.lag(broker)
            waits = self.waits.get(broker, [])
            final = self.applied[broker][-1][1]
            rows.append({"broker": broker, "applied_offset": final, "high_watermark": hw_end,
                         "max_records_behind": max((v for _, v in lag if v), default=0),
                         "longest_behind_ms": round(_longest_behind(lag, self.end_us) / 1000, 3),
                         "wait_p50_ms": _ms(waits[len(waits) // 2]) if waits else None,
                         "wait_max_ms": _ms(waits[-1]) if waits else None})
        return rows


def _ms(us: int) -> float:
    return round(us / 1000, 3)


def _longest_behind(lag: list, end_us: int) -> int:
    """The longest stretch (µs) in which the lag stayed above 0 (down counts as behind)."""
    longest, since = 0, None
    for t, value in lag + [(end_us, 0)]:
        if value != 0 and since is None:
            since = t
        elif value == 0 and since is not None:
            longest, since = max(longest, t - since), None
    return longest


class MetadataLogFold:
    """Folds KRaft events one at a time; `finish(end_us)` returns the `MetadataLog`."""

    def __init__(self) -> None:
        self.log = MetadataLog()
        self.hw = 0
        self.leader: tuple[str, int, int] | None = None  # (voter, epoch, since)
        self.committed_at: dict[int, int] = {}

    def step(self, ev: dict) -> None:
        kind, t = ev["kind"], ev["t"]
        if kind == V.QUORUM_LEADER:
            self._close_leader(t)
            self.leader = (ev["node"], ev["epoch"], t)
            self._set_hw(t, ev.get("high_watermark", 0))
        elif kind == V.QUORUM_RESIGNED or (kind == V.CRASH and self.leader
                                           and self.leader[0] == ev["node"]):
            if self.leader and self.leader[0] == ev["node"]:
                self._close_leader(t)
        elif kind == V.METADATA_COMMIT:
            for offset, _epoch, _record in ev["records"]:
                self.committed_at.setdefault(offset, t)
            self._set_hw(t, ev["high_watermark"])
        elif kind == V.METADATA_APPLY:
            self._applied(ev["node"], t, ev["to_offset"])
            waits = self.log.waits.setdefault(ev["node"], [])
            waits += [t - self.committed_at[o] for o in range(ev["from_offset"], ev["to_offset"])
                      if o in self.committed_at]
        elif kind in (V.CRASH, V.RESTART) and ev["node"] in self.log.applied:
            self._applied(ev["node"], t, None if kind == V.CRASH else 0)

    def _set_hw(self, t: int, hw: int) -> None:
        if hw > self.hw or not self.log.high_watermark:
            self.hw = max(self.hw, hw)
            self.log.high_watermark.append((t, self.hw))

    def _applied(self, broker: str, t: int, offset) -> None:
        series = self.log.applied.setdefault(broker, [])
        if series and series[-1][0] == t:
            series[-1] = (t, offset)  # one value per instant: the last
        elif not series or series[-1][1] != offset:
            series.append((t, offset))

    def _close_leader(self, t: int) -> None:
        if self.leader is not None:
            voter, epoch, since = self.leader
            self.log.leaders.append(QuorumLeader(voter, epoch, since, t))
            self.leader = None

    def finish(self, end_us: int) -> MetadataLog:
        self._close_leader(max(end_us, self.leader[2]) if self.leader else end_us)
        self.log.end_us = end_us
        for waits in self.log.waits.values():
            waits.sort()
        return self.log


def fold(events, end_us: int | None = None) -> MetadataLog:
    """The `MetadataLog` of `events` (in trace order), ending at `end_us` (default: the last)."""
    f = MetadataLogFold()
    last = 0
    for ev in events:
        if ev["kind"] in KINDS:
            f.step(ev)
        last = ev["t"]
    return f.finish(last if end_us is None else end_us)


SUMMARY_HEADERS = ("broker", "applied offset at the end", "committed high watermark",
                   "most records behind", "longest behind (ms)",
                   "commit to apply p50 (ms)", "commit to apply max (ms)")


def summary_cells(log: MetadataLog) -> list[list[str]]:
    """`summary()` as text cells under SUMMARY_HEADERS ("-" for a broker that applied no
    record; "down" for one down at the end)."""
    def text(v):
        return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)
    return [[r["broker"], "down" if r["applied_offset"] is None else str(r["applied_offset"]),
             str(r["high_watermark"]), str(r["max_records_behind"]),
             text(r["longest_behind_ms"]), text(r["wait_p50_ms"]), text(r["wait_max_ms"])]
            for r in log.summary()]


def leaders_text(log: MetadataLog) -> str:
    """The quorum's leaders in words: "c2 (epoch 1) from 1.252 s; c1 (epoch 2) from ..."."""
    return "; ".join(f"{q.voter} (epoch {q.epoch}) {q.start_us / 1e6:.3f}\u2013"
                     f"{q.end_us / 1e6:.3f} s" for q in log.leaders) or "none elected"


def to_json(log: MetadataLog) -> dict:
    """What the interactive page draws: the series (µs, values), each broker's lag, the
    leaders, and the summary cells."""
    return {"end_us": log.end_us, "high_watermark": [list(p) for p in log.high_watermark],
            "applied": {b: [list(p) for p in log.applied[b]] for b in log.brokers()},
            "lag": {b: [list(p) for p in log.lag(b)] for b in log.brokers()},
            "leaders": [[q.voter, q.epoch, q.start_us, q.end_us] for q in log.leaders],
            "headers": list(SUMMARY_HEADERS), "summary": summary_cells(log),
            "leaders_text": leaders_text(log)}
