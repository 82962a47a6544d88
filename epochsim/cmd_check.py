"""`epochsim check`: re-run the invariants over a stored trace."""

from __future__ import annotations

import argparse
import json
import os

from epochsim.common import (
    describe_liveness,
    describe_violations,
    reading_user_files,
    trace_file,
)
from epochsim.errors import UsageError
from invariants.registry import INVARIANTS, check_events
from invariants.shapes import event_problem
from sim.core.trace import TraceError, digest_of_lines, stored_lines

HELP = """\
Re-check a stored trace (as written by `epochsim run`, or the run directory holding it)
against its invariants, or the ones named with --invariants. Every event must be of a kind and
field types docs/trace.md documents, nothing may follow the run's `end`, and the digest must
be the one the verdict.json beside the trace records. A rule that could not judge the run says
"not judged" (it holds vacuously). Exit 0 when all hold, 1 on a violation, 2 for an
unreadable, edited or cut-short trace.

  epochsim check runs/smoke/seed-7/trace.jsonl
  epochsim check trace.jsonl --invariants stale_leader_append,log_divergence"""


def register(subs) -> None:
    p = subs.add_parser("check", help="re-check a stored trace", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE.jsonl", help="a trace, or a run directory holding one")
    p.add_argument("--invariants", help="comma-separated invariant names (default: the trace's own)")
    p.set_defaults(func=main)


def invariant_names(text: str) -> list[str]:
    """The names of `--invariants`: at least one, each known and given once. (`,` checked
    nothing and said "all invariants hold"; a name given twice counted its violations twice.)"""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--invariants {text!r}: names no invariant; give comma-separated "
                         "names, e.g. --invariants stale_leader_append, or leave the flag out "
                         "to check the trace's own")
    unknown = [n for n in names if n not in INVARIANTS]
    if unknown:
        raise UsageError(f"--invariants: unknown invariant {unknown[0]!r}; "
                         f"known: {', '.join(INVARIANTS)}")
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise UsageError(f"--invariants: {twice[0]!r} is named twice; name each invariant once")
    return names


def check_recorded_digest(trace: str, digest: str) -> None:
    """Refuse a trace whose run directory's verdict.json records another digest: one of the
    two was edited (or copied from another run), and checking the trace would pass off the
    edit as what the run did. A trace without a readable verdict beside it is checked as is."""
    path = os.path.join(os.path.dirname(os.path.abspath(trace)), "verdict.json")
    try:
        with open(path, encoding="utf-8") as fh:
            verdict = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return
    recorded = verdict.get("trace_digest") if isinstance(verdict, dict) else None
    if isinstance(recorded, str) and recorded != digest:
        raise UsageError(f"{trace}: digest {digest[:12]}... is not the {recorded[:12]}... that "
                         f"{path} records for its run: the trace or the verdict was edited or "
                         "replaced; re-run the scenario, or check a trace without that verdict")


def main(args) -> int:
    names = invariant_names(args.invariants) if args.invariants is not None else None
    args.trace = trace_file(args.trace)  # a run directory's trace; never a pipe
    # an event or header member of the wrong shape that check_events does not catch itself
    # (building the rules from the header, say) is still one line naming the file
    with reading_user_files(args.trace, args.trace):
        try:
            header, lines = stored_lines(args.trace, event_problem)
            events = (json.loads(line) for line in lines)
            notes: dict = {}
            violations, metrics = check_events(header, events, names, whole=True, notes=notes)
        except TraceError as exc:
            text = str(exc)
            raise UsageError(text if text.startswith(args.trace)
                             else f"{args.trace}: {text}") from None
    digest = digest_of_lines(header, lines)
    check_recorded_digest(args.trace, digest)
    checked = names or header.get("invariants", list(INVARIANTS))
    print(f"{args.trace}: {len(lines)} events, {len(checked)} invariants, digest {digest}")
    verdict = {"violations": [v.to_json() for v in violations]}
    for line in describe_violations(verdict):
        print(line)
    for line in describe_liveness(notes):
        print(line)
    print("all invariants hold" if not violations else f"{len(violations)} violation(s)")
    wrong = probe_disagreements(header, lines)
    return 1 if violations or wrong else 0


def probe_disagreements(header: dict, lines: list) -> int:
    """A probe's trace: print how many of its recorded checks agree with Kafka; the number
    that do not (0 for a scenario's trace)."""
    if "probe" not in header:
        return 0
    checks = [ev for ev in map(json.loads, lines) if ev.get("kind") == "probe_check"]
    wrong = [c for c in checks if not c.get("agree")]
    print(f"probe {header['probe'].get('kafka_test', '?')}: {len(checks) - len(wrong)}/"
          f"{len(checks)} checks agree with Kafka")
    for c in wrong:
        print(f"  step {c['step']} {c['check']}: Kafka {c['kafka']}, model {c['model']}")
    return len(wrong)
