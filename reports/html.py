"""Self-contained HTML reports for a run, a suite or a sweep directory.

Contract: `write_report(dir, out=None)` writes `out` (default DIR/report.html) and returns
its path. The page depends on what DIR holds:
- `trace.jsonl` (+ `verdict.json`): a run page with the verdict, the repro command, the
  violations, the story, the timeline (in a KRaft run, with each broker's metadata lag), the
  sequence diagram, the events table and metrics;
- `suite.json`: one row per scenario with its outcome, linking to a run page for every run
  that missed its expectation (those pages are written beside their traces);
- `sweep.json`: the section `reports.sweep_report.render_sweep_section(dir)` returns, or a
  note when that module is not installed.
Pictures are embedded as base64 PNG data URIs; the page loads nothing from anywhere else. A
run page links its interactive timeline (`reports.interactive`), written beside it as
`timeline.html` (`NAME-timeline.html` beside a page named NAME.html).
The same inputs give the same page. Raises ReportError when DIR holds none of these.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import tempfile
from html import escape

from invariants.recovery import judged_summary
from reports import interactive, metadata_log, sequence, story, timeline
from reports.rundata import Run, load_run
from reports.style import ReportError, output_folder, read_json, replaceable, seconds
from sim.core.files import write_text

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 24px auto;
       max-width: 1440px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px;
     border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.ok { color: #2ca02c; } .bad { color: #d62728; } .muted { color: #777; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #e0e0e0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f5f7fa; } tr.witness td { background: #fdecea; font-weight: 600; }
pre { background: #f5f7fa; padding: 8px 12px; border-radius: 4px; overflow-x: auto; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
ol.story li { margin: 3px 0; font-family: ui-monospace, monospace; font-size: 13px; }
"""


def write_report(path: str, out: str | None = None) -> str:
    """Write the report page of a run, suite or sweep directory; returns the page's path."""
    if not os.path.isdir(path):
        raise ReportError(f"{path}: not a directory; pass a run, suite or sweep output directory")
    out = output_folder(replaceable(out or os.path.join(path, "report.html")))
    body = _sections(path, os.path.abspath(out))
    write_text(out, page(_title(path), body))
    return out


def _sections(path: str, out: str) -> str:
    parts = []
    out_dir = os.path.dirname(out)
    if os.path.isfile(os.path.join(path, "trace.jsonl")):
        run = load_run(os.path.join(path, "trace.jsonl"))
        run.warn_if_cut_short()
        live = interactive.write_interactive(run.trace_path, interactive.page_beside(out), run)
        parts.append(run_section(run, os.path.basename(live)))
    if os.path.isfile(os.path.join(path, "explore.json")):
        parts.insert(0, explore_section(path, out_dir))
    if os.path.isfile(os.path.join(path, "suite.json")):
        parts.append(suite_section(path, out_dir))
    if os.path.isfile(os.path.join(path, "sweep.json")):
        parts.append(sweep_section(path, out_dir))
    if not parts:
        raise ReportError(f"{path}: holds no trace.jsonl, suite.json or sweep.json; pass the "
                          "--out directory of `epochsim run`, `suite` or `sweep`")
    return "\n".join(parts)


def _title(path: str) -> str:
    return f"epochsim report: {os.path.basename(os.path.abspath(path))}"


def page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"generator\" content=\"epochsim\">\n"
            f"<title>{escape(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n"
            "</body>\n</html>\n")


