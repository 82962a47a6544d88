"""Where two runs part: the first event at which two traces differ, and how they differ after.

Contract: `diff_traces(path_a, path_b, context)` reads both traces (each a trace.jsonl or a run
directory holding one) and returns a `TraceDiff`:
- `setup`: the header members that differ, as (dotted key, value in A, value in B), options
  flattened to their leaves and the fault schedule compared step by step;
- `shared`: how many events both traces have in common from the start (events are equal when
  every field is, `seq` and `t` included), and `before`: the last `context` of them; with
  `kinds`, only the events of those kinds count, compared without their `seq`;
- `first`: the first differing event of each trace (None for a trace that ended there);
- `runs`: each trace as a `reports.rundata.Run` (its status: violations, cut short), with
  `counts`: events by kind, over the whole trace.
Traces are streamed, so runs of millions of events are compared without holding them. Bad
input raises `sim.core.trace.TraceError`. `render(diff)` gives the lines `epochsim diff`
prints; nothing here writes anything.
"""

from __future__ import annotations

import json
from collections import Counter, deque
from dataclasses import dataclass

from invariants.shapes import read_checked
from reports.rundata import Run, fold_run, resolve_trace
from reports.style import seconds
from reports.words import describe

SETUP_LINES = 12  # differing header keys shown before "... and N more"
KIND_LINES = 10  # kinds whose counts differ, largest change first
FIELD_LINES = 6  # differing fields of two events of the same kind


@dataclass
class TraceDiff:
    paths: tuple[str, str]
    setup: list[tuple[str, object, object]]
    shared: int
    before: list[dict]
    first: tuple[dict | None, dict | None]
    runs: tuple[Run, Run]
    counts: tuple[Counter, Counter]
    kinds: frozenset | None = None

    @property
    def same_events(self) -> bool:
        return self.first == (None, None)


def diff_traces(path_a: str, path_b: str, context: int = 3,
                kinds: frozenset | None = None) -> TraceDiff:
    """With `kinds`, only events of those kinds are compared, each stream on its own, and
    their `seq` is left out of the comparison (other events in between shift it)."""
    a, b = resolve_trace(path_a), resolve_trace(path_b)
    header_a, events_a = read_checked(a)
    header_b, events_b = read_checked(b)
    try:
        shared, before, first = _first_difference(_only(events_a, kinds),
                                                  _only(events_b, kinds), context,
                                                  same=_same if kinds is None else _same_but_seq)
    finally:
        events_a.close()
        events_b.close()
    counts = (Counter(), Counter())
    runs = tuple(fold_run(p, lambda ev, c=c: c.update((ev["kind"],)))
                 for p, c in zip((a, b), counts, strict=True))
    return TraceDiff((a, b), setup_differences(header_a, header_b), shared, before, first,
                     runs, counts, kinds)


def _only(events, kinds: frozenset | None):
    return events if kinds is None else (ev for ev in events if ev["kind"] in kinds)


def _same(ev_a: dict, ev_b: dict | None) -> bool:
    return ev_a == ev_b


def _same_but_seq(ev_a: dict, ev_b: dict | None) -> bool:
    return ev_b is not None and {**ev_a, "seq": 0} == {**ev_b, "seq": 0}


def _first_difference(events_a, events_b, context: int, same=_same):
    before: deque = deque(maxlen=context)
    shared = 0
    for ev_a in events_a:
        ev_b = next(events_b, None)
        if not same(ev_a, ev_b):
            return shared, list(before), (ev_a, ev_b)
        before.append(ev_a)
        shared += 1
    ev_b = next(events_b, None)
    return shared, list(before), (None, ev_b)


def first_different_line(path_a: str, path_b: str) -> tuple[int, str, str] | None:
    """The first line (1-based, with both texts) at which two files differ byte for byte, or
    None. Equal events can still be written differently (members in another order), which a
    determinism check must catch and `diff_traces` does not look at."""
    with open(path_a, "rb") as fa, open(path_b, "rb") as fb:
        lineno = 0
        while True:
            a, b = fa.readline(), fb.readline()
            lineno += 1
            if a != b:
                return lineno, _text(a), _text(b)
            if not a:
                return None


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\n") or "(end of file)"


# -- the header -----------------------------------------------------------------------------

def setup_differences(header_a: dict, header_b: dict) -> list[tuple[str, object, object]]:
    """Header members that differ: options by leaf, the schedule by step, the rest whole."""
    out = []
    for key in sorted(set(header_a) | set(header_b)):
        va, vb = header_a.get(key, _MISSING), header_b.get(key, _MISSING)
        if va == vb:
            continue
        if key == "options" and isinstance(va, dict) and isinstance(vb, dict):
            out += _leaf_differences("options", va, vb)
        elif key == "schedule" and isinstance(va, list) and isinstance(vb, list):
            out += _schedule_differences(va, vb)
        else:
            out.append((key, va, vb))
    return out


