"""What a timeline draws across lanes: fault windows, violations, control-message arrows.

Contract: functions take a `reports.lanedraw.Canvas` and draw on it; none reads files.
- `fault_rows(faults, x0, x1, cpu)` packs fault labels into rows so none overprints another;
- `draw_fault_lane` / `shade_faults`: the labelled fault lane, and the shading across lanes;
- `draw_witnesses`: a red star on every witness event, in its lane;
- `draw_messages`: LeaderAndIsr / StopReplica arrows from the controller to a broker lane,
  dashed when the network held the message; one that was sent before the window enters from
  its left edge, labelled with its send time.
"""

from __future__ import annotations

from reports import style as S
from reports.declutter import rank
from reports.lanes import lane_of
from reports.style import seconds

FAULT_EDGE = "#e6550d"
HELD = "#6a3d9a"
MAX_FAULT_ROWS = 4
INSTANT_MARK_PT2 = 22   # area of the ▼ of an instant fault (scatter `s`, points²)
LABEL_OFFSET_PT = 6     # a fault label starts this far right of its time: past the ▼


def _visible(faults, x0: int, x1: int):
    for f in faults:
        end = f.end_us if f.end_us is not None else f.start_us
        if end >= x0 and f.start_us <= x1:
            yield f


def fault_rows(faults, x0: int, x1: int, cpu: float, fontsize: float = 6.5) -> list[tuple]:
    """(fault, row) for the faults in [x0, x1]; a row holds labels that do not overlap."""
    ends: list[int] = []
    out = []
    for f in _visible(faults, x0, x1):
        start = max(f.start_us, x0)
        label_end = start + int((len(f.label) + 3) / cpu * fontsize / 7)
        extent = max(label_end, f.end_us or start)
        row = next((r for r, e in enumerate(ends) if e <= start), None)
        if row is None and len(ends) < MAX_FAULT_ROWS:
            ends.append(extent)
            row = len(ends) - 1
        elif row is None:  # every row busy: overprint the one that frees first
            row = min(range(len(ends)), key=lambda r: ends[r])
        ends[row] = max(ends[row], extent)
        out.append((f, row))
    return out


def draw_fault_lane(cv, i: int, placed: list[tuple]) -> None:
    y, h = cv.y(i), cv.h(i)
    nrows = max(1, 1 + max((r for _, r in placed), default=0))
    rh = h * 0.92 / nrows
    for row in range(nrows):
        ry = y + h * 0.96 - (row + 1) * rh
        mine = [f for f, r in placed if r == row]
        cv.bars(((max(f.start_us, cv.x0), min(f.end_us, cv.x1), S.FAULT) for f in mine
                 if f.end_us is not None and f.end_us > f.start_us),
                ry + rh * 0.08, rh * 0.84, edgecolor=FAULT_EDGE, linewidth=0.6)
        instants = [f.start_us / 1e6 for f in mine if f.end_us is None or f.end_us == f.start_us]
        if instants:
            cv.ax.scatter(instants, [ry + rh * 0.5] * len(instants), marker="v", s=INSTANT_MARK_PT2,
                          c=FAULT_EDGE, zorder=5, linewidths=0)
        for f in mine:
            x = max(f.start_us, cv.x0) / 1e6
            # offset in points past the ▼ mark, not leading spaces: in a browser's font the
            # spaces can be narrower than the mark, which would then cover the first letter
            t = cv.ax.annotate(f.label, xy=(x, ry + rh * 0.5), xytext=(LABEL_OFFSET_PT, 0),
                               textcoords="offset points", fontsize=6.5, va="center",
                               ha="left", color="#7f2704", annotation_clip=False, clip_on=True,
                               zorder=6)
            rank(t, 2)


def shade_faults(cv, faults) -> None:
    for f in _visible(faults, cv.x0, cv.x1):
        if f.end_us is not None and f.end_us > f.start_us:
            cv.ax.axvspan(max(f.start_us, cv.x0) / 1e6, min(f.end_us, cv.x1) / 1e6,
                          color=S.FAULT, alpha=0.35, linewidth=0, zorder=0)
        else:
            cv.ax.axvline(f.start_us / 1e6, color=FAULT_EDGE, linestyle=":", linewidth=0.8,
                          zorder=1)


