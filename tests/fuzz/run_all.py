"""The full structural fuzz (tests/fuzz/): every shipped scenario, conformance case and sweep
spec mutated at every key path and loaded (a share of those that load also run); epochsim's
own outputs (verdict.json, trace header, suite.json, explore.json, sweep.json and plan) mutated
and read back by check, report, plot, diff and run --out; every flag and positional argument
of every command given bad values. CI runs a seeded sample (tests/fuzz/test_fuzz_sample.py).

    python -m tests.fuzz.run_all inputs                  # every mutant; 2% of loaded run
    python -m tests.fuzz.run_all inputs --per-doc 40 --run-share 0.2 --only conformance
    python -m tests.fuzz.run_all outputs --per-doc 150 [--sweep]
    python -m tests.fuzz.run_all flags

Prints one line per failure (the file or command, the key path or flag, the class of fault,
the last line of what went wrong), then the counts per kind and outcome. Exit 1 when any
failed. A "timeout" of a command whose valid line takes minutes (`tests.fuzz.flags.SLOW`)
is counted as "slow", not as a failure.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
from pathlib import Path

from tests.fuzz.inputs import Result, fuzz, shipped


def _inputs(args, tmp: Path):
    inputs = [i for i in shipped() if args.only in i[1] and i[0] in args.kinds.split(",")]
    inputs = inputs[::args.every]
    print(f"{len(inputs)} shipped files", flush=True)
    yield from fuzz(inputs, args.seed, args.per_doc, args.run_share, tmp)


def _outputs(args, tmp: Path):
    from tests.fuzz.outputs import fuzz_outputs, make_outputs

    (tmp / "made").mkdir()
    (tmp / "work").mkdir()
    dirs = make_outputs(tmp / "made", args.sweep, tuple(args.made.split(",")))
    yield from fuzz_outputs(dirs, args.seed, args.per_doc, tmp / "work")


def _flags(args, tmp: Path):
    import shutil

    import epochsim.sweep.spark_job as spark_job
    from tests.fuzz.flags import SLOW, flag_cases
    from tests.fuzz.inputs import invoke
    from tests.fuzz.outputs import make_outputs

    def no_spark(*a, **k):  # a sweep that gets as far as Spark has taken its flags
        raise KeyboardInterrupt  # the CLI's answer to it is exit 130, counted below

    spark_job.start_session = no_spark
    dirs = make_outputs(tmp / "made")
    world = {"{scenario}": str(tmp / "made" / "fz.toml"), "{run}": dirs["run"],
             "{spec}": str(Path(__file__).resolve().parents[1] / "scenarios" / "sweeps" / "demo.toml")}
    for name, argv in flag_cases():
        if args.only not in name:
            continue
        case = tmp / "case"
        shutil.rmtree(case, ignore_errors=True)
        case.mkdir()
        filled = []
        for a in argv:
            for key, value in world.items():
                a = a.replace(key, value)
            filled.append(a.replace("{o}", str(case / "o")).replace("{dir}", str(case)))
        command = name.split()[0]
        here = os.getcwd()
        os.chdir(case)  # a relative value given to --out or --database lands in the case
        try:
            outcome, detail = invoke(filled, 8 if command in SLOW else 30)
        finally:
            os.chdir(here)
        if outcome == "timeout" and command in SLOW:
            outcome = "slow"
        if outcome == "exit-130" and command == "sweep":
            outcome = "ran"
        yield Result("flag", command, name.split()[-1], name.split()[1], outcome, detail)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz.run_all")
    p.add_argument("what", choices=["inputs", "outputs", "flags"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--per-doc", type=int, default=None, help="mutants per file (default: all)")
    p.add_argument("--run-share", type=float, default=0.02,
                   help="inputs: share of the mutants that load which are also run")
    p.add_argument("--only", default="", help="only the files (or flag cases) naming this")
    p.add_argument("--kinds", default="scenario,probe,spec",
                   help="inputs: the kinds of shipped file (scenario, probe, spec)")
    p.add_argument("--every", type=int, default=1, help="inputs: only every N-th shipped file")
    p.add_argument("--sweep", action="store_true", help="outputs: also a sweep's (starts Spark)")
    p.add_argument("--made", default="run,suite,explore",
                   help="outputs: the output directories to make and mutate")
    args = p.parse_args(argv)
    counts: collections.Counter = collections.Counter()
    failures: collections.Counter = collections.Counter()
    run = {"inputs": _inputs, "outputs": _outputs, "flags": _flags}[args.what]
    with tempfile.TemporaryDirectory() as tmp:
        for r in run(args, Path(tmp)):
            counts[(r.kind, r.outcome)] += 1
            if r.failed and r.outcome != "slow":
                last = (r.detail.strip().splitlines() or [""])[-1][:160]
                failures[(r.outcome, last)] += 1
                print(f"FAIL {r.source} {r.where} [{r.label}] {r.outcome}: {last}", flush=True)
    print(f"{sum(counts.values())} cases")
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:8} {outcome:12} {n}")
    print(f"{len(failures)} distinct failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
