"""`epochsim plot`: draw the failover timeline of a stored trace (PNG or SVG)."""

from __future__ import annotations

import argparse
import math
import os

from epochsim.common import check_output_file, reading_user_files, trace_file
from epochsim.errors import UsageError

HELP = """\
Draw the failover timeline of TRACE.jsonl: per partition the controller's leader epoch, each
replica's role and metadata view, each client's known epoch and produce outcomes, fault
windows, controller changes, violations; then produce latency. PNG or SVG by the extension
of -o (default: timeline.png beside the trace). docs/reports.md explains how to read it.

  epochsim plot runs/kip570/seed-1/trace.jsonl
  epochsim plot trace.jsonl -o t.svg --window 3.5:4.5 --partitions t-0,t-1"""


def register(subs) -> None:
    p = subs.add_parser("plot", help="draw the failover timeline of a trace", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE.jsonl", help="a trace, or a run directory holding one")
    p.add_argument("-o", "--out", metavar="FILE", help="timeline.png or .svg (default: beside the trace)")
    p.add_argument("--window", metavar="START:END", type=window_arg,
                   help="simulated seconds to show, e.g. 3.5:4.5 (either end may be left out)")
    p.add_argument("--partitions", metavar="TP,...", type=partitions_arg,
                   help="partitions to draw, e.g. t-0,t-1 (default: all, or the ones that matter)")
    p.set_defaults(func=main)


def window_arg(text: str) -> tuple[float | None, float | None]:
    start, sep, end = text.partition(":")
    if not sep:
        raise UsageError(f"--window {text!r}: expected START:END in seconds, e.g. 3.5:4.5")
    try:
        bounds = tuple(float(x) if x.strip() else None for x in (start, end))
    except ValueError:
        raise UsageError(f"--window {text!r}: START and END must be numbers of seconds, "
                         "e.g. 3.5:4.5") from None
    if any(b is not None and not math.isfinite(b) for b in bounds):
        raise UsageError(f"--window {text!r}: START and END must be finite numbers of seconds")
    if any(b is not None and b < 0 for b in bounds) or (
            None not in bounds and bounds[1] <= bounds[0]):
        raise UsageError(f"--window {text!r}: need 0 <= START < END")
    return bounds


def partitions_arg(text: str) -> list[str]:
    tps = [tp.strip() for tp in text.split(",") if tp.strip()]
    if not tps:
        raise UsageError(f"--partitions {text!r}: name at least one partition, e.g. t-0")
    return tps


def main(args) -> int:
    from reports.timeline import plot_trace

    args.trace = trace_file(args.trace)  # a run directory's trace; never a pipe
    if args.out:
        check_output_file(args.out, (".png", ".svg"))
    out = args.out or os.path.join(os.path.dirname(args.trace) or ".", "timeline.png")
    with reading_user_files(args.trace, out):
        plot_trace(args.trace, out, window=args.window, partitions=args.partitions)
    print(f"wrote {out}")
    return 0
