"""Lamport-style sequence diagrams: the messages between a few nodes around a violation.

Contract: `plot_sequence(trace_path, out_path, ...)` / `plot_run_sequence(run, out_path, ...)`
write PNG or SVG (by extension; same trace => same bytes). One column (lifeline) per node,
one row per event in trace order, so events a microsecond apart stay apart; a message is an
arrow from its `send` row to its `deliver` row (joined by `mid`). A held message is dashed
and visibly crosses the ones that overtook it; a dropped one ends in a red cross. The state
changes of the nodes shown (LeaderAndIsr applied, StopReplica, metadata, crashes, faults)
are dots with a sentence; witnesses of the violation are red stars naming the invariant.
`select(run, ...)` picks the rows: by default the events within `around_events` of the first
violation's witnesses (or the first fault, or the start), or within `around_ms` of them,
restricted to the nodes involved, plus the far ends of any message that crosses the window.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports import style as S
from reports.model import node_key
from reports.rundata import Run, load_run
from reports.style import seconds
from reports.words import describe, describe_fault, describe_send
from sim.core.trace import RESERVED_NODES
from sim.kafka import vocab as V

STATE_KINDS = {V.REPLICA_STATE, V.STOP_REPLICA, V.METADATA, V.PARTITION_STATE, V.LOG_CREATED,
               V.LOG_DELETED, V.CRASH, V.HALT, V.RESTART, V.BROKER_REGISTERED, V.BROKER_START_FAILED, V.CONTROLLER_ELECTED, V.CONTROLLER_RESIGNED,
               V.LAI_REJECTED, V.LAI_LEADER_UNAVAILABLE, V.STALE_CONTROLLER, V.TRUNCATE, V.PRODUCE_ERROR, V.PRODUCE_FAILED,
               V.CLIENT_EPOCH, V.METADATA_REJECTED, V.TOPIC_DELETED, V.TOPIC_DELETION_COMPLETED,
               V.ALTER_PARTITION}
MSG_KINDS = {V.SEND, V.DELIVER, V.DROP, V.HOLD, V.STALL}
QUIET = RESERVED_NODES
MAX_NODES = 8
CONTROL = {"LeaderAndIsr", "StopReplica", "UpdateMetadata"}


@dataclass
class Selection:
    rows: list          # events in trace order
    nodes: list         # lifelines, left to right
    gaps: list          # (row index, events skipped before that row)
    anchor: list        # witness seqs (or the anchor events)
    violation: dict | None


def plot_sequence(trace_path: str, out_path: str, **kw) -> str:
    S.check_output(out_path)
    return plot_run_sequence(load_run(trace_path), out_path, **kw)


def _anchor(run: Run) -> tuple[list[int], dict | None]:
    for v in run.violations:
        seqs = [s for s in v["seqs"] if 0 <= s < len(run.events)
                and run.events[s]["node"] not in QUIET]
        if seqs:
            return sorted(seqs), v
    faults = [e["seq"] for e in run.events if e["kind"] == V.FAULT]
    return (faults[:1] or [0]), None


def select(run: Run, around_events: int = 25, around_ms: float | None = None,
           nodes: list[str] | None = None) -> Selection:
    anchor, violation = _anchor(run)
    evs = run.events
    if not evs:
        return Selection([], [], [], [], None)
    if around_ms is not None:
        t0 = evs[anchor[0]]["t"] - int(around_ms * 1000)
        t1 = evs[anchor[-1]]["t"] + int(around_ms * 1000)
        lo = next((e["seq"] for e in evs if e["t"] >= t0), 0)
        hi = max((e["seq"] for e in evs[lo:] if e["t"] <= t1), default=lo)
    else:
        lo, hi = max(0, anchor[0] - around_events), min(len(evs) - 1, anchor[-1] + around_events)
    chosen = list(nodes) if nodes else _involved(evs, anchor, lo, hi)
    keep = set(chosen)
    picked = {e["seq"] for e in evs[lo:hi + 1] if _wanted(e, keep, run)}
    picked |= {s for s in anchor}
    picked |= _far_ends(evs, picked, keep)
    rows = [evs[s] for s in sorted(picked)]
    gaps = [(i, rows[i]["seq"] - rows[i - 1]["seq"] - 1) for i in range(1, len(rows))
            if rows[i]["seq"] - rows[i - 1]["seq"] > 40]
    return Selection(rows, chosen, gaps, anchor, violation)


def _involved(evs, anchor, lo, hi) -> list[str]:
    """The anchor's nodes (a fault's targets), the controllers, and whoever exchanged
    messages with them; with no such node, every node that sent a message in the window."""
    core = set()
    for s in anchor:
        ev = evs[s]
        params = ev.get("params") or {}
        core |= {ev["node"], ev.get("resolved"), params.get("src"), params.get("dst")}
    core -= QUIET | {None}
    nodes = set(core)
    for e in evs[lo:hi + 1]:
        if e["kind"] == V.SEND:
            if not core or e["node"] in core or e.get("dst") in core:
                nodes.update((e["node"], e["dst"]))
        elif e["kind"] in (V.CONTROLLER_ELECTED, V.PARTITION_STATE):
            nodes.add(e["node"])
        elif e["kind"] == V.DELIVER and e["node"] in core:
            nodes.add(e["src"])
    return sorted(nodes - QUIET, key=node_key)[:MAX_NODES]


def _wanted(ev: dict, nodes: set, run: Run) -> bool:
    kind = ev["kind"]
    if ev["seq"] in run.witnesses or kind == V.FAULT:
        return True
    if kind == V.SEND:
        return ev["node"] in nodes and ev["dst"] in nodes
    if kind == V.DELIVER:
        return ev["node"] in nodes and ev["src"] in nodes
    if kind in (V.DROP, V.HOLD, V.STALL):
        return False  # added with their message by _far_ends
    return kind in STATE_KINDS and ev["node"] in nodes


def _far_ends(evs, picked: set, nodes: set) -> set:
    """Send, hold, drop and deliver events of every message with one end already picked."""
    mids = {evs[s]["mid"] for s in picked if evs[s]["kind"] in (V.SEND, V.DELIVER)}
    if not mids:
        return set()
    out = set()
    for e in evs:
        if e["kind"] in MSG_KINDS and e.get("mid") in mids:
            if e["kind"] == V.SEND and e["dst"] not in nodes:
                continue
            out.add(e["seq"])
    return out


# -- drawing ------------------------------------------------------------------------------

ROW_IN, COL_IN, LEFT_IN, RIGHT_IN, TOP_IN = 0.2, 2.3, 1.5, 4.6, 0.95


def plot_run_sequence(run: Run, out_path: str, around_events: int = 25,
                      around_ms: float | None = None, nodes: list[str] | None = None) -> str:
    S.check_output(out_path)
    sel = select(run, around_events, around_ms, nodes)
    with S.drawing():
        fig = _draw(run, sel)
        return S.save(fig, out_path)


def _draw(run: Run, sel: Selection):
    n_rows, n_cols = max(1, len(sel.rows)), max(1, len(sel.nodes))
    width = LEFT_IN + (n_cols - 1) * COL_IN + RIGHT_IN + 0.6
    height = TOP_IN + n_rows * ROW_IN + 0.5
    fig = S.new_figure(width, height)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(-LEFT_IN, width - LEFT_IN)
    ax.set_ylim(-(height - TOP_IN), TOP_IN)
    ax.axis("off")
    col = {n: i * COL_IN for i, n in enumerate(sel.nodes)}
    row = {e["seq"]: -(i + 0.5) * ROW_IN for i, e in enumerate(sel.rows)}
    _header(ax, run, sel, col, n_rows)
    _time_axis(ax, sel, row)
    _messages(ax, run, sel, col, row)
    _points(ax, run, sel, col, row)
    return fig


def _header(ax, run: Run, sel: Selection, col: dict, n_rows: int) -> None:
    title = f"{run.scenario} seed {run.header.get('seed')}: messages between " + \
            ", ".join(sel.nodes)
    ax.text(-LEFT_IN + 0.15, TOP_IN - 0.22, title, fontsize=10, fontweight="bold", va="center")
    if sel.violation is not None:
        ax.text(-LEFT_IN + 0.15, TOP_IN - 0.45, f"around VIOLATION {sel.violation['invariant']}: "
                f"{sel.violation['message']}", fontsize=8, color=S.VIOLATION, va="center")
    bottom = -n_rows * ROW_IN
    for node, x in col.items():
        ax.plot([x, x], [0.05, bottom], color="#9e9e9e", linewidth=0.8, zorder=1)
        ax.text(x, 0.12, node, ha="center", va="bottom", fontsize=9, fontweight="bold",
                bbox={"boxstyle": "round,pad=0.25", "fc": "#eef3f8", "ec": "#6baed6"})


def _time_axis(ax, sel: Selection, row: dict) -> None:
    last_t = None
    for e in sel.rows:
        y = row[e["seq"]]
        label = f"#{e['seq']}"
        if e["t"] != last_t:
            label = f"{seconds(e['t'])}  " + label
            last_t = e["t"]
        ax.text(-0.25, y, label, ha="right", va="center", fontsize=6, color="#555555")
    for i, skipped in sel.gaps:
        y = row[sel.rows[i]["seq"]] + ROW_IN / 2
        ax.axhline(y, color="#bbbbbb", linestyle=":", linewidth=0.8)
        ax.text(-LEFT_IN + 0.1, y, f"\u22ee {skipped} events", fontsize=6, color="#888888",
                va="center")


def _messages(ax, run: Run, sel: Selection, col: dict, row: dict) -> None:
    sends = {e["mid"]: e for e in sel.rows if e["kind"] == V.SEND}
    ends = {}
    for e in sel.rows:
        if e["kind"] in (V.DELIVER, V.DROP) and e["mid"] in sends:
            ends.setdefault(e["mid"], e)
    held = {e["mid"] for e in sel.rows if e["kind"] in (V.HOLD, V.STALL)}
    for mid in sorted(sends):
        s = sends[mid]
        if s["node"] not in col or s["dst"] not in col:
            continue
        end = ends.get(mid)
        _arrow(ax, s, end, mid in held, col, row)


def _arrow(ax, send: dict, end: dict | None, held: bool, col: dict, row: dict) -> None:
    x0, y0 = col[send["node"]], row[send["seq"]]
    x1 = col[send["dst"]]
    dropped = end is not None and end["kind"] == V.DROP
    y1 = row[end["seq"]] if end is not None else y0 - ROW_IN
    msg = send.get("msg", "")
    color = "#6a3d9a" if held else ("#1f4e79" if msg in CONTROL else "#9e9e9e")
    if dropped:  # a lost message: dotted to where it was going, a red cross on arrival
        color = S.VIOLATION
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=3 if held else 2,
                arrowprops={"arrowstyle": "-" if dropped else "-|>", "color": color,
                            "linestyle": ":" if dropped else ("--" if held or end is None else "-"),
                            "linewidth": 1.5 if held else 0.8, "shrinkA": 0, "shrinkB": 0,
                            "mutation_scale": 8})
    if dropped:
        ax.scatter([x1], [y1], marker="X", s=40, c=S.VIOLATION, zorder=4)
    text = describe_send(send) + (" [HELD]" if held else "") + \
        (f" [DROPPED: {end.get('reason')}]" if dropped else "")
    ax.text(x0 + (0.08 if x1 >= x0 else -0.08), y0 + 0.03, text, fontsize=5.5, color=color,
            ha="left" if x1 >= x0 else "right", va="bottom", zorder=5,
            bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.7})


def _points(ax, run: Run, sel: Selection, col: dict, row: dict) -> None:
    xs_first = min(col.values(), default=0)
    for e in sel.rows:
        y = row[e["seq"]]
        witness = run.witnesses.get(e["seq"])
        if e["kind"] == V.FAULT:
            ax.text(xs_first - 0.1, y, "nemesis: " + describe_fault(e), fontsize=6.5,
                    color="#a63603", va="center", ha="left", zorder=6,
                    bbox={"boxstyle": "round,pad=0.15", "fc": S.FAULT, "ec": "none"})
            continue
        if e["kind"] in (V.HOLD, V.STALL) and e["node"] in col:
            why = f"rule {e.get('rule')}" if e["kind"] == V.HOLD else "cut link"
            ax.text(col[e["node"]] + 0.1, y, f"network holds message #{e['mid']} ({why})",
                    fontsize=6, color="#6a3d9a", va="center", zorder=6)
            continue
        if e["node"] not in col or (e["kind"] in MSG_KINDS and not witness):
            continue
        x = col[e["node"]]
        text = describe(e)
        if text.startswith(e["node"] + " "):
            text = text[len(e["node"]) + 1:]
        if witness:
            ax.scatter([x], [y], marker="*", s=110, c=S.VIOLATION, zorder=7, linewidths=0)
            text = f"{text}  \u26a0 {', '.join(witness)}"
        else:
            ax.scatter([x], [y], marker="o", s=12, c="#333333", zorder=6, linewidths=0)
        ax.text(x + 0.1, y, text, fontsize=6, va="center", ha="left", zorder=6,
                color=S.VIOLATION if witness else "#222222",
                fontweight="bold" if witness else "normal",
                bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.8})
