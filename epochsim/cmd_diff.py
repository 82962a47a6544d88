"""`epochsim diff`: where two runs part, and how they differ after."""

from __future__ import annotations

import argparse

from epochsim.common import positive_int, reading_user_files, trace_file
from epochsim.errors import UsageError

HELP = """\
Compare two stored runs (trace.jsonl files, or the run directories holding them): the setup
they differ in (scenario options leaf by leaf, fault steps), the first event at which they
part with the few equal events before it and, for two events of one kind, the fields that
differ, then the event kinds whose counts differ over the whole run. Each run's status
(violations, a trace cut short) heads the output.

Use it to see what a protocol switch changes (the same scenario and seed, the switch off and
on), what a shrunk schedule kept, or where a run stopped being reproducible. The first event
that differs is often a request carrying a new field; --kinds stop_replica (say) skips to the
first StopReplica the brokers handled differently.
Exit 0 when every event is equal (the setup may still differ), 1 when the runs part, 2 for
bad input.

  epochsim run scenarios/kip359-stale-leader-legacy.toml --seed 1 --out runs/a
  epochsim run scenarios/kip359-stale-leader-legacy.toml --seed 1 --out runs/b \\
      --set protocol.produce_epoch_check=true
  epochsim diff runs/a runs/b
  epochsim diff runs/a runs/b --kinds append,produce_error"""


def register(subs) -> None:
    p = subs.add_parser("diff", help="show where two runs part", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="A", help="a trace.jsonl, or a run directory holding one")
    p.add_argument("b", metavar="B", help="the run to compare it with")
    p.add_argument("--context", type=context_arg, default=3, metavar="N",
                   help="equal events shown before the first difference (default: 3, at most "
                        f"{MAX_CONTEXT:,})")
    p.add_argument("--kinds", metavar="K1,K2",
                   help="compare only events of these kinds (e.g. stop_replica,append), "
                        "without their seq: the first one that differs, wherever it falls")
    p.set_defaults(func=main)


MAX_CONTEXT = 1_000_000  # events kept in memory before the first difference, and printed


def context_arg(text: str) -> int:
    """argparse type of --context: a positive count, at most MAX_CONTEXT (a count past a C
    size raised OverflowError in the reader, blamed on the traces)."""
    value = positive_int(text)
    if value > MAX_CONTEXT:
        raise argparse.ArgumentTypeError(f"{value}: at most {MAX_CONTEXT} equal events are "
                                         "shown before the first difference; pass a smaller N")
    return value


def main(args) -> int:
    from reports.tracediff import diff_traces, render

    kinds = _kinds(args.kinds) if args.kinds is not None else None
    args.a, args.b = trace_file(args.a), trace_file(args.b)  # never a pipe
    with reading_user_files(f"{args.a} or {args.b}", args.a):
        diff = diff_traces(args.a, args.b, args.context, kinds)
    for line in render(diff):
        print(line)
    return 0 if diff.same_events else 1


def _kinds(text: str) -> frozenset:
    from sim.kafka.vocab import ALL_KINDS

    kinds = frozenset(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(kinds - ALL_KINDS)
    if kinds and not unknown:
        return kinds
    problem = f"unknown event kind {unknown[0]!r}" if unknown else "no kind given"
    raise UsageError(f"--kinds: {problem}; known kinds: {', '.join(sorted(ALL_KINDS))} "
                     "(docs/trace.md)")
