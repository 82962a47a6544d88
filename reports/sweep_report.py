"""The sweep section of an HTML report: violation-rate heatmaps, latency vs parameter, failing seeds.

Contract: `render_sweep_section(dir)` reads DIR/sweep.json (written by `epochsim sweep`) and
returns an HTML fragment (no <html>/<body>): per scenario, a heatmap of each broken invariant's
violation rate over the first two grid keys that vary (one panel per combination of the other
keys, at most `MAX_PANELS`) and the same surface of the median produce p99, or a rate-vs-value
plot with Wilson 95% bars when only one key varies; the median over runs of the per-run produce
p99 (with a 95% interval for that median where the cell had the runs for one) against a
varying key (numeric ones first); a key without order (a boolean switch, a string) is drawn as
grouped bars, a numeric one as a line; every axis is named by its full grid key; the cell table
(cells by their values); and the failing seeds with their repro lines.
Pictures are embedded base64 PNGs drawn headless. It reads only sweep.json, never the model,
so a sweep run elsewhere can be reported here. Same sweep.json, same fragment.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
from html import escape

from invariants.recovery import judged_shares
from reports.style import drawing, new_figure, read_json

MAX_PANELS = 6
MAX_SERIES = 8
MAX_FAILING_ROWS = 60
P99 = "produce_latency_p99_ms"


class SweepData:
    """sweep.json with lookups by (scenario, params) and (scenario, cell, invariant)."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.grid = doc["spec"].get("grid", {})
        self.keys = list(doc.get("grid_keys") or self.grid)
        self.varying = [k for k in self.keys if len(self.grid.get(k, [])) > 1]
        self.cell_of = {(c["scenario"], _canon(c["params"])): c["cell"] for c in doc["cells"]}
        self.rates = {(r["scenario"], r["cell"], r["invariant"]): r
                      for r in doc["violation_rates"]}
        self.metrics = {(m["scenario"], m["cell"]): m for m in doc["cell_metrics"]}

    def broken(self, scenario: str) -> list[str]:
        return sorted({r["invariant"] for r in self.doc["violation_rates"]
                       if r["scenario"] == scenario and r["violations"]})

    def cell(self, scenario: str, params: dict) -> str | None:
        return self.cell_of.get((scenario, _canon(params)))

    def panels(self, fixed_keys: list[str]) -> list[dict]:
        """Combinations of the values of `fixed_keys` (at most MAX_PANELS)."""
        combos = itertools.product(*(self.grid[k] for k in fixed_keys))
        return [dict(zip(fixed_keys, c)) for c in itertools.islice(combos, MAX_PANELS)]


def _canon(params: dict) -> str:
    return json.dumps(params, sort_keys=True)


def _label(value) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _img(uri: str, alt: str) -> str:
    return f'<img alt="{escape(alt)}" src="{uri}">'


def _panel_title(panel: dict) -> str:
    return ", ".join(f"{k} = {_label(v)}" for k, v in panel.items())


# -- pictures --------------------------------------------------------------------------------

def heatmap(data: SweepData, scenario: str, invariant: str, panel: dict) -> str:
    """Rate of `invariant` over the first two varying keys, others fixed at `panel`."""
    def value(cell):
        r = data.rates.get((scenario, cell, invariant))
        if not r:
            return None, ""
        return r["rate"], (f"{100 * r['rate']:.0f}%\n"
                           f"[{100 * r['ci_low']:.0f}-{100 * r['ci_high']:.0f}]")
    return _surface(data, scenario, panel, value, title=invariant, label="violation rate",
                    cmap="Reds", vmax=1.0)


def latency_heatmap(data: SweepData, scenario: str, panel: dict) -> str:
    """Median over runs of the per-run produce p99 over the first two varying keys."""
    def value(cell):
        v = data.metrics.get((scenario, cell), {}).get(f"median_{P99}")
        return (None, "") if v is None else (v, f"{v:.0f}")
    return _surface(data, scenario, panel, value, title="produce p99 ms (median over runs)",
                    label="ms", cmap="viridis", vmax=None)


