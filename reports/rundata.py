"""One stored run as the reports see it: header, events, violations.

Contract: `load_run(trace_path)` reads the trace (raising `sim.core.trace.TraceError` on bad
input) and takes the violations from the `verdict.json` beside it when that verdict belongs
to this trace (same digest); otherwise it re-checks the events with the trace's own list of
invariants. Violations are verdict-format dicts: invariant, t_us, message, seqs. Events are
kept in a list indexed by `seq` (seqs are dense from 0).
`resolve_trace(path)` names the trace of a run directory (or returns a trace path as given).
`fold_run(trace_path, fold)` is the same as `load_run` for traces too long to hold: it
streams the events through `fold` and keeps only the witnesses, in a `SparseEvents` indexed
the same way.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from invariants.registry import SHAPE_ERRORS
from invariants.shapes import read_checked
from sim.core.trace import TraceError, digest_of_lines


@dataclass
class Run:
    trace_path: str
    header: dict
    events: list[dict]
    violations: list[dict]
    verdict: dict | None = None
    witnesses: dict[int, list[str]] = field(default_factory=dict)
    last_t: int | None = None  # time of the last event, when `events` is sparse
    complete: bool = True  # the trace ends with the run's `end` event (not cut short)

    def __post_init__(self) -> None:
        for v in self.violations:
            for seq in v["seqs"]:
                names = self.witnesses.setdefault(seq, [])
                if v["invariant"] not in names:
                    names.append(v["invariant"])

    @property
    def end_us(self) -> int:
        if self.last_t is not None:
            return self.last_t
        return self.events[-1]["t"] if len(self.events) else 0

    @property
    def scenario(self) -> str:
        return str(self.header.get("scenario", "?"))

    @property
    def clean(self) -> bool:
        """No violation, and a whole trace to say so."""
        return not self.violations and self.complete

    def status(self) -> str:
        """One line for titles: what the violations say, and whether the run was cut short
        (then the end-of-run invariants, such as stray_replica, were never judged)."""
        names = sorted({v["invariant"] for v in self.violations})
        text = "VIOLATED: " + ", ".join(names) if names else "all invariants hold"
        return f"{text} ({self.cut_short()})" if not self.complete else text

    def cut_short(self) -> str:
        """Why a trace without its `end` event is read with care ("" for a whole run)."""
        if self.complete:
            return ""
        return (f"trace cut short at {self.end_us / 1e6:.3f} s, no end event: end-of-run "
                "invariants not judged")

    def warn_if_cut_short(self) -> None:
        """Say on stderr that the picture or page drawn from this run lacks its end (the
        status line says it too, but a script reading only stderr should hear of it)."""
        if not self.complete:
            print(f"warning: {self.trace_path}: {self.cut_short()}", file=sys.stderr)

    def first_violation(self) -> dict | None:
        return self.violations[0] if self.violations else None


def resolve_trace(path: str) -> str:
    """The trace of `path`: the file itself, or the trace.jsonl of a run directory."""
    if os.path.isdir(path):
        inner = os.path.join(path, "trace.jsonl")
        if not os.path.isfile(inner):
            raise TraceError(f"{path}: a directory without trace.jsonl; pass a trace or the "
                             "--out directory of `epochsim run`")
        return inner
    return path


def load_run(trace_path: str) -> Run:
    header, stream = read_checked(trace_path)
    events = list(stream)
    verdict = _matching_verdict(trace_path, header)
    if verdict is not None:
        violations = verdict.get("violations", [])
    else:
        violations = recheck(header, events, trace_path)
    return Run(trace_path, header, events, violations, verdict,
               complete=bool(events) and events[-1].get("kind") == "end")


class SparseEvents:
    """Some events of a trace, by `seq`; `len` is the trace's event count."""

    def __init__(self, kept: dict[int, dict], count: int):
        self.kept, self.count = kept, count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, seq: int) -> dict:
        return self.kept[seq + self.count if seq < 0 else seq]


def fold_run(trace_path: str, fold) -> Run:
    """Stream the trace through `fold(event)` once, keeping only the witness events."""
    header, stream = read_checked(trace_path)
    stream.close()
    verdict = _matching_verdict(trace_path, header)
    if verdict is not None:
        violations = verdict.get("violations", [])
    else:
        violations = recheck(header, read_checked(trace_path)[1], trace_path)
    wanted = {s for v in violations for s in v["seqs"]}
    kept: dict[int, dict] = {}
    count = last_t = 0
    last_kind = None
    for ev in read_checked(trace_path)[1]:
        try:
            fold(ev)
        except SHAPE_ERRORS as exc:
            raise TraceError(f"{trace_path}: event seq {ev['seq']} ({ev['kind']}) does not have "
                             f"the shape epochsim writes ({type(exc).__name__}: {exc}); the "
                             "trace was edited or comes from another harness version") from None
        if ev["seq"] in wanted:
            kept[ev["seq"]] = ev
        count += 1
        last_t, last_kind = ev["t"], ev["kind"]
    return Run(trace_path, header, SparseEvents(kept, count), violations, verdict,
               last_t=last_t, complete=last_kind == "end")


def recheck(header: dict, events, trace_path: str) -> list[dict]:
    """Violations of the trace's own invariants, found by re-running them offline."""
    from invariants.registry import check_events

    try:
        violations, _ = check_events(header, events)
    except TraceError as exc:  # a line the reader refused already names the file
        text = str(exc)
        raise TraceError(text if text.startswith(trace_path) else f"{trace_path}: {text}") from None
    return [v.to_json() for v in violations]


def _matching_verdict(trace_path: str, header: dict) -> dict | None:
    """The verdict beside the trace, if it is the verdict of exactly this trace."""
    path = os.path.join(os.path.dirname(os.path.abspath(trace_path)), "verdict.json")
    try:
        with open(path, encoding="utf-8") as fh:
            verdict = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("violations"), list):
        return None
    with open(trace_path, encoding="utf-8") as fh:
        fh.readline()
        lines = [ln.rstrip("\n") for ln in fh if ln.strip()]
    # a verdict left over from an earlier run in the same directory must not be trusted
    if verdict.get("trace_digest") != digest_of_lines(header, lines):
        return None
    problem = violations_problem(verdict["violations"])
    if problem:  # this trace's own verdict, edited: neither trusted nor silently passed over
        raise TraceError(f"{path}: {problem}; was it edited? remove it to re-check the trace, "
                         "or re-run the scenario")
    return verdict


_VIOLATION = {"invariant": (str, "a string"), "message": (str, "a string"),
              "t_us": (int, "an integer"), "seqs": (list, "a list")}


def violations_problem(violations: list) -> str | None:
    """What is wrong with a verdict's `violations` (each an object with a string `invariant`
    and `message`, an int `t_us` and a list of int `seqs`, as `Violation.to_json` writes),
    or None. The reports sort, count and look up by these members."""
    for i, v in enumerate(violations):
        if not isinstance(v, dict):
            return f"violations[{i}] is not an object"
        for key, (kind, name) in _VIOLATION.items():
            value = v.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                return f"violations[{i}].{key} is {json.dumps(value)[:40]}, not {name}"
        if not all(type(s) is int for s in v["seqs"]):
            return f"violations[{i}].seqs holds a member that is not an int"
    return None
