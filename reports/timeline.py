"""Failover timelines: one picture of who led what, at which epoch, and what went wrong when.

Contract: `plot_trace(trace_path, out_path, window=None, partitions=None)` draws the stored
trace and writes PNG or SVG (by `out_path`'s extension); the same trace gives the same file
bytes. `window` is (start_s, end_s) in seconds (either may be None); `partitions` selects
partitions (each must exist). Panels, top to bottom:
1. overview lanes: faults, controller, then per partition the controller's truth, each
   replica's role and metadata view, each client's known epoch and its produce outcomes;
   with more than `lanes.MAX_FULL` partitions and none selected, only the partitions that
   matter plus summary lanes (leaderless partitions, stale views);
2. a zoom on the first violation when its witnesses are too close together to see in the
   overview, with the control messages that reached the replica and a call-out;
3. in a KRaft run only, the metadata log (committed high watermark, quorum leaders and
   epochs, each broker's applied offset) and each broker's records behind it
   (`reports.metadata_panel`);
4. produce latency (ack `latency_us`) over time.
Bad requests raise `reports.style.ReportError`; unreadable traces `TraceError`.
docs/reports.md explains how to read the picture.
"""

from __future__ import annotations

from reports import lanedraw, metadata_panel, overlays
from reports import style as S
from reports.declutter import declutter, rank
from reports.lanes import choose_partitions, event_tp, overview_lanes, zoom_lanes
from reports.model import Builder, build, node_key
from reports.rundata import Run, fold_run
from reports.style import seconds
from sim.core.trace import MAX_T_US

WIDTH_IN, LEFT_IN, RIGHT_IN, LANE_IN = 14.0, 1.5, 0.55, 0.36
AXES_IN = WIDTH_IN - LEFT_IN - RIGHT_IN
ZOOM_MAX_SHARE = 0.2  # witnesses spread over more of the window than this need no zoom


def plot_trace(trace_path: str, out_path: str, window=None, partitions=None) -> str:
    """Draw the timeline of the trace at `trace_path` into `out_path`; returns `out_path`."""
    S.check_output(out_path)
    S.output_folder(out_path)  # as report does: a folder that cannot be made, said at once
    # streamed: a run of millions of events is drawn without holding them all
    builder = Builder()
    run = fold_run(trace_path, builder.step)
    run.warn_if_cut_short()
    return plot_run(run, out_path, window, partitions, model=builder.finish(run.end_us))


def window_us(window, end_us: int) -> tuple[int, int]:
    """(start_us, end_us) of a (start_s, end_s) window; None means the whole run. A bound
    past the latest time any trace holds (MAX_T_US) counts as that time: 1e308 s in µs is
    infinite, and would raise OverflowError rather than be named as typed."""
    start_s, end_s = window if window is not None else (None, None)
    x0 = 0 if start_s is None else _us(start_s)
    x1 = max(end_us, 1) if end_s is None else _us(end_s)
    if x0 < 0 or x1 <= x0:
        shown = ":".join("" if b is None else f"{b:g}" for b in (start_s, end_s))
        raise S.ReportError(f"--window {shown}: the end must come after the start, to the "
                            f"microsecond, both >= 0 (the run lasts {seconds(end_us)}); "
                            "pick a window within the run")
    return x0, x1


def _us(seconds_: float) -> int:
    return int(round(min(seconds_, MAX_T_US / 1e6) * 1e6))


def plot_run(run: Run, out_path: str, window=None, partitions=None, model=None) -> str:
    """`plot_trace` for a loaded run (and its model, when already built)."""
    S.check_output(out_path)
    with S.drawing():
        return S.save(figure(run, window, partitions, model), out_path)


def figure(run: Run, window=None, partitions=None, model=None, tidy: bool = True):
    """The timeline of `run` as a matplotlib Figure (call inside `S.drawing()`); with `tidy`,
    its labels laid out so that none covers another (`reports.declutter`)."""
    x0, x1 = window_us(window, run.end_us)
    model = model if model is not None else build(run.events, run.end_us)
    tps, aggregated = choose_partitions(model, run, partitions)
    lanes = overview_lanes(model, tps, aggregated)
    fig = _draw(run, model, lanes, (x0, x1), zoom_window(run, x0, x1))
    if tidy:
        declutter(fig)
    return fig


