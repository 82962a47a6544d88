"""The sweep summary printed at the end: one table per scenario, one line per cell.

Contract: `print_summary(document, out)` prints, from a sweep.json document, each scenario's
cells with their grid values, runs, the violation rate and Wilson 95% interval of every
invariant that any cell of that scenario broke, the share of runs in which each liveness rule
judged something (`judged U/P/C %`), and the median over runs of the produce p99 with its 95%
interval where the cell had the runs for one;
then a few repro lines, replay mismatches if any, and where the full results are.
"""

from __future__ import annotations

import sys

from invariants.recovery import judged_shares
from reports.sweep_report import p99_text  # the same words as the HTML table
from scenarios.toml_text import value_text

REPRO_LINES = 8


def rate_text(r: dict) -> str:
    return f"{100 * r['rate']:5.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"


def _cell_lines(doc: dict, scenario: str) -> list[str]:
    keys = doc["grid_keys"]
    rates = [r for r in doc["violation_rates"] if r["scenario"] == scenario]
    broken = sorted({r["invariant"] for r in rates if r["violations"]})
    by = {(r["cell"], r["invariant"]): r for r in rates}
    metrics = {m["cell"]: m for m in doc["cell_metrics"] if m["scenario"] == scenario}
    # cells by their values under their full keys (a cell's id names only its file)
    head = (list(keys) + ["runs"] + broken
            + ["judged U/P/C %", "p99 ms (median [95% interval])"])
    table = [head]
    for cell in (c for c in doc["cells"] if c["scenario"] == scenario):
        m = metrics.get(cell["cell"], {})
        row = [value_text(cell["params"][k]) for k in keys]
        row += [str(m.get("runs", 0))]
        row += [rate_text(by[(cell["cell"], inv)]) if (cell["cell"], inv) in by else "-"
                for inv in broken]
        row.append(judged_shares(m))
        row.append(p99_text(m))
        table.append(row)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in table]


def print_summary(doc: dict, out: str, stream=None) -> None:
    stream = stream or sys.stdout
    t = doc["totals"]
    print(f"sweep {doc['spec']['name']}: {t['runs']} runs ({t['rows']} rows) over "
          f"{len(doc['cells'])} cells; {t['violating_runs']} runs broke an invariant",
          file=stream)
    for base in doc["spec"]["scenarios"]:
        print(f"\n{base['name']} ({base['path']})", file=stream)
        for line in _cell_lines(doc, base["name"]):
            print("  " + line, file=stream)
    failing = doc["failing"]
    if failing:
        print("\nfailing seeds (first per cell and invariant):", file=stream)
        seen = set()
        shown = 0
        for f in failing:
            group = (f["scenario"], f["cell"], f["invariant"])
            if group in seen or shown >= REPRO_LINES:
                continue
            seen.add(group)
            shown += 1
            print(f"  {f['invariant']} seed {f['seed']}: {f['repro']}", file=stream)
    for m in doc["replay_mismatches"]:
        print(f"NOT deterministic: {m['scenario']}-{m['cell']} seed {m['seed']} replayed to "
              f"{m['replay_digest'][:16]}, the worker's row says {m['worker_digest'][:16]}",
              file=stream)
    print(f"\nwrote {out}/sweep.json, rows in {out}/rows/, cell scenarios in {out}/cells/",
          file=stream)
