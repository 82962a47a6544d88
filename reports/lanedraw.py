"""Drawing the lanes of a timeline: bars, labels, marks, one lane at a time.

Contract: `Canvas(ax, lanes, x0_us, x1_us, width_in, heights=...)` stacks the lanes top to
bottom on `ax` (lane i from `y(i)` to `y(i) + h(i)`; x in seconds); `draw_lane(cv, i, model)` draws lane i from the model. All bars of one lane
and one style go through a single `broken_barh` call (10 k bars: seconds, not a minute).
A label is written on a bar only when it fits; the longest variant that fits wins.
"""

from __future__ import annotations

from reports import style as S
from reports.declutter import rank
from reports.model import Model, Span, behind, other_leader
from reports.words import error_name, outcome_name

ROLE_COLOR = {"offline": S.OFFLINE, "stopped": S.STOPPED, "deleted": S.DELETED}
ROLE_TEXT = {"offline": ["crashed", "\u00d7"], "stopped": ["stopped", "S"],
             "deleted": ["log deleted", "deleted", "D"]}
CONTROLLER = "#c6dbef"


def chars_per_us(width_in: float, x0_us: int, x1_us: int, fontsize: float) -> float:
    """Characters of `fontsize` that fit per microsecond on an axis `width_in` wide."""
    return width_in * 72 / (fontsize * 0.62) / max(1, x1_us - x0_us)


class Canvas:
    def __init__(self, ax, lanes, x0_us: int, x1_us: int, width_in: float, fontsize: float = 7,
                 heights: list[float] | None = None):
        self.ax, self.lanes = ax, lanes
        self.x0, self.x1 = x0_us, max(x1_us, x0_us + 1)
        self.fontsize = fontsize
        self.chars_per_us = chars_per_us(width_in, self.x0, self.x1, fontsize)
        self.heights = heights or [1.0] * len(lanes)
        self.top = sum(self.heights)
        self.bottoms = []
        level = self.top
        for h in self.heights:
            level -= h
            self.bottoms.append(level)

    def y(self, i: int) -> float:
        return self.bottoms[i]

    def h(self, i: int) -> float:
        return self.heights[i]

    def clip(self, spans):
        for s in spans:
            if s.end_us > self.x0 and s.start_us < self.x1:
                yield max(s.start_us, self.x0), min(s.end_us, self.x1), s.value

    def fit(self, start_us: int, end_us: int, variants: list[str]) -> str | None:
        room = (end_us - start_us) * self.chars_per_us - 1
        for text in variants:
            if len(text) <= room:
                return text
        return None

    def bars(self, items, y: float, h: float, **kw) -> None:
        """One broken_barh call for (start_us, end_us, color) items."""
        items = list(items)
        if not items:
            return
        ranges = [(a / 1e6, (b - a) / 1e6) for a, b, _ in items]
        colors = [c for _, _, c in items]
        kw.setdefault("linewidth", 0.4)
        kw.setdefault("edgecolor", "white")
        self.ax.broken_barh(ranges, (y, h), facecolors=colors, **kw)

    def label(self, start_us, end_us, yc, variants, color="black", size=None,
              importance: int = 4) -> None:
        """The longest of `variants` that fits the bar, centred on it; a label that another,
        more important one would cover yields to it (`reports.declutter`)."""
        text = self.fit(start_us, end_us, variants)
        if text:
            t = self.ax.text((start_us + end_us) / 2e6, yc, text, ha="center", va="center",
                             fontsize=size or self.fontsize, color=color, clip_on=True, zorder=4)
            rank(t, importance)


def _text_color(hex_color: str) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "white"


def draw_truth(cv: Canvas, i: int, model: Model) -> None:
    lane, y = cv.lanes[i], cv.y(i)
    spans = list(cv.clip(model.truth.get(lane.tp, [])))
    led = [s for s in spans if s[2][0] >= 0]
    cv.bars(((a, b, S.epoch_color(v[1])) for a, b, v in led), y + 0.12, 0.76)
    cv.bars(((a, b, S.OFFLINE) for a, b, v in spans if v[0] < 0), y + 0.12, 0.76, hatch="xx",
            edgecolor="#616161")
    for a, b, (leader, epoch) in spans:
        if leader < 0:
            cv.label(a, b, y + 0.5, ["no leader", "-"])
            continue
        cv.label(a, b, y + 0.5, [f"leader b{leader} \u00b7 epoch {epoch}", f"b{leader} e{epoch}",
                                  f"{epoch}"], _text_color(S.epoch_color(epoch)))
    down = _leader_down(model, lane.tp)
    cv.bars(((a, b, "none") for a, b, _ in cv.clip(down)), y + 0.12, 0.76, hatch="\\\\\\",
            edgecolor="#424242", linewidth=0)