def _surface(data: SweepData, scenario: str, panel: dict, value, title: str, label: str,
             cmap: str, vmax) -> str:
    """A heatmap of `value(cell) -> (number, text)` over the first two varying keys."""
    ky, kx = data.varying[0], data.varying[1]
    ys, xs = data.grid[ky], data.grid[kx]
    cells = [[value(data.cell(scenario, {**panel, ky: y, kx: x})) for x in xs] for y in ys]
    numbers = [[float("nan") if v is None else v for v, _ in row] for row in cells]
    top = vmax if vmax is not None else max((v for row in cells for v, _ in row
                                             if v is not None), default=1.0) or 1.0
    with drawing():
        fig = new_figure(1.4 + 1.1 * len(xs), 1.2 + 0.55 * len(ys))
        ax = fig.add_subplot(1, 1, 1)
        image = ax.imshow(numbers, vmin=0.0, vmax=top, cmap=cmap, aspect="auto")
        for i, row in enumerate(cells):
            for j, (v, text) in enumerate(row):
                if v is not None:
                    dark = (v / top > 0.55) == (cmap == "Reds")
                    ax.text(j, i, text, ha="center", va="center", fontsize=7,
                            color="white" if dark else "black")
        ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
        ax.set_yticks(range(len(ys)), [_label(y) for y in ys])
        ax.set_xlabel(kx)
        ax.set_ylabel(ky)
        ax.set_title(title + (f"  ({_panel_title(panel)})" if panel else ""))
        fig.colorbar(image, ax=ax, fraction=0.05, label=label)
        fig.tight_layout()
        return _png(fig)


def categorical(values: list) -> bool:
    """Values without an order to draw a line through: booleans (a switch), strings."""
    return not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _series(ax, n: int, total: int, xs: list, ys: list, low: list, high: list, label,
            bars: bool) -> None:
    """One series against the x positions `xs`: grouped bars for a categorical key (a switch
    is two states, not a slope), a connected line otherwise; error bars from `low`/`high`."""
    if bars:
        width = 0.8 / max(1, total)
        at = [x - 0.4 + width * (n + 0.5) for x in xs]
        ax.bar(at, ys, width=width * 0.9, yerr=[low, high], capsize=3, label=label,
               color=f"C{n % 10}", error_kw={"elinewidth": 0.8})
    else:
        ax.errorbar([x + 0.04 * n for x in xs], ys, yerr=[low, high], marker="o", capsize=3,
                    label=label, color=f"C{n % 10}")


def rate_figure(data: SweepData, scenario: str, invariants: list[str], panel: dict):
    """Rate of each invariant against the one varying key, with Wilson 95% bars (inside
    `drawing()`)."""
    key = data.varying[0]
    xs = data.grid[key]
    fig = new_figure(5.5, 2.8)
    ax = fig.add_subplot(1, 1, 1)
    for n, inv in enumerate(invariants):
        pts = [(i, data.rates.get((scenario, data.cell(scenario, {**panel, key: x}), inv)))
               for i, x in enumerate(xs)]
        pts = [(i, r) for i, r in pts if r]
        _series(ax, n, len(invariants), [i for i, _ in pts], [r["rate"] for _, r in pts],
                [r["rate"] - r["ci_low"] for _, r in pts],
                [r["ci_high"] - r["rate"] for _, r in pts], inv, categorical(xs))
    ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
    ax.set_xlabel(key)
    ax.set_ylabel("violation rate")
    ax.set_ylim(-0.02 if not categorical(xs) else 0, 1.02)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def rate_plot(data: SweepData, scenario: str, invariants: list[str], panel: dict) -> str:
    with drawing():
        return _png(rate_figure(data, scenario, invariants, panel))


def x_key(data: SweepData) -> str:
    """The varying key for an x axis: numeric values first, then the most values."""
    def rank(key):
        return (not categorical(data.grid[key]), len(data.grid[key]))
    return max(data.varying, key=rank)  # max keeps the first of equals: grid order


