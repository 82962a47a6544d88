"""Coverage over time of an explore search: what it had reached after each generated run.

Contract: `plot_coverage(explore_json, path)` reads the `coverage_over_time` points of an
`explore.json` (`[run, request situations reached, coverage features reached]`, a point for
every run that raised a count and one for the last run) and draws them as two step curves
over the run count, request situations on the left axis and features on the right, with the
run of the first failure marked when there was one. Same file, same bytes.
"""

from __future__ import annotations

from reports.style import VIOLATION, ReportError, drawing, new_figure, read_json, save

CELLS_COLOR = "#4e79a7"
FEATURES_COLOR = "#f28e2b"


def plot_coverage(explore_json: str, path: str) -> str:
    """Draw the coverage curve of `explore_json` into `path` (.png or .svg)."""
    report = read_json(explore_json)
    points = report.get("coverage_over_time") if isinstance(report, dict) else None
    if not points:
        raise ReportError(f"{explore_json}: no coverage_over_time (written by an older "
                          "epochsim, or a search that ran nothing)")
    runs = [p[0] for p in points]
    with drawing():
        fig = new_figure(6.5, 3.0)
        ax = fig.add_subplot(1, 1, 1)
        ax.step(runs, [p[1] for p in points], where="post", color=CELLS_COLOR)
        ax.set_xlabel("generated runs")
        ax.set_ylabel("request situations reached", color=CELLS_COLOR)
        ax.set_ylim(0, report.get("coverage", {}).get("cells_total", 54))
        twin = ax.twinx()
        twin.step(runs, [p[2] for p in points], where="post", color=FEATURES_COLOR)
        twin.set_ylabel("coverage features reached", color=FEATURES_COLOR)
        twin.set_ylim(0, max(p[2] for p in points) * 1.1 + 1)
        first = report.get("runs_to_first_failure")
        if first:
            ax.axvline(first, color=VIOLATION, linestyle="--", linewidth=1)
            ax.text(first, 2, f"{report.get('invariant')} broken at run {first} ",
                    color=VIOLATION, fontsize=7, ha="right")
        ax.set_xlim(0, max(runs[-1], 1))
        ax.set_title(f"explore {report.get('scenario', '?')}\ncoverage over time "
                     f"(search seed {report.get('search_seed')})")
        fig.tight_layout()
        return save(fig, path)