def table(headers: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """An HTML table; cells are already-escaped HTML."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def png_data_uri(draw, *args, **kw) -> str:
    """Call `draw(..., out_path, ...)` into a temporary PNG and return it as a data URI."""
    with tempfile.TemporaryDirectory(prefix="epochsim-report-") as tmp:
        out = os.path.join(tmp, "picture.png")
        draw(*args, out, **kw)
        with open(out, "rb") as fh:
            data = base64.b64encode(fh.read()).decode("ascii")
    return f"data:image/png;base64,{data}"


# -- run ------------------------------------------------------------------------------------

def repro_command(run: Run) -> str:
    v = run.verdict or {}
    scenario_path = v.get("scenario_path") or f"scenarios/{run.scenario}.toml"
    return f"epochsim run {shlex.quote(scenario_path)} --seed {run.header.get('seed')}"


def run_section(run: Run, live_href: str | None = None) -> str:
    """The run's part of the page; `live_href` links its interactive timeline."""
    status = f'<span class="{"ok" if run.clean else "bad"}">{escape(run.status())}</span>'
    parts = [f"<h1>{escape(run.scenario)} \u00b7 seed {escape(str(run.header.get('seed')))}</h1>",
             f"<p>{status}</p>", _verdict_table(run),
             "<h2>Reproduce</h2>", f"<pre>{escape(repro_command(run))}</pre>"]
    if run.violations:
        parts += ["<h2>Violations</h2>", _violations_table(run)]
        parts += ["<h2>What happened</h2>", _story_html(run)]
    parts.append("<h2>Failover timeline</h2>")
    if live_href:
        parts.append(f'<p><a class="live" href="{escape(live_href)}">Open the interactive '
                     "timeline</a>: zoom, pan, hover an event for its fields, filter by node "
                     "or partition, jump from a violation to its events.</p>")
    parts.append(f'<img alt="failover timeline" src="{png_data_uri(timeline.plot_run, run)}">')
    parts.append(_metadata_lag(run))
    parts += ["<h2>Messages around the first violation</h2>" if run.violations
              else "<h2>Messages around the first fault</h2>",
              f'<img alt="sequence diagram" src="{png_data_uri(sequence.plot_run_sequence, run)}">']
    parts += ["<h2>Events</h2>", _events_table(run), _metrics(run)]
    return "\n".join(parts)


def _versions_text(protocol: dict) -> str:
    """Per-node versions as the header records them: ", IBP 2.5; b1 1.0, p1 2.5", or ""."""
    ibp = protocol.get("inter_broker_protocol")
    nodes = protocol.get("nodes") if isinstance(protocol.get("nodes"), dict) else {}
    text = f", IBP {ibp}" if ibp else ""
    if nodes:
        text += "; " + ", ".join(f"{name} {node.get('profile')}" for name, node in nodes.items()
                                 if isinstance(node, dict))
    return text


def _verdict_table(run: Run) -> str:
    h, v = run.header, run.verdict or {}
    protocol = h.get("options", {}).get("protocol", {})
    rows = [["scenario", escape(run.scenario)], ["seed", escape(str(h.get("seed")))],
            ["profile", escape(str(protocol.get("profile")) + _versions_text(protocol))],
            ["expectation", escape(str(h.get("expect", v.get("expect"))))]]
    if "expectation_met" in v:
        met = v["expectation_met"]
        note = f" ({escape(str(v['expectation_note']))})" if v.get("expectation_note") else ""
        rows.append(["expectation met", f'<span class="{"ok" if met else "bad"}">'
                                        f'{"yes" if met else "NO"}</span>{note}'])
    if v.get("trace_digest"):
        rows.append(["trace digest", f"<code>{escape(v['trace_digest'])}</code>"])
    rows.append(["events", f"{len(run.events)} ({seconds(run.end_us)} simulated)"])
    if not v:
        rows.append(["verdict", "no verdict.json beside the trace: violations re-checked"])
    return table(["", ""], rows)


def _violations_table(run: Run, limit: int = 50) -> str:
    rows = [[escape(v["invariant"]), seconds(v["t_us"]), escape(v["message"]),
             escape(", ".join(map(str, v["seqs"])))] for v in run.violations[:limit]]
    more = len(run.violations) - limit
    note = f'<p class="muted">and {more} more</p>' if more > 0 else ""
    return table(["invariant", "time", "what", "witness events (seq)"], rows) + note


def _story_html(run: Run) -> str:
    items = "".join(f"<li>{escape(s)}</li>" for s in story.story(run))
    return f'<ol class="story">{items}</ol>'


def _events_table(run: Run) -> str:
    rows = story.events_table(run)
    cells = [[str(r["seq"]), r["time"], escape(r["node"]), escape(r["kind"]), escape(r["text"]),
              escape(", ".join(r["witness"]))] for r in rows]
    classes = ["witness" if r["witness"] else "" for r in rows]
    return table(["seq", "time", "node", "kind", "what happened", "witness of"], cells, classes)


def _metadata_lag(run: Run) -> str:
    """KRaft runs: how far behind each broker's metadata was ("" in ZooKeeper mode)."""
    log = metadata_log.fold(run.events, run.end_us)
    if not log:
        return ""
    cells = [[escape(c) for c in row] for row in metadata_log.summary_cells(log)]
    return ("<h2>Metadata lag (KRaft)</h2><p>Each broker applies the metadata log when it "
            "fetches it: how far behind the committed high watermark each one fell, and how long "
            "committed records waited before it applied them. Quorum leaders: "
            f"{escape(metadata_log.leaders_text(log))}.</p>"
            + table(list(metadata_log.SUMMARY_HEADERS), cells))


def _metrics(run: Run) -> str:
    metrics = (run.verdict or {}).get("metrics")
    if not metrics:
        return ""
    rows = [[escape(k), escape(json.dumps(metrics[k], sort_keys=True))] for k in sorted(metrics)]
    return "<h2>Metrics</h2>" + table(["metric", "value"], rows)


# -- explore --------------------------------------------------------------------------------

def explore_section(path: str, out_dir: str) -> str:
    """What a search did: found or not, in how many runs, the shrunk counterexample (linked,
    with the command that replays it) and the coverage curve; the run section that follows is
    the counterexample's replay."""
    from reports.coverage_curve import plot_coverage
    doc = read_json(os.path.join(path, "explore.json"))
    name, target = escape(str(doc.get("scenario"))), escape(str(doc.get("target") or "any"))
    if doc.get("found"):
        head = (f"<h1>Explore {name}: {escape(str(doc.get('invariant')))} broken at run "
                f"{doc.get('runs_to_first_failure')} of {doc.get('runs_generated')}</h1>")
    else:
        head = (f"<h1>Explore {name}: {target} held in all {doc.get('runs_generated')} "
                f"generated runs</h1>")
    parts = [head]
    case = os.path.join(path, "counterexample.toml")
    if os.path.isfile(case):
        href = escape(os.path.relpath(case, out_dir).replace(os.sep, "/"))
        parts.append(f'<p>Shrunk counterexample: <a href="{href}">counterexample.toml</a>, '
                     f"replayed below (<code>epochsim run {escape(case)}</code>).</p>")
    if doc.get("coverage_over_time"):
        parts.append("<h2>Coverage over time</h2>")
        parts.append(f'<img alt="coverage over time" '
                     f'src="{png_data_uri(plot_coverage, os.path.join(path, "explore.json"))}">')
    return "\n".join(parts)


# -- suite ----------------------------------------------------------------------------------

def suite_section(path: str, out_dir: str) -> str:
    """The suite's rows grouped by the KIP or ticket their names start with (the legacy and
    fixed scenario of a pair next to each other), each row linking the page of every run the
    suite kept: the first run of a scenario that expects a violation (its story) and every
    run that missed its expectation."""
    suite = read_json(os.path.join(path, "suite.json"))
    links = _kept_run_pages(path, suite.get("runs", []), out_dir)
    groups: dict[str, list] = {}
    for r in sorted(suite.get("rows", []), key=lambda r: str(r.get("scenario"))):
        groups.setdefault(suite_group(str(r.get("scenario"))), []).append(r)
    parts, met, total = [], 0, 0
    for group in sorted(groups):
        rows, classes = [], []
        for r in groups[group]:
            ok = r.get("met") == r.get("runs")
            met, total = met + ok, total + 1
            rows.append(_suite_row(r, ok, links))
            classes.append("" if ok else "witness")
        parts.append(f"<h2>{escape(group)}</h2>" + table(
            ["scenario", "expect", "outcome",
             "runs in which the liveness rules judged (U/P/C: under-replicated, "
             "produce stalled, consume stalled)", "seeds that violated an invariant",
             "runs kept (stories, and runs that missed their expectation)"], rows, classes))
    return f"<h1>Suite: {met}/{total} scenarios met their expectation</h1>" + "".join(parts)


def suite_group(name: str) -> str:
    """The KIP or ticket a scenario's name starts with (`kip570-...` -> `KIP-570`,
    `kafka13972-...` -> `KAFKA-13972`), else its first word (`mix`, `idem`, `finding`)."""
    head = name.split("-", 1)[0]
    for prefix, label in (("kip", "KIP-"), ("kafka", "KAFKA-")):
        if head.startswith(prefix) and head[len(prefix):].isdecimal():
            return label + head[len(prefix):]
    return head


def _suite_row(r: dict, ok: bool, links: dict) -> list[str]:
    outcome = f'<span class="{"ok" if ok else "bad"}">{r.get("met")}/{r.get("runs")} met</span>'
    mine = [lk for (name, _), lk in sorted(links.items()) if name == r.get("scenario")]
    return [escape(str(r.get("scenario"))), escape(str(r.get("expect"))), outcome,
            escape(judged_summary(r.get("liveness_judged") or {})),
            escape(", ".join(map(str, r.get("violating_seeds") or []))) or "none",
            " ".join(mine) or ("" if ok else escape(str(r.get("repro") or "")))]


def _kept_run_pages(path: str, runs: list[dict], out_dir: str) -> dict:
    """Write a run page for each run the suite kept on disk (a story, or a run that missed
    its expectation); {(scenario, seed): link}. A missed run whose trace is gone says so."""
    links = {}
    for r in runs:
        key = (str(r.get("scenario")), int(r.get("seed", 0)))
        # a met run is linked only when this suite kept it: an older run's seed-N is not its
        run_dir = _run_dir(path, r) if not r.get("expectation_met", True) or r.get("dir") \
            else None
        if run_dir is None:
            if not r.get("expectation_met", True):
                links[key] = f"seed {key[1]} (trace not kept)"
            continue
        page_path = write_report(run_dir)
        href = os.path.relpath(page_path, out_dir).replace(os.sep, "/")
        what = "story" if r.get("expectation_met", True) else "missed"
        links[key] = f'<a href="{escape(href)}">seed {key[1]} ({what})</a>'
    return links


def _run_dir(suite_dir: str, row: dict) -> str | None:
    candidates = [row.get("dir"),
                  os.path.join(suite_dir, str(row.get("scenario")), f"seed-{row.get('seed')}")]
    for d in candidates:
        if d and os.path.isfile(os.path.join(d, "trace.jsonl")):
            return d
    return None


# -- sweep ----------------------------------------------------------------------------------

def sweep_section(path: str, out_dir: str) -> str:
    try:
        from reports.sweep_report import render_sweep_section
    except ImportError as exc:
        return (f"<h1>Sweep</h1><p class=\"muted\">The sweep section is not available here "
                f"({escape(str(exc))}); the sweep tables are in {escape(path)}.</p>")
    return render_sweep_section(path, out_dir, write_report)
