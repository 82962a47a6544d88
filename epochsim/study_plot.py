"""Pictures of the KIP-951 study: per scenario, the three discovery modes in one figure.

Contract: `plot_latency(results, out_dir)` writes `latency-<scenario>.png` for every scenario in
`results` and returns the paths. Each figure has one panel per mode (`study.MODES`, top to
bottom) for the mode's first seed, all sharing both axes so that a spike in one mode is read
against the others at a glance: produce and end-to-end latency over time (the worst batch per
20 ms solid, the median dotted), the leader moves, shutdowns and restarts as dashed lines, and
the warm-up cut, before which nothing is measured, shaded and labelled. The figure is drawn
headless and saved with `reports.style` (the same results give the same bytes).
"""

from __future__ import annotations

import os

from epochsim.study import MARKED, MODES, WARMUP_US
from reports import style as S

STYLES = {"produce": ("tab:blue", "produce"), "e2e": ("tab:purple", "end-to-end")}


def file_name(scenario: str) -> str:
    return f"latency-{scenario}.png"


def plot_latency(results: list[dict], out_dir: str) -> list[str]:
    """One PNG per scenario, the three modes stacked; returns the paths written."""
    names = list(dict.fromkeys(r["scenario"] for r in results))
    paths = []
    with S.drawing():
        for name in names:
            firsts = [min((r for r in results if r["scenario"] == name and r["mode"] == mode),
                          key=lambda r: r["seed"], default=None) for mode in MODES]
            firsts = [r for r in firsts if r is not None]
            fig = _figure(name, firsts)
            paths.append(S.save(fig, os.path.join(out_dir, file_name(name))))
    return paths


def _figure(name: str, runs: list[dict]):
    fig = S.new_figure(11, 0.8 + 2.6 * len(runs))
    axes = []
    for k, result in enumerate(runs):
        ax = fig.add_subplot(len(runs), 1, k + 1, sharex=axes[0] if axes else None,
                             sharey=axes[0] if axes else None)
        _draw_run(ax, result)
        axes.append(ax)
    low, high = _y_limits(runs)
    axes[0].set_ylim(low, high)
    axes[-1].set_xlabel("batch created at (s)")
    seeds = sorted({r["seed"] for r in runs})
    fig.suptitle(f"{name}: produce and end-to-end latency by leader-discovery mode "
                 f"(seed {', '.join(map(str, seeds))})", fontsize=10)
    fig.tight_layout()
    return fig


def _y_limits(runs: list[dict]) -> tuple[float, float]:
    points = [p for r in runs for kind in STYLES for p in r["series"][kind]]
    low = min((p[1] for p in points), default=1.0)
    high = max((p[2] for p in points), default=10.0)
    return max(low * 0.8, 0.01), high * 1.25


def _draw_run(ax, result: dict) -> None:
    for kind, (color, label) in STYLES.items():
        points = result["series"][kind]
        if not points:
            continue
        xs = [p[0] for p in points]
        ax.plot(xs, [p[2] for p in points], color=color, lw=0.9, label=f"{label} max")
        ax.plot(xs, [p[1] for p in points], color=color, lw=0.6, ls=":",
                label=f"{label} median")
    seen, labelled = set(), set()
    for t_us, action, _target in result["faults"]:
        if (t_us, action) in seen:
            continue  # a move of many partitions at one instant is one mark
        seen.add((t_us, action))
        ax.axvline(t_us / 1e6, color=MARKED.get(action, "tab:orange"), lw=0.8, ls="--",
                   label=None if action in labelled else action)
        labelled.add(action)
    cut = result.get("warmup_us", WARMUP_US) / 1e6  # a KRaft variant's is later
    ax.axvspan(0, cut, color="#eeeeee", zorder=0, lw=0)
    ax.axvline(cut, color="grey", lw=0.6)
    ax.text(cut / 2, 0.96, f"warm-up\n(not measured,\nfirst {cut:g} s)",
            transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7,
            color="#555555")
    ax.set_xlim(left=0)
    ax.set_yscale("log")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"leader_discovery = {result['mode']}", fontsize=9, loc="left")
    ax.legend(fontsize=7, loc="upper right")