def zoom_window(run: Run, x0: int, x1: int):
    """(tp, z0, z1, violation) around the first violation in the window, when it needs one."""
    for v in run.violations:
        evs = [run.events[s] for s in v["seqs"] if 0 <= s < len(run.events)]
        evs = [e for e in evs if x0 <= e["t"] <= x1 and event_tp(e)]
        if not evs:
            continue
        lo, hi = min(e["t"] for e in evs), max(e["t"] for e in evs)
        if hi - lo > ZOOM_MAX_SHARE * (x1 - x0):
            return None
        # room on the left for the messages that led here, more on the right for labels
        base = max(hi - lo, 1000, (x1 - x0) // 20000)
        return event_tp(evs[-1]), max(0, lo - int(1.5 * base)), hi + 2 * base, v
    return None


def _heights(model, lanes, x0, x1):
    cpu = lanedraw.chars_per_us(AXES_IN, x0, x1, 6.5)
    placed = overlays.fault_rows(model.faults, x0, x1, cpu)
    rows = 1 + max((r for _, r in placed), default=0)
    heights = []
    for lane in lanes:
        if lane.kind == "faults":
            heights.append(max(1.0, 0.62 * rows))
        elif lane.kind == "controller":
            heights.append(max(1.0, 0.6 * len(lane.rows)))
        else:
            heights.append(1.0)
    return heights, placed


def _draw(run, model, lanes, window, zoom):
    x0, x1 = window
    heights, placed = _heights(model, lanes, x0, x1)
    firsts = [v for v in overlays.first_per_invariant(run.violations) if x0 <= v["t_us"] <= x1]
    n_labels = min(len(firsts), 3)
    blocks = [("title", 0.0, 0.62), ("overview", 0.12 + 0.2 * n_labels, sum(heights) * LANE_IN),
              ("latency", 0.55, 1.3), ("legend", 0.45, 1.0)]
    if zoom is not None:
        zlanes = zoom_lanes(model, zoom[0])
        zheights, zplaced = _heights(model, zlanes, zoom[1], zoom[2])
        blocks.insert(2, ("zoom", 1.05, sum(zheights) * LANE_IN))
    if model.metadata_log:  # KRaft only: a ZooKeeper-mode picture keeps its blocks
        at = [b[0] for b in blocks].index("latency")
        blocks[at:at] = [("metadata", 0.6, 1.5), ("lag", 0.5, 1.1)]
    total = sum(g + h for _, g, h in blocks)
    fig = S.new_figure(WIDTH_IN, total)
    rects, top = {}, total
    for name, gap, h in blocks:
        top -= gap + h
        rects[name] = [LEFT_IN / WIDTH_IN, top / total, AXES_IN / WIDTH_IN, h / total]
    _title(fig, run, total)
    ax = fig.add_axes(rects["overview"])
    cv = lanedraw.Canvas(ax, lanes, x0, x1, AXES_IN, heights=heights)
    _draw_lanes(cv, model, placed, run, only_held=True)
    _label_violations(ax, run.violations, firsts[:3], len(firsts), x0, x1)
    if zoom is not None:
        zax = fig.add_axes(rects["zoom"])
        zcv = lanedraw.Canvas(zax, zlanes, zoom[1], zoom[2], AXES_IN, heights=zheights)
        _draw_lanes(zcv, model, zplaced, run, only_held=False)
        _zoom_frame(zax, zcv, run, zoom)
    if "metadata" in rects:
        metadata_panel.draw_log(fig.add_axes(rects["metadata"], sharex=ax),
                                model.metadata_log, x0, x1)
        metadata_panel.draw_lag(fig.add_axes(rects["lag"], sharex=ax),
                                model.metadata_log, x0, x1)
    _latency(fig.add_axes(rects["latency"], sharex=ax), model, run, x0, x1)
    _legend(fig, rects["legend"], epochs_of(model))
    return fig


def _title(fig, run: Run, total_in: float) -> None:
    h = run.header
    proto = h.get("options", {}).get("protocol", {})
    fig.text(LEFT_IN / WIDTH_IN, 1 - 0.22 / total_in,
             f"{run.scenario}  \u00b7  seed {h.get('seed')}  \u00b7  profile "
             f"{proto.get('profile', '?')}", fontsize=11, fontweight="bold", va="center")
    fig.text(LEFT_IN / WIDTH_IN, 1 - 0.46 / total_in, run.status(), fontsize=9, va="center",
             color=S.ACK if run.clean else S.VIOLATION)


def _draw_lanes(cv, model, placed, run, only_held: bool) -> None:
    ax = cv.ax
    ax.set_xlim(cv.x0 / 1e6, cv.x1 / 1e6)
    ax.set_ylim(0, cv.top)
    overlays.shade_faults(cv, model.faults)
    for i, lane in enumerate(cv.lanes):
        if lane.kind == "faults":
            overlays.draw_fault_lane(cv, i, placed)
        else:
            lanedraw.draw_lane(cv, i, model)
    overlays.draw_messages(cv, model, only_held)
    overlays.draw_witnesses(cv, run, run.violations)
    _lane_axis(cv)


def _lane_axis(cv) -> None:
    ax = cv.ax
    ax.set_yticks([cv.y(i) + cv.h(i) / 2 for i in range(len(cv.lanes))])
    ax.set_yticklabels([lane.label for lane in cv.lanes], fontsize=7.5)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=7.5)
    ax.ticklabel_format(axis="x", style="plain", useOffset=False)  # seconds as written
    for i in range(1, len(cv.lanes)):
        new_group = cv.lanes[i].tp != cv.lanes[i - 1].tp or cv.lanes[i].kind == "truth"
        ax.axhline(cv.y(i) + cv.h(i), color="#444444" if new_group else "#dddddd",
                   linewidth=0.8 if new_group else 0.4, zorder=2)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _label_violations(ax, violations, firsts, total: int, x0: int, x1: int) -> None:
    """One red line of text per violated invariant above the overview, in time order (the
    earliest on top), each as near its time as the axes' width allows."""
    firsts = sorted(firsts, key=lambda v: (v["t_us"], v["invariant"]))
    renderer = ax.figure.canvas.get_renderer()
    box = ax.get_window_extent(renderer)
    for k, v in enumerate(firsts):
        n = sum(1 for w in violations if w["invariant"] == v["invariant"])
        times = f"\u00d7{n}, first at" if n > 1 else "at"
        text = f"VIOLATION {v['invariant']} {times} {seconds(v['t_us'])}: {v['message']}"
        if k == len(firsts) - 1 and total > len(firsts):
            text += f"   (+{total - len(firsts)} more invariants)"
        t = ax.annotate(text, xy=(0.0, 1.0), xycoords="axes fraction",
                        xytext=(0, 5 + 14 * (len(firsts) - 1 - k)), textcoords="offset points",
                        fontsize=7.5, color=S.VIOLATION, fontweight="bold", ha="left",
                        va="bottom", annotation_clip=False)
        rank(t, 0)
        # start at the violation's time, moved left as far as needed to end inside the axes
        width = t.get_window_extent(renderer).width
        at = box.x0 + box.width * (v["t_us"] - x0) / max(1, x1 - x0)
        left = max(box.x0, min(at, box.x1 - width))
        t.xy = ((left - box.x0) / box.width, 1.0)


