"""The timeline's KRaft panels: the metadata log and how far behind each broker's metadata is.

Contract: `draw_log(ax, log, x0, x1)` draws, on a matplotlib Axes, the committed high
watermark of the metadata log (a black step line), each broker's applied metadata offset (a
coloured step line, broken while the broker is down) and the quorum's leaders (a band along
the top naming the voter and its epoch; a dotted line where the leadership changed hands).
`draw_lag(ax, log, x0, x1)` draws each broker's records behind the high watermark, its legend
naming the most records it fell behind and the longest commit-to-apply wait. Both take a
`reports.metadata_log.MetadataLog` and a window in µs; the timeline draws them only when
the log is not empty (a KRaft run), so a ZooKeeper-mode picture has neither.
"""

from __future__ import annotations

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22"]
HW_COLOR = "#222222"
LOG_TITLE = "KRaft metadata log: committed high watermark and each broker's applied offset"
LAG_TITLE = "metadata records each broker is behind the committed high watermark"


def broker_color(log, broker: str) -> str:
    return PALETTE[log.brokers().index(broker) % len(PALETTE)]


def _steps(series: list, x1: int):
    """x (s) and y of a post-step line through `series`, NaN where a value is None, held
    until `x1`."""
    nan = float("nan")
    xs = [t / 1e6 for t, _ in series] + ([x1 / 1e6] if series else [])
    ys = [nan if v is None else v for _, v in series] + ([series[-1][1]] if series else [])
    return xs, [nan if v is None else v for v in ys]


def draw_log(ax, log, x0: int, x1: int) -> None:
    xs, ys = _steps(log.high_watermark, log.end_us)
    ax.step(xs, ys, where="post", color=HW_COLOR, linewidth=2.2, alpha=0.35,
            label="committed high watermark", zorder=2)
    for broker in log.brokers():
        xs, ys = _steps(log.applied[broker], log.end_us)
        ax.step(xs, ys, where="post", color=broker_color(log, broker), linewidth=1.0,
                label=f"{broker} applied", zorder=3)
    top = max([v for _, v in log.high_watermark] + [1])
    ax.set_ylim(0, top * 1.3)
    for k, leader in enumerate(log.leaders):
        if k:
            ax.axvline(leader.start_us / 1e6, color="#555555", linestyle=":", linewidth=0.9)
        lo, hi = max(leader.start_us, x0), min(leader.end_us, x1)
        if hi <= lo:
            continue
        ax.axvspan(lo / 1e6, hi / 1e6, ymin=0.86, ymax=0.98, color="#c6dbef", linewidth=0)
        ax.text((lo + hi) / 2e6, top * 1.22, f"{leader.voter} leads \u00b7 epoch {leader.epoch}",
                ha="center", va="center", fontsize=6.5, clip_on=True)
    _frame(ax, x0, x1, "metadata offset", LOG_TITLE, "lower right")


def draw_lag(ax, log, x0: int, x1: int) -> None:
    by_broker = {r["broker"]: r for r in log.summary()}
    top = 1
    for broker in log.brokers():
        lag = log.lag(broker)
        row = by_broker[broker]
        wait = "" if row["wait_max_ms"] is None else f", commit-to-apply up to {row['wait_max_ms']:g} ms"
        xs, ys = _steps(lag, log.end_us)
        ax.step(xs, ys, where="post", color=broker_color(log, broker), linewidth=1.0,
                label=f"{broker}: up to {row['max_records_behind']} behind{wait}")
        top = max([top] + [v for _, v in lag if v is not None])
    ax.set_ylim(-0.05 * top, top * 1.25)
    _frame(ax, x0, x1, "records behind", LAG_TITLE, "upper left")


def _frame(ax, x0: int, x1: int, ylabel: str, title: str, legend_at: str) -> None:
    ax.set_xlim(x0 / 1e6, x1 / 1e6)
    ax.set_ylabel(ylabel, fontsize=7.5)
    ax.set_title(title, fontsize=8, loc="left", pad=3)
    ax.tick_params(labelsize=7.5)
    ax.grid(axis="y", color="#eeeeee", linewidth=0.5)
    ax.legend(loc=legend_at, fontsize=6.5, frameon=False, ncol=4)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