def latency_figure(data: SweepData, scenario: str):
    """Median over runs of the per-run p99 against `x_key`, one series per combination of
    the other varying keys (inside `drawing()`), with the 95% interval of that median where
    the cell had the runs for one (`epochsim.sweep.aggregate.median_interval_sql`)."""
    key = x_key(data)
    others = [k for k in data.varying if k != key]
    xs = data.grid[key]
    fig = new_figure(5.5, 3.0)
    ax = fig.add_subplot(1, 1, 1)
    combos = list(itertools.islice(itertools.product(*(data.grid[k] for k in others)),
                                   MAX_SERIES))
    for n, combo in enumerate(combos):
        fixed = dict(zip(others, combo))
        pts = []
        for i, x in enumerate(xs):
            m = data.metrics.get((scenario, data.cell(scenario, {**fixed, key: x})), {})
            median = m.get(f"median_{P99}")
            if median is not None:
                low, high = m.get(f"ci_low_median_{P99}"), m.get(f"ci_high_median_{P99}")
                if low is None or high is None:  # too few runs: no interval, no bar
                    low = high = median
                pts.append((i, median, low, high))
        if pts:
            _series(ax, n, len(combos), [p[0] for p in pts], [p[1] for p in pts],
                    [p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts],
                    _panel_title(fixed) or None, categorical(xs))
    ax.set_xticks(range(len(xs)), [_label(x) for x in xs])
    ax.set_xlabel(key)
    ax.set_ylabel("produce p99 (ms), median over runs\nwith its 95% interval", fontsize=7)
    if others:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def latency_plot(data: SweepData, scenario: str) -> str:
    with drawing():
        return _png(latency_figure(data, scenario))


# -- tables ----------------------------------------------------------------------------------

def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _rate_html(r: dict | None) -> str:
    if not r:
        return "-"
    text = f"{100 * r['rate']:.1f}% [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"
    return f'<span class="bad">{text}</span>' if r["violations"] else escape(text)


def p99_text(m: dict) -> str:
    """The median of the runs' p99 in ms, with its 95% interval when there is one."""
    p99 = m.get(f"median_{P99}")
    if p99 is None:
        return "-"
    low, high = m.get(f"ci_low_median_{P99}"), m.get(f"ci_high_median_{P99}")
    return f"{p99:.1f}" + ("" if low is None or high is None else f" [{low:.1f}, {high:.1f}]")


def cell_table(data: SweepData, scenario: str) -> str:
    broken = data.broken(scenario)
    rows = []
    for c in (c for c in data.doc["cells"] if c["scenario"] == scenario):
        m = data.metrics.get((scenario, c["cell"]), {})
        rows.append([escape(_label(c["params"].get(k))) for k in data.keys]
                    + [escape(str(m.get("runs", 0)))]
                    + [_rate_html(data.rates.get((scenario, c["cell"], inv))) for inv in broken]
                    + [escape(judged_shares(m)), p99_text(m)])
    # a cell is named by its values; its id is only a file name (cells/<scenario>-<id>.toml)
    return _table([*data.keys, "runs", *broken, "liveness judged U/P/C % of runs",
                   "p99 ms (median)"], rows)


def _trace_link(path: str, out_dir: str, trace_dir: str | None, write_page=None) -> str:
    """A link to the run page of a kept trace (`write_page(run_dir)` writes it beside the
    trace and returns its path; without one, the trace directory is linked), or words."""
    if not trace_dir:
        return "not kept"
    run_dir = trace_dir
    if not os.path.isfile(os.path.join(run_dir, "trace.jsonl")):  # the sweep ran elsewhere:
        at = trace_dir.replace(os.sep, "/").rfind("traces/")      # find it under this one
        run_dir = os.path.join(path, trace_dir[at:]) if at >= 0 else run_dir
    if not os.path.isfile(os.path.join(run_dir, "trace.jsonl")):
        return f"<code>{escape(trace_dir)}</code> (gone)"
    target, what = (write_page(run_dir), "run page") if write_page else (run_dir, "trace")
    href = os.path.relpath(target, out_dir).replace(os.sep, "/")
    return f'<a href="{escape(href)}">{what}</a> <code>{escape(trace_dir)}</code>'


