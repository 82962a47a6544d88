"""Which lanes a timeline shows, in which order, and where each event belongs.

Contract:
- `choose_partitions(model, run, wanted)` returns (partitions, aggregated): the `wanted` ones
  (each must exist, else ReportError), or all when there are at most `MAX_FULL`, or else the
  few that matter (in violations, then named by faults, then led by a faulted broker), with
  `aggregated` true so summary lanes stand in for the rest;
- `overview_lanes` / `zoom_lanes` list `Lane`s top to bottom;
- `lane_of(ev, lanes)` is the index of the lane an event belongs to, or None.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.model import Model, tp_key
from reports.style import ReportError

MAX_FULL = 12      # more partitions than this and none selected: aggregate
MAX_PICKED = 6     # partitions drawn in full when aggregating


@dataclass(frozen=True)
class Lane:
    kind: str               # faults | controller | leaderless | behind | truth | broker | client
    label: str
    tp: str | None = None
    node: str | None = None
    rows: tuple = ()        # sub-rows (controller nodes, fault rows)


def witness_partitions(run) -> list[str]:
    out: list[str] = []
    for v in run.violations:
        for seq in v["seqs"]:
            tp = event_tp(run.events[seq]) if 0 <= seq < len(run.events) else None
            if tp and tp not in out:
                out.append(tp)
    return out


def event_tp(ev: dict) -> str | None:
    if isinstance(ev.get("tp"), str):
        return ev["tp"]
    batches = ev.get("batches")
    if batches and isinstance(batches[0], dict):
        return batches[0].get("tp")
    return None


def choose_partitions(model: Model, run, wanted: list[str] | None) -> tuple[list[str], bool]:
    known = model.partitions()
    if wanted:
        missing = [tp for tp in wanted if tp not in model.truth]
        if missing:
            sample = ", ".join(known[:4]) + (", ..." if len(known) > 4 else "")
            raise ReportError(f"partition {missing[0]!r} is not in the trace (it has {sample})")
        return list(dict.fromkeys(wanted)), False
    if len(known) <= MAX_FULL:
        return known, False
    picked = [tp for tp in witness_partitions(run) if tp in model.truth]
    for f in model.faults:
        picked += [tp for tp in f.tps if tp in model.truth]
    # then a couple of partitions led by each faulted broker, so every fault gets a say
    for f in model.faults:
        picked += [tp for tp in _led_by(model, f.nodes, f.start_us) if tp not in picked][:2]
    return list(dict.fromkeys(picked))[:MAX_PICKED] or known[:1], True


def _led_by(model: Model, nodes: tuple, t_us: int) -> list[str]:
    ids = {int(n[1:]) for n in nodes if n[:1] == "b" and n[1:].isdigit()}
    out = []
    for tp in model.partitions():
        for span in model.truth[tp]:
            if span.start_us <= t_us < span.end_us and span.value[0] in ids:
                out.append(tp)
    return out


def _common_lanes(model: Model) -> list[Lane]:
    controllers = tuple(sorted(model.controllers))
    return [Lane("faults", "faults"), Lane("controller", "controller", rows=controllers or ("-",))]


def partition_lanes(model: Model, tp: str, brokers: list[str] | None = None) -> list[Lane]:
    lanes = [Lane("truth", f"{tp} truth (controller)", tp)]
    for b in brokers if brokers is not None else model.brokers_of(tp):
        lanes.append(Lane("broker", f"{tp} @ {b}", tp, b))
    for c in model.clients_of(tp):
        lanes.append(Lane("client", f"{tp} @ {c}", tp, c))
    return lanes


def overview_lanes(model: Model, tps: list[str], aggregated: bool) -> list[Lane]:
    lanes = _common_lanes(model)
    if aggregated:
        n = len(model.truth)
        lanes.append(Lane("leaderless", f"leaderless (of {n})"))
        lanes.append(Lane("behind", "stale views"))
    for tp in sorted(tps, key=tp_key):
        lanes += partition_lanes(model, tp)
    return lanes


def zoom_lanes(model: Model, tp: str) -> list[Lane]:
    return _common_lanes(model) + partition_lanes(model, tp)


def lane_of(ev: dict, lanes: list[Lane]) -> int | None:
    """The lane a (witness) event is drawn in: its broker or client lane for its partition,
    the partition's controller lane, or the controller lane."""
    node, tp = ev.get("node"), event_tp(ev)
    for i, lane in enumerate(lanes):
        if lane.tp == tp and lane.node == node and tp is not None:
            return i
    for i, lane in enumerate(lanes):
        if lane.kind == "truth" and lane.tp == tp and tp is not None:
            return i
    for i, lane in enumerate(lanes):
        if lane.kind == "controller" and node in lane.rows:
            return i
    return None