def _leader_down(model: Model, tp: str) -> list[Span]:
    """Where the controller still names a leader that has crashed (before it notices)."""
    out = []
    for t in model.truth.get(tp, []):
        for r in model.roles.get((tp, f"b{t.value[0]}"), []):
            lo, hi = max(t.start_us, r.start_us), min(t.end_us, r.end_us)
            if r.value[0] == "offline" and lo < hi:
                out.append(Span(lo, hi, ()))
    return out


def _role_look(role: str, epoch) -> tuple[str, list[str]]:
    if role in ROLE_COLOR:
        return ROLE_COLOR[role], ROLE_TEXT[role]
    base = S.epoch_color(epoch)
    if role == "leader":
        return base, [f"leader \u00b7 epoch {epoch}", f"leader e{epoch}", f"L{epoch}", f"{epoch}"]
    return S.lighten(base, 0.5), [f"follower \u00b7 epoch {epoch}", f"follower e{epoch}",
                                  f"F{epoch}", f"{epoch}"]


def draw_broker(cv: Canvas, i: int, model: Model) -> None:
    lane, y = cv.lanes[i], cv.y(i)
    spans = list(cv.clip(model.roles.get((lane.tp, lane.node), [])))
    looks = [(a, b, _role_look(*v)) for a, b, v in spans]
    plain = [(a, b, look[0]) for (a, b, look), (_, _, v) in zip(looks, spans) if v[0] != "offline"]
    cv.bars(plain, y + 0.36, 0.58)
    cv.bars(((a, b, S.OFFLINE) for a, b, v in spans if v[0] == "offline"), y + 0.36, 0.58,
            hatch="//", edgecolor="#616161")
    for a, b, (color, texts) in looks:
        cv.label(a, b, y + 0.65, texts, _text_color(color))
    # a leader whose epoch is older than the controller's: the stale ("zombie") leader
    leading = [Span(a, b, v) for a, b, v in spans if v[0] == "leader"]
    stale = [Span(a, b, ()) for a, b in behind(leading, model.truth.get(lane.tp, []))]
    cv.bars(((a, b, "none") for a, b, _ in cv.clip(stale)), y + 0.36, 0.58, hatch="////",
            edgecolor=S.BEHIND, linewidth=0.6)
    _draw_view(cv, y, model.views.get((lane.tp, lane.node), []), model.truth.get(lane.tp, []),
               ["metadata \u00b7 epoch {e}", "md e{e}", "{e}"])


def _draw_view(cv: Canvas, y: float, spans, truth, variants, top=0.30, bottom=0.06,
               stale=behind) -> None:
    """A view of the partition (metadata cache, client), hatched where `stale(spans, truth)`
    says it is out of date."""
    h = top - bottom
    clipped = list(cv.clip(spans))
    cv.bars(((a, b, S.lighten(S.epoch_color(v[1]), 0.3)) for a, b, v in clipped), y + bottom, h)
    for a, b, v in clipped:
        cv.label(a, b, y + bottom + h / 2, [t.format(e=v[1], b=v[0]) for t in variants],
                 size=cv.fontsize - 1, importance=5)
    lag = [Span(a, b, ()) for a, b in stale(spans, truth)]
    cv.bars(((a, b, "none") for a, b, _ in cv.clip(lag)), y + bottom, h, hatch="////",
            edgecolor=S.BEHIND, linewidth=0.6)


def draw_client(cv: Canvas, i: int, model: Model) -> None:
    lane, y = cv.lanes[i], cv.y(i)
    spans = model.clients.get((lane.node, lane.tp), [])
    # A producer only needs the right leader: an older epoch naming the same broker is
    # acknowledged as usual, so only a different leader is hatched as stale.
    _draw_view(cv, y, spans, model.truth.get(lane.tp, []),
               ["client knows leader b{b} \u00b7 epoch {e}", "knows b{b} e{e}", "e{e}", "{e}"],
               top=0.94, bottom=0.5, stale=other_leader)
    marks = [m for m in model.marks if m.node == lane.node and m.tp == lane.tp
             and cv.x0 <= m.t_us <= cv.x1]
    draw_marks(cv, y, marks)


