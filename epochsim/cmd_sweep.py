"""`epochsim sweep`: thousands of seeds x protocol variants on Spark; rates and latency surfaces."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading

from epochsim.common import add_override_args, parse_sets, positive_int

HELP = """\
Run every scenario of SPEC.toml at every cell of its grid (the cartesian product of the listed
option values) for --seeds seeds each, on Spark (local mode on all cores unless --master names
a cluster). Each run is exactly `epochsim run` of the cell's scenario, written to
OUT/cells/<scenario>-<cell>.toml. Rows go to OUT/rows/ as Parquet (one file per chunk of seeds),
a few failing traces per cell and invariant to OUT/traces/, and violation rates with Wilson 95%
intervals, latency percentiles and failing seeds with repro lines to OUT/sweep.json.
A non-empty OUT is refused unless --resume, which runs only the chunks not yet on disk.
Exit 0 when the sweep completed (violations are results, not failures), 1 when a run did not
replay to the same trace or a chunk crashed, 2 on bad input, 130 on Ctrl-C and 143 on SIGTERM
(finished chunks are kept: rerun with --resume).

  epochsim sweep scenarios/sweeps/demo.toml --out runs/sweep-demo
  epochsim sweep scenarios/sweeps/kip359.toml --seeds 1000 --out runs/kip359
  epochsim sweep scenarios/sweeps/kip359.toml --seeds 1000 --out runs/kip359 --resume
  epochsim sweep spec.toml --master spark://host:7077 --out runs/big"""


_MASTER = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|(spark|k8s|mesos)://\S+|yarn")


def master_url(text: str) -> str:
    """A Spark master URL Spark itself would accept the form of."""
    if not _MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Spark master URL; use local[*], local[N], spark://HOST:PORT, "
            "yarn or k8s://...")
    return text


def register(subs) -> None:
    p = subs.add_parser("sweep", help="seeds x protocol variants on Spark: violation rates",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", metavar="SPEC.toml")
    p.add_argument("--seeds", type=positive_int, help="seeds per scenario and cell (default: the spec's `seeds`)")
    p.add_argument("--master", default="local[*]", type=master_url,
                   help="Spark master URL (default local[*]: every core of this machine)")
    p.add_argument("-o", "--out", metavar="DIR", help="output directory (default runs/sweep-<spec name>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the sweep in a non-empty --out: run only missing chunks")
    p.add_argument("--jobs-per-task", type=positive_int, metavar="K",
                   help="seeds per Spark task (default: the spec's `seeds_per_task`, else 20)")
    p.add_argument("--spark-ui", action="store_true", help="keep Spark's web UI on (default off)")
    add_override_args(p)  # every base scenario, before the grid (a grid key wins)
    p.set_defaults(func=main)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so that a sweep stops the same way."""


@contextlib.contextmanager
def terminate_as_interrupt():
    """While the block runs (in the main thread), SIGTERM stops it as Ctrl-C does: Spark's
    jobs cancelled, finished chunks kept, the resume hint printed; exit 143."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(args) -> int:
    from epochsim.sweep.driver import run_sweep
    from epochsim.sweep.spark_job import ChunkFailed
    from epochsim.sweep.spec import load_spec
    from epochsim.sweep.table import print_summary

    overrides = parse_sets(args.sets, args.profile)
    name = load_spec(args.spec, args.seeds, None, overrides).name
    out = args.out or os.path.join("runs", f"sweep-{name}")
    try:
        with terminate_as_interrupt():
            doc = run_sweep(args.spec, out, seeds=args.seeds, seeds_per_task=args.jobs_per_task,
                            master=args.master, resume=args.resume, spark_ui=args.spark_ui,
                            overrides=overrides)
    except ChunkFailed as exc:
        print(f"error: {exc}; finished chunks are kept in {out}: fix the cause, then rerun "
              "with --resume", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        how = "terminated" if isinstance(exc, Terminated) else "interrupted"
        print(f"\n{how}: finished chunks are kept in {out}; rerun with --resume to finish",
              file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    print_summary(doc, out)
    return 1 if doc["replay_mismatches"] else 0