def _zoom_frame(ax, cv, run: Run, zoom) -> None:
    tp, z0, z1, v = zoom
    _ms_axis(ax, z0, z1)
    ax.text(0, 1.0 + 0.62 / _axes_height_in(ax), f"Zoom on {tp}: {seconds(z0)} \u2013 "
            f"{seconds(z1)}, around the first violation", transform=ax.transAxes,
            fontsize=9.5, fontweight="bold", va="bottom", ha="left")
    pts = overlays.witness_points(cv, run, [v])
    if not pts:
        return
    x, y, _ = max(pts)
    left = (x * 1e6 - z0) < 0.5 * (z1 - z0)
    call = ax.annotate(f"VIOLATION {v['invariant']} at {seconds(v['t_us'])}\n{v['message']}",
                xy=(x, y), xycoords="data", xytext=(x, 1.0), textcoords=("data", "axes fraction"),
                fontsize=8.5, color=S.VIOLATION, ha="left" if left else "right", va="bottom",
                annotation_clip=False, zorder=10,
                bbox={"boxstyle": "round,pad=0.3", "fc": "#fff5f5", "ec": S.VIOLATION, "lw": 1},
                arrowprops={"arrowstyle": "-|>", "color": S.VIOLATION, "linewidth": 1.2})
    rank(call, 0)