def draw_marks(cv: Canvas, y: float, marks) -> None:
    """Produce outcomes: acks as green ticks, retries and failures as crosses with the error."""
    import numpy as np  # comes with matplotlib; arrays draw thousands of marks much faster

    looks = {"ack": ("|", S.ACK, 0.2, 30), "retry": ("x", S.RETRY, 0.27, 18),
             "failed": ("X", S.FAILED, 0.27, 36)}
    for what, (marker, color, dy, size) in looks.items():
        xs = np.array([m.t_us for m in marks if m.what == what], dtype=float) / 1e6
        if len(xs):
            cv.ax.scatter(xs, np.full(len(xs), y + dy), marker=marker, s=size, c=color,
                          linewidths=0.8 if marker != "|" else 0.5, zorder=5)
    _label_errors(cv, y, [m for m in marks if m.what != "ack"])


def _label_errors(cv: Canvas, y: float, marks) -> None:
    """One label per run of the same error: 'NOT_LEADER_OR_FOLLOWER ×12'."""
    gap_us = max(1, int(40 / cv.chars_per_us))  # a label's width: runs closer than it merge
    groups: list[list] = []
    for m in sorted(marks, key=lambda m: (m.t_us, m.seq)):
        g = groups[-1] if groups else None
        if g and g[0].error == m.error and g[0].what == m.what and m.t_us - g[-1].t_us < gap_us:
            g.append(m)
        else:
            groups.append([m])
    last_end = None
    for g in groups:
        label = outcome_name if g[0].what == "failed" else error_name  # a failed batch's outcome
        name = label(g[0].error) + (f" \u00d7{len(g)}" if len(g) > 1 else "")
        x = g[0].t_us
        if last_end is not None and x < last_end:
            continue  # would overprint the previous label
        color = S.FAILED if g[0].what == "failed" else "#a65000"
        # offset in points, not spaces: the mark keeps its room in any font
        t = cv.ax.annotate(name, xy=(x / 1e6, y + 0.42), xytext=(4, 0),
                           textcoords="offset points", fontsize=cv.fontsize - 1.5, color=color,
                           va="center", ha="left", annotation_clip=False, clip_on=True, zorder=6)
        rank(t, 3)
        last_end = x + int((len(name) + 2) / cv.chars_per_us * (cv.fontsize - 1.5) / cv.fontsize)


def draw_controller(cv: Canvas, i: int, model: Model) -> None:
    lane, y = cv.lanes[i], cv.y(i)
    rows = lane.rows
    h = cv.h(i) * 0.9 / len(rows)
    for r, node in enumerate(rows):
        ry = y + cv.h(i) * 0.95 - (r + 1) * h
        spans = list(cv.clip(model.controllers.get(node, [])))
        cv.bars(((a, b, CONTROLLER) for a, b, _ in spans), ry, h * 0.92, edgecolor="#6baed6")
        for a, b, (epoch,) in spans:
            cv.label(a, b, ry + h * 0.46, [f"{node} active \u00b7 controller epoch {epoch}",
                                           f"{node} ce{epoch}", node])


def draw_count(cv: Canvas, i: int, points: list[tuple[int, int]], color: str) -> None:
    """A summary lane: a step area scaled to the lane, with its maximum written."""
    y = cv.y(i)
    if not points:
        return
    peak = max(c for _, c in points) or 1
    xs = [t / 1e6 for t, _ in points] + [cv.x1 / 1e6]
    ys = [y + 0.08 + 0.84 * c / peak for _, c in points]
    ys.append(ys[-1])
    cv.ax.fill_between(xs, y + 0.08, ys, step="post", color=color, alpha=0.6, linewidth=0)
    t = cv.ax.text(cv.x1 / 1e6, y + 0.5, f" max {max(c for _, c in points)}",
                   fontsize=cv.fontsize - 1, va="center", ha="left", clip_on=False)
    rank(t, 2)


def behind_counts(model: Model) -> list[tuple[int, int]]:
    """(t, number of broker views older than the truth) at every change."""
    deltas: dict[int, int] = {}
    for (tp, _), spans in model.views.items():
        for a, b in behind(spans, model.truth.get(tp, [])):
            deltas[a] = deltas.get(a, 0) + 1
            deltas[b] = deltas.get(b, 0) - 1
    out, level = [(0, 0)], 0
    for t in sorted(deltas):
        level += deltas[t]
        out.append((t, level))
    return out


def draw_lane(cv: Canvas, i: int, model: Model) -> None:
    kind = cv.lanes[i].kind
    if kind == "truth":
        draw_truth(cv, i, model)
    elif kind == "broker":
        draw_broker(cv, i, model)
    elif kind == "client":
        draw_client(cv, i, model)
    elif kind == "controller":
        draw_controller(cv, i, model)
    elif kind == "leaderless":
        draw_count(cv, i, model.leaderless, S.OFFLINE)
    elif kind == "behind":
        draw_count(cv, i, behind_counts(model), S.BEHIND)
