"""The interactive timeline: one self-contained HTML page a user zooms, pans and filters.

Contract: `write_interactive(trace_path, out_path, run=None)` writes `out_path` (an .html
file epochsim may replace, `reports.style.replaceable`) and returns it. The page holds the
trace's events and violations as JSON and its own script and style inline, so it opens with
no network, from a mail or an issue. In the browser: one lane per node (the nemesis, the
controllers, the brokers, the clients), an event a tick coloured by what it is; the mouse
wheel zooms around the pointer, a drag pans, hovering an event shows its fields, node boxes
and a partition menu filter, and a click on a violation zooms to its witnesses and scrolls
the events list to them. Drawing is on a canvas and only the events in view are visited
(`static/timeline.js`), so traces of 100,000 events stay fast.

In a KRaft run the page also plots, under the lanes and on their time axis, the metadata log
(committed high watermark, quorum leaders, each broker's applied offset) and each broker's
records behind it, with a table of each broker's lag (`reports.metadata_log`,
`static/metadata.js`); a ZooKeeper-mode page has none of it.

A trace of more than `MAX_EVENTS` events keeps its control plane whole and drops the data
plane (fetches, produce requests, replication, high watermarks); if that is still too many,
events past the limit are left out. The page says what it left out. The same trace gives
the same page, byte for byte.
"""

from __future__ import annotations

import json
import os
from html import escape

from reports import metadata_log
from reports.model import node_key
from reports.rundata import Run, fold_run
from reports.style import output_folder, replaceable
from sim.core.files import write_text

MAX_EVENTS = 300_000
DATA_MSGS = frozenset({"Fetch", "FetchResponse", "Produce", "ProduceResponse"})
DATA_KINDS = frozenset({"batch", "batch_grown", "hw", "replicate", "append", "produce_result",
                        "log_start", "consume"})
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


class _Collector:
    """Keeps each event's compact JSON while the trace streams by, trimming to MAX_EVENTS."""

    def __init__(self, limit: int = MAX_EVENTS):
        self.limit = limit
        self.kept: list[tuple[bool, str]] = []
        self.data_mids: set[int] = set()
        self.trimmed = False      # the data plane is left out
        self.cut_at: int | None = None  # events from this time on are left out
        self.total = 0
        self.nodes: set[str] = set()
        self.meta_log = metadata_log.MetadataLogFold()  # KRaft: whole, whatever is trimmed

    def is_data(self, ev: dict) -> bool:
        kind = ev["kind"]
        if kind == "send" and ev.get("msg") in DATA_MSGS:
            self.data_mids.add(ev["mid"])
            return True
        if kind == "deliver":
            return ev.get("mid") in self.data_mids
        return kind in DATA_KINDS

    def __call__(self, ev: dict) -> None:
        self.total += 1
        self.nodes.add(str(ev.get("node", "-")))
        if ev["kind"] in metadata_log.KINDS:
            self.meta_log.step(ev)
        data = self.is_data(ev)
        if self.cut_at is not None or (self.trimmed and data):
            return
        if len(self.kept) >= self.limit:
            if not self.trimmed:
                self.trimmed = True
                self.kept = [k for k in self.kept if not k[0]]
            if data:
                return
            if len(self.kept) >= self.limit:
                self.cut_at = ev["t"]
                return
        self.kept.append((data, json.dumps(ev, separators=(",", ":"), ensure_ascii=False)))

    def note(self) -> str:
        """What the page leaves out, in words ("" when it holds every event)."""
        parts = []
        if self.trimmed:
            parts.append("the data plane (fetches, produce requests, replication, high "
                         "watermarks) is left out")
        if self.cut_at is not None:
            parts.append(f"events from {self.cut_at / 1e6:.3f}s on are left out")
        if not parts:
            return ""
        return (f"{len(self.kept):,} of {self.total:,} events shown: " + "; ".join(parts)
                + f" (more than {self.limit:,} events). Use `epochsim plot --window` for the rest.")


def lane_order(nodes) -> list[str]:
    """The nemesis first, then controllers, brokers and clients (`node_key`), the harness last."""
    first = [n for n in ("nemesis",) if n in nodes]
    last = [n for n in ("harness",) if n in nodes]
    return first + sorted((n for n in nodes if n not in first + last), key=node_key) + last