class _Missing:
    def __repr__(self) -> str:
        return "(none)"


_MISSING = _Missing()


def _leaf_differences(prefix: str, a: dict, b: dict) -> list:
    out = []
    for key in sorted(set(a) | set(b), key=str):
        va, vb = a.get(key, _MISSING), b.get(key, _MISSING)
        path = f"{prefix}.{key}"
        if va == vb:
            continue
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _leaf_differences(path, va, vb)
        elif (isinstance(va, list) and isinstance(vb, list) and len(va) == len(vb)
              and all(isinstance(x, dict) for x in va + vb)):
            for i, (xa, xb) in enumerate(zip(va, vb, strict=True)):
                out += _leaf_differences(f"{path}[{i}]", xa, xb)
        else:
            out.append((path, va, vb))
    return out


def _schedule_differences(a: list, b: list) -> list:
    """Steps only in A, and steps only in B (a step is the same when all its fields are)."""
    text_a = [json.dumps(s, sort_keys=True) for s in a]
    text_b = [json.dumps(s, sort_keys=True) for s in b]
    in_a, in_b = set(text_a), set(text_b)
    only_a = [s for s, t in zip(a, text_a, strict=True) if t not in in_b]
    only_b = [s for s, t in zip(b, text_b, strict=True) if t not in in_a]
    return ([("schedule step", s, _MISSING) for s in only_a]
            + [("schedule step", _MISSING, s) for s in only_b])


# -- rendering ------------------------------------------------------------------------------

def _value(v) -> str:
    return repr(v) if v is _MISSING else json.dumps(v, sort_keys=True)


def _event_line(ev: dict | None) -> str:
    if ev is None:
        return "(trace ends here)"
    return f"{seconds(ev['t'])}  seq {ev['seq']}  {describe(ev)}"


def _field_lines(ev_a: dict | None, ev_b: dict | None) -> list[str]:
    """The fields two events of the same kind differ in: their sentences may hide it."""
    if ev_a is None or ev_b is None or ev_a.get("kind") != ev_b.get("kind"):
        return []
    keys = [k for k in sorted(set(ev_a) | set(ev_b))
            if ev_a.get(k, _MISSING) != ev_b.get(k, _MISSING)]
    lines = [f"    {k}: {_value(ev_a.get(k, _MISSING))} -> {_value(ev_b.get(k, _MISSING))}"
             for k in keys[:FIELD_LINES]]
    if len(keys) > FIELD_LINES:
        lines.append(f"    ... and {len(keys) - FIELD_LINES} more fields")
    return lines


def _run_line(label: str, path: str, run: Run) -> str:
    h = run.header
    return (f"{label}: {path}  ({h.get('scenario', '?')}, seed {h.get('seed', '?')}, "
            f"{len(run.events):,} events to {seconds(run.end_us)}): {run.status()}")


def render(diff: TraceDiff) -> list[str]:
    run_a, run_b = diff.runs
    lines = [_run_line("A", diff.paths[0], run_a), _run_line("B", diff.paths[1], run_b)]
    lines += _setup_lines(diff.setup)
    which = "events" if diff.kinds is None else f"{', '.join(sorted(diff.kinds))} events"
    if diff.same_events:
        lines.append(f"same {which}: all {diff.shared:,} of them are equal, field for field")
        return lines
    lines.append(f"the first {diff.shared:,} {which} are equal; then the runs part:")
    lines += [f"    {_event_line(ev)}" for ev in diff.before]
    ev_a, ev_b = diff.first
    lines.append(f"  A {_event_line(ev_a)}")
    lines.append(f"  B {_event_line(ev_b)}")
    lines += _field_lines(ev_a, ev_b)
    lines += _count_lines(*diff.counts)
    return lines


def _setup_lines(setup: list) -> list[str]:
    if not setup:
        return ["same setup: the headers are equal"]
    lines = [f"setup differs in {len(setup)} place(s) (A -> B):"]
    lines += [f"  {key}: {_value(va)} -> {_value(vb)}" for key, va, vb in setup[:SETUP_LINES]]
    if len(setup) > SETUP_LINES:
        lines.append(f"  ... and {len(setup) - SETUP_LINES} more")
    return lines


def _count_lines(a: Counter, b: Counter) -> list[str]:
    kinds = sorted((k for k in set(a) | set(b) if a[k] != b[k]),
                   key=lambda k: (-abs(a[k] - b[k]), k))
    if not kinds:
        return ["events by kind: the same counts in both"]
    lines = ["events by kind that differ over the whole run (A -> B), largest change first:"]
    lines += [f"  {k}: {a[k]:,} -> {b[k]:,}" for k in kinds[:KIND_LINES]]
    if len(kinds) > KIND_LINES:
        lines.append(f"  ... and {len(kinds) - KIND_LINES} more kinds")
    return lines