def failing_table(data: SweepData, scenario: str, path: str = ".", out_dir: str = ".",
                  write_page=None) -> str:
    params = {c["cell"]: c["params"] for c in data.doc["cells"] if c["scenario"] == scenario}
    rows = []
    for f in (f for f in data.doc["failing"] if f["scenario"] == scenario):
        if len(rows) >= MAX_FAILING_ROWS:
            break
        shown = ", ".join(f"{k} = {_label(v)}" for k, v in params.get(f["cell"], {}).items())
        trace = _trace_link(path, out_dir, f.get("trace_dir"), write_page)
        rows.append([escape(f["invariant"]), escape(shown), escape(str(f["seed"])),
                     escape(f.get("first_message") or ""),
                     f"<code>{escape(f['repro'])}</code>", trace])
    if not rows:
        return '<p class="ok">No run broke an invariant.</p>'
    return _table(["invariant", "cell", "seed", "first violation", "repro", "trace"], rows)


# -- the section -----------------------------------------------------------------------------

def _pictures(data: SweepData, scenario: str) -> list[str]:
    broken = data.broken(scenario)
    parts = []
    if len(data.varying) >= 2:
        panels = data.panels(data.varying[2:])
        for inv in broken:
            parts += [_img(heatmap(data, scenario, inv, p), f"{inv} rate heatmap") for p in panels]
        parts += [_img(latency_heatmap(data, scenario, p), "produce p99 surface") for p in panels]
    elif len(data.varying) == 1 and broken:
        parts.append(_img(rate_plot(data, scenario, broken, {}), "violation rates"))
    if data.varying:
        parts.append(_img(latency_plot(data, scenario), "produce p99 against the grid"))
    return parts


def _header(doc: dict) -> list[str]:
    spec, totals = doc["spec"], doc["totals"]
    parts = [f"<h1>Sweep {escape(spec.get('name', ''))}</h1>"]
    if spec.get("description"):
        parts.append(f"<p>{escape(spec['description'])}</p>")
    parts.append(f"<p>{totals['runs']} runs over {len(doc['cells'])} cells "
                 f"({spec.get('seeds')} seeds from {spec.get('first_seed')}); "
                 f"{totals['violating_runs']} runs broke an invariant. Rates show the Wilson "
                 "95% interval in brackets.</p>")
    for m in doc.get("replay_mismatches", []):
        parts.append(f'<p class="bad">Not deterministic: {escape(m["scenario"])}-'
                     f'{escape(m["cell"])} seed {m["seed"]} replayed to a different trace.</p>')
    drift = doc.get("default_drift", [])
    if drift:  # the cells differ in more than the grid: say so before the rates are read
        parts.append("<p>The cells also differ in Kafka's defaults per release (the base "
                     "scenarios leave these out; write them there to compare the grid keys "
                     "alone):</p><ul>" + "".join(f"<li>{escape(line)}</li>" for line in drift)
                     + "</ul>")
    return parts


def render_sweep_section(path: str, out_dir: str | None = None, write_page=None) -> str:
    """The HTML fragment for the sweep in directory `path` (see the module contract), its
    links relative to `out_dir`, where the page goes (default: `path`); `write_page` writes a
    kept trace's run page (`reports.html.write_report`, passed in: html imports this module)."""
    out_dir = path if out_dir is None else out_dir
    doc = read_json(os.path.join(path, "sweep.json"))
    data = SweepData(doc)
    parts = _header(doc)
    for base in doc["spec"]["scenarios"]:
        name = base["name"]
        parts.append(f"<h2>{escape(name)} <span class=\"muted\">({escape(base['path'])})</span></h2>")
        parts += _pictures(data, name)
        parts += [cell_table(data, name), "<h3>Failing seeds</h3>", failing_table(data, name, path, out_dir, write_page)]
    return "\n".join(parts)