def witness_points(cv, run, violations) -> list[tuple[float, float, str]]:
    """(x seconds, y, invariant) of every witness event that has a lane in the window."""
    pts = []
    for v in violations:
        for seq in v["seqs"]:
            if not 0 <= seq < len(run.events):
                continue
            ev = run.events[seq]
            i = lane_of(ev, cv.lanes)
            if i is not None and cv.x0 <= ev["t"] <= cv.x1:
                pts.append((ev["t"] / 1e6, cv.y(i) + cv.h(i) * 0.62, v["invariant"]))
    return pts


def draw_witnesses(cv, run, violations) -> None:
    pts = sorted(set(witness_points(cv, run, violations)))
    if pts:
        cv.ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker="*", s=130,
                      c=S.VIOLATION, edgecolors="white", linewidths=0.6, zorder=9)
    for v in first_per_invariant(violations):
        if cv.x0 <= v["t_us"] <= cv.x1:
            cv.ax.axvline(v["t_us"] / 1e6, color=S.VIOLATION, linewidth=1.1, alpha=0.85, zorder=8)


def first_per_invariant(violations) -> list[dict]:
    seen, out = set(), []
    for v in violations:
        if v["invariant"] not in seen:
            seen.add(v["invariant"])
            out.append(v)
    return out


def _controller_y(cv, node: str) -> float | None:
    for i, lane in enumerate(cv.lanes):
        if lane.kind == "controller" and node in lane.rows:
            r = lane.rows.index(node)
            rh = cv.h(i) * 0.9 / len(lane.rows)
            return cv.y(i) + cv.h(i) * 0.95 - (r + 0.5) * rh
    return None


def _broker_y(cv, node: str, tp: str) -> float | None:
    for i, lane in enumerate(cv.lanes):
        if lane.kind == "broker" and lane.node == node and lane.tp == tp:
            return cv.y(i) + cv.h(i) * 0.65
    return None


def message_label(msg, tp: str) -> str:
    text = msg.text
    issued = msg.outcome.get(tp)
    if issued is not None and issued[0] is not None:
        text += f", issued at leader epoch {issued[0]}"
    if issued is not None and issued[1] not in (None, "applied"):
        text += f" \u2192 {issued[1]}"
    if msg.held:
        text += f" (sent {seconds(msg.send_us)}, held by the network)"
    return text


def draw_messages(cv, model, only_held: bool) -> None:
    """Arrows for control messages delivered in the window to a broker lane shown; with
    `only_held` (the overview) just the held ones, otherwise all, each named."""
    for msg in sorted(model.messages.values(), key=lambda m: m.mid):
        if only_held and not msg.held:
            continue
        if msg.deliver_us is None or not cv.x0 <= msg.deliver_us <= cv.x1:
            continue
        for tp in msg.tps:
            y1, y0 = _broker_y(cv, msg.dst, tp), _controller_y(cv, msg.src)
            if y1 is not None and y0 is not None:
                _arrow(cv, msg, tp, y0, y1, name_all=not only_held)


def _arrow(cv, msg, tp: str, y0: float, y1: float, name_all: bool) -> None:
    x0 = max(msg.send_us, cv.x0) / 1e6
    x1 = msg.deliver_us / 1e6
    color = HELD if msg.held else "#555555"
    cv.ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=7,
                   arrowprops={"arrowstyle": "-|>", "color": color,
                               "linestyle": "--" if msg.held else "-",
                               "linewidth": 1.4 if msg.held else 0.7, "shrinkA": 0,
                               "shrinkB": 2, "mutation_scale": 9})
    if msg.held or msg.msg == "StopReplica":
        text = message_label(msg, tp)
    elif name_all and (msg.deliver_us - max(msg.send_us, cv.x0)) * cv.chars_per_us > 2:
        # named only when the arrow visibly slants: upright ones would stack their labels
        text = msg.text.split(",")[0].replace(f" {tp} leader ", " ").replace(" epoch ", " e")
    else:
        return
    # above the arrow's head if that is free, else below it (reports.declutter decides)
    t = cv.ax.annotate(text, xy=(x1, y1), xytext=(5, 6), textcoords="offset points",
                       fontsize=cv.fontsize - 0.5, color=color, ha="left", va="bottom",
                       zorder=7, annotation_clip=False, clip_on=True,
                       bbox={"boxstyle": "round,pad=0.12", "fc": "white", "ec": "none",
                             "alpha": 0.85})
    rank(t, 1, alts=[(5, -16), (5, 18), (5, -28)])