def payload(run: Run, collector: _Collector) -> str:
    """The page's data as one JSON text, safe inside a <script> element."""
    lines = [line for _, line in collector.kept]
    meta = {
        "scenario": run.scenario, "seed": run.header.get("seed"), "status": run.status(),
        "profile": run.header.get("options", {}).get("protocol", {}).get("profile"),
        "end_us": run.end_us, "nodes": lane_order(collector.nodes), "note": collector.note(),
        "violations": [{"invariant": v["invariant"], "t_us": v["t_us"],
                        "message": v["message"], "seqs": list(v["seqs"])}
                       for v in run.violations],
    }
    head = json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    text = head[:-1] + ',"events":[' + ",".join(lines) + "]}"
    # "<" only occurs inside JSON strings, where \u003c means the same: no "</script>"
    return text.replace("<", "\\u003c")


def _static(name: str) -> str:
    with open(os.path.join(STATIC, name), encoding="utf-8") as fh:
        return fh.read()


def render(run: Run, collector: _Collector) -> str:
    """The whole page as text."""
    title = f"{run.scenario} \u00b7 seed {run.header.get('seed')}: interactive timeline"
    body, extra, style = _static("timeline.html"), "", _static("timeline.css")
    log = collector.meta_log.finish(run.end_us)
    if log:  # KRaft: its plots go under the lanes; their script listens before the lanes draw
        body = body.replace('<div id="legend"></div>',
                            '<div id="legend"></div>\n' + metadata_section(log), 1)
        data = json.dumps(metadata_log.to_json(log), separators=(",", ":")).replace("<", "\\u003c")
        style += _static("metadata.css")
        extra = (f"<script type=\"application/json\" id=\"epochsim-metadata\">{data}</script>\n"
                 f"<script>{_static('metadata.js')}</script>\n")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"generator\" content=\"epochsim\">\n"
        f"<title>{escape(title)}</title>\n<style>{style}</style>\n"
        f"</head>\n<body>\n{body}\n"
        f"<script type=\"application/json\" id=\"epochsim-data\">{payload(run, collector)}"
        f"</script>\n{extra}<script>{_static('timeline.js')}</script>\n</body>\n</html>\n")


def metadata_section(log) -> str:
    """The KRaft part of the page: the plots' canvas, its readout and legend, the lag table."""
    head = "".join(f"<th>{escape(h)}</th>" for h in metadata_log.SUMMARY_HEADERS)
    rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                   for row in metadata_log.summary_cells(log))
    return ('<h2 id="metadata">KRaft metadata log and each broker\'s lag</h2>\n'
            '<div id="metadata-chart"><canvas id="metadata-lanes"></canvas></div>\n'
            '<div id="metadata-legend" class="legend"></div>\n'
            '<p id="metadata-readout" class="muted">Hover the plots: the high watermark and '
            "each broker's offset at that time.</p>\n"
            f'<p class="muted">Quorum leaders: {escape(metadata_log.leaders_text(log))}</p>\n'
            f'<table id="metadata-summary"><tr>{head}</tr>{rows}</table>')


def write_interactive(trace_path: str, out_path: str, run: Run | None = None,
                      limit: int = MAX_EVENTS) -> str:
    """Write the interactive timeline of the trace at `trace_path` (or of `run`, when it is
    already loaded with all its events); returns `out_path`."""
    output_folder(replaceable(out_path))
    collector = _Collector(limit)
    if run is not None and isinstance(run.events, list):
        for ev in run.events:
            collector(ev)
    else:
        run = fold_run(trace_path, collector)
    write_text(out_path, render(run, collector))
    return out_path


def page_beside(report_path: str) -> str:
    """Where the interactive timeline of a run's report page goes: `timeline.html` beside a
    `report.html`, `NAME-timeline.html` beside any other `NAME.html`."""
    folder, name = os.path.split(report_path)
    stem = os.path.splitext(name)[0]
    return os.path.join(folder, "timeline.html" if stem == "report" else f"{stem}-timeline.html")