def _ms_axis(ax, z0: int, z1: int) -> None:
    """Ticks of the zoom in milliseconds from its start, at round values (the lanes are
    drawn in seconds; only the ticks and their words change)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    span_ms = (z1 - z0) / 1000
    steps = [m for m in MaxNLocator(nbins=10).tick_values(0, span_ms) if 0 <= m <= span_ms]
    ax.xaxis.set_major_locator(FixedLocator([z0 / 1e6 + m / 1000 for m in steps]))
    # rounded, and +0 turns -0.0 into 0: float noise never shows as "-0" or "0.49999"
    ms = lambda x, _: f"{round((x - z0 / 1e6) * 1000, 6) + 0:.4g}"  # noqa: E731
    ax.xaxis.set_major_formatter(FuncFormatter(ms))
    ax.set_xlabel(f"ms after {seconds(z0)}", fontsize=7.5, labelpad=1)


def _axes_height_in(ax) -> float:
    return ax.get_position().height * ax.figure.get_figheight()


def _latency(ax, model, run: Run, x0: int, x1: int) -> None:
    clients = sorted({c for _, _, c in model.latency}, key=node_key)
    palette = ["#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22"]
    import numpy as np  # comes with matplotlib; arrays scatter thousands of acks much faster

    for k, client in enumerate(clients):
        pts = np.array([(t / 1e6, ms) for t, ms, c in model.latency
                        if c == client and x0 <= t <= x1], dtype=float).reshape(-1, 2)
        ax.scatter(pts[:, 0], pts[:, 1], s=4, c=palette[k % len(palette)],
                   linewidths=0, label=f"{client} ack latency", zorder=3)
    for f in model.faults:
        if f.end_us is not None and f.end_us > f.start_us:
            ax.axvspan(f.start_us / 1e6, f.end_us / 1e6, color=S.FAULT, alpha=0.35, linewidth=0)
    for v in overlays.first_per_invariant(run.violations):
        ax.axvline(v["t_us"] / 1e6, color=S.VIOLATION, linewidth=1.0, alpha=0.8)
    ax.set_xlim(x0 / 1e6, x1 / 1e6)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("produce latency (ms)", fontsize=7.5)
    ax.set_xlabel("simulated time (s)", fontsize=7.5)
    ax.tick_params(labelsize=7.5)
    ax.grid(axis="y", color="#eeeeee", linewidth=0.5)
    if clients:
        ax.legend(loc="upper left", fontsize=7, frameon=False, markerscale=3)
    else:
        ax.text(0.5, 0.5, "no acknowledged produce requests", transform=ax.transAxes,
                ha="center", va="center", color="#777777")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def epochs_of(model) -> list[int]:
    """The leader epochs of every bar, in order (the colours the picture uses)."""
    found = set()
    for lanes in (model.truth, model.roles, model.views, model.clients):
        for spans in lanes.values():
            found.update(s.value[1] for s in spans if isinstance(s.value[1], int))
    return sorted(e for e in found if e >= 0)


def _legend(fig, rect, epochs: list[int]) -> None:
    """Two legends: what colour means (the leader epoch, one swatch per epoch: leader full,
    follower lighter), then the marks; colour is never shown as meaning a role."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    shown = epochs[:len(S.EPOCH_COLORS)] or [0]
    swatches = [(Patch(fc=S.epoch_color(e), ec="white"),
                 Patch(fc=S.lighten(S.epoch_color(e), 0.5), ec="white")) for e in shown]
    names = [f"epoch {e}" for e in shown]
    if len(epochs) > len(shown):
        names[-1] += f" (colours repeat every {len(S.EPOCH_COLORS)} epochs)"
    title = "colour = leader epoch (each swatch: leader full colour | follower lighter)"
    cx = rect[0] + rect[2] / 2
    fig.legend(swatches, names, handler_map={tuple: HandlerTuple(ndivide=None, pad=0)},
               loc="lower center", ncol=min(len(shown), 8), fontsize=7, frameon=False,
               title=title, title_fontsize=7, bbox_to_anchor=(cx, rect[1] + rect[3] * 0.62))
    handles = [
        Patch(fc=S.OFFLINE, hatch="//", ec="#616161", label="crashed"),
        Patch(fc=S.STOPPED, label="stopped (StopReplica)"),
        Patch(fc=S.DELETED, label="log deleted"),
        Patch(fc="white", ec=S.BEHIND, hatch="////",
              label="older epoch than the controller's (broker) / another leader (client)"),
        Patch(fc="none", ec="#424242", hatch="\\\\\\", label="controller's leader is down"),
        Patch(fc=S.FAULT, ec=overlays.FAULT_EDGE, label="fault window"),
        Line2D([], [], marker="v", color=overlays.FAULT_EDGE, ls="", label="instant fault"),
        Line2D([], [], marker="|", color=S.ACK, ls="", ms=8, label="ack"),
        Line2D([], [], marker="x", color=S.RETRY, ls="", label="retried (error)"),
        Line2D([], [], marker="X", color=S.FAILED, ls="", label="failed (error)"),
        Line2D([], [], marker="*", color=S.VIOLATION, ls="", ms=10, label="violation witness"),
        Line2D([], [], color=overlays.HELD, ls="--", label="message held by the network"),
    ]
    fig.legend(handles=handles, loc="upper center", ncol=6, fontsize=7, frameon=False,
               bbox_to_anchor=(cx, rect[1] + rect[3] * 0.58))
