"""`epochsim selftest`: every planted bug must be found by its invariant; the correct model
must stay clean.

Contract: for each mutant of `sim.kafka.profiles.MUTANTS` (or those named by --mutants),
explore `scenarios/selftest/<mutant>.toml` with --budget runs and --seed, targeting the
mutant's expected invariant on schedules that do not break it without the mutant; then explore
each distinct base with the mutant removed against every invariant, with --clean-budget runs
(default --budget). Tasks run costliest first (correct-model bases, then by simulated time);
results are reported in task order. Prints the matrix (mutant, invariant expected, found, runs to first failure,
shrunk size in steps, time) and writes OUT/selftest.json plus each counterexample under
OUT/<mutant>/. Exit 0 only if every mutant was found and the correct model stayed clean.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from epochsim.common import (
    add_override_args,
    load,
    parse_sets,
    positive_int,
    prepare_out_dir,
    seed_arg,
)
from epochsim.errors import UsageError
from epochsim.progress import RunProgress
from sim.core.files import atomic_write

HELP = """\
For each planted bug (sim.kafka.profiles.MUTANTS) explore its base scenario
scenarios/selftest/<mutant>.toml until the invariant expected to catch it breaks on a schedule
that does not break it without the mutant, shrink the counterexample, and report the matrix;
then search the correct model (each base without its mutant) with --clean-budget runs, which
must stay clean. Counterexamples go to OUT/<mutant>/. Exit 0 only if every mutant is found and
the correct model is clean. The default (150 runs each) takes about three minutes on two cores;
a deeper search of the correct model takes tens of minutes:

  epochsim selftest --seed 1
  epochsim selftest --seed 1 --clean-budget 2000
  epochsim selftest --mutants no_stop_replica_epoch_check,hw_ignores_isr --budget 100"""


def register(subs) -> None:
    p = subs.add_parser("selftest", help="prove each invariant catches its planted bug",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=positive_int, default=150,
                   help="generated runs per mutant, and per correct-model base unless "
                        "--clean-budget says otherwise (default 150: every planted bug is "
                        "expected within it)")
    p.add_argument("--clean-budget", type=positive_int, metavar="N",
                   help="generated runs per correct-model base (default: --budget); a deeper "
                        "search of the correct model, e.g. 2000, takes tens of minutes")
    p.add_argument("--shrink-runs", type=positive_int, default=100, metavar="N",
                   help="most runs hypothesis may spend shrinking each counterexample before "
                        "it is polished (default 100; explore's is 300: a self-test proves the "
                        "bug is found, and at seed 1 the shrunk sizes are the same)")
    p.add_argument("--mutants", metavar="A,B", help="only these mutants (default: all)")
    p.add_argument("--seed", type=seed_arg, default=0, help="search seed (default 0)")
    p.add_argument("-o", "--out", default=os.path.join("runs", "selftest"),
                   help="output directory (default runs/selftest)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="worker processes (default: all cores)")
    p.add_argument("--no-clean", action="store_true", help="skip the correct-model runs")
    p.add_argument("--no-plot", action="store_true", help="do not draw timelines")
    add_override_args(p)  # applied to every base scenario (a --set of protocol.mutant is refused)
    p.set_defaults(func=main)


def chosen_mutants(text: str | None) -> list[str]:
    """The mutants --mutants names (all of them without the flag; an empty one names none)."""
    from sim.kafka.profiles import MUTANTS
    if text is None:
        return list(MUTANTS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--mutants {text!r}: name at least one mutant; known: {', '.join(MUTANTS)}")
    for i, name in enumerate(names):
        if name not in MUTANTS:
            raise UsageError(f"--mutants: unknown mutant {name!r}; known: {', '.join(MUTANTS)}")
        if name in names[:i]:  # its two tasks would write the same output directory
            raise UsageError(f"--mutants: {name!r} is named twice; name each mutant once")
    return names


def main(args) -> int:
    from epochsim.explore.selftest import clean_bases, clean_task, mutant_task

    mutants = chosen_mutants(args.mutants)
    overrides = parse_sets(args.sets, args.profile)
    if "protocol.mutant" in overrides:
        raise UsageError("selftest --set protocol.mutant: each base plants its own mutant; "
                         "choose mutants with --mutants")
    cleans = [] if args.no_clean else clean_bases(mutants, overrides)
    allowed = {"selftest.json", *mutants, *(f"clean-{m[0]}" for _p, m in cleans)}
    out = prepare_out_dir(args.out, allowed=allowed)
    plot = not args.no_plot
    args.clean_budget = args.clean_budget or args.budget
    jobs = [(mutant_task, (m, args.budget, args.seed, out, plot, overrides, args.shrink_runs))
            for m in mutants]
    jobs += [(clean_task, (path, ms, args.clean_budget, args.seed, out, plot, overrides))
             for path, ms in cleans]
    started = time.monotonic()
    results = _run_all(jobs, args.jobs, started)
    rows = [r for r in results if "mutant" in r]
    clean_rows = [r for r in results if "label" in r]
    print_table(rows, clean_rows, args)
    _write(out, rows, clean_rows, args, time.monotonic() - started)
    ok = all(r["found"] for r in rows) and all(r["clean"] for r in clean_rows)
    return 0 if ok else 1


def _run_all(jobs: list, workers: int, started: float) -> list[dict]:
    """Run the tasks (in worker processes when more than one), results in job order."""
    with RunProgress("selftest", len(jobs), unit="tasks") as bar:
        if workers == 1 or len(jobs) == 1:
            results = []
            for fn, job in jobs:
                results.append(fn(job))
                _progress(bar, results[-1], started)
            return results
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            # the costliest first, so that no long task starts last and runs alone
            order = sorted(range(len(jobs)), key=lambda i: _cost(jobs[i]), reverse=True)
            futures = {pool.submit(*jobs[i]): i for i in order}
            for future in as_completed(futures):
                _progress(bar, future.result(), started)
            return [f.result() for f in sorted(futures, key=futures.get)]


def _cost(job: tuple) -> tuple:
    """How long a task is likely to take, to order them: a correct-model task always runs its
    whole budget (a mutant's usually stops early), and a run costs about its base's simulated
    time (as the loader reads it: the default when the base names none)."""
    from epochsim.explore.selftest import base_path, clean_task
    fn, args = job
    path = args[0] if fn is clean_task else base_path(args[0])
    try:
        duration = load(path).options.run.duration_ms
    except UsageError:
        duration = 0  # the task itself reports the broken base
    return (fn is clean_task, duration)


def _progress(bar: RunProgress, row: dict, started: float) -> None:
    name = row.get("mutant") or row.get("label")
    status = ("found" if row.get("found") else "NOT found") if "mutant" in row else \
        ("clean" if row["clean"] else f"VIOLATED {row['violated']}")
    bar.log(f"  [{bar.done + 1}/{bar.total}] {name}: {status} ({row['time_s']:.1f}s, "
            f"{time.monotonic() - started:.0f}s elapsed)")
    bar.advance(1)


def print_table(rows: list[dict], clean_rows: list[dict], args) -> None:
    width = max([len(r["mutant"]) for r in rows] + [6])
    iwidth = max([len(r["expected"]) for r in rows] + [18])
    print(f"{'mutant':<{width}}  {'invariant expected':<{iwidth}}  found  runs to 1st  "
          f"shrunk steps  runs in all  time (s)")
    for r in rows:
        first = "-" if r["runs_to_first"] is None else str(r["runs_to_first"])
        steps = "-" if r["steps"] is None else str(r["steps"])
        print(f"{r['mutant']:<{width}}  {r['expected']:<{iwidth}}  "
              f"{'yes' if r['found'] else 'no':<5}  {first:>11}  {steps:>12}  "
              f"{r.get('runs', 0):>11}  {r['time_s']:>8.1f}")
        if not r["found"]:
            print(f"{'':<{width}}  why not: {r['reason']}")
    for r in clean_rows:
        state = "clean" if r["clean"] else f"VIOLATED {r['violated']} ({r['steps']} steps, {r['dir']})"
        print(f"correct model ({', '.join(r['bases'])}): {state} in {r['runs']} runs, "
              f"{r['time_s']:.1f}s")
    found = sum(r["found"] for r in rows)
    clean = sum(r["clean"] for r in clean_rows)
    times = sorted(r["time_s"] for r in rows)
    median = times[len(times) // 2] if times else 0.0
    print(f"{found}/{len(rows)} mutants found, {clean}/{len(clean_rows)} correct-model bases "
          f"clean (budget {args.budget}, correct model {args.clean_budget}, "
          f"seed {args.seed}); median mutant {median:.1f}s")


def _write(out: str, rows, clean_rows, args, elapsed: float) -> None:
    with atomic_write(os.path.join(out, "selftest.json")) as fh:
        json.dump({"budget": args.budget, "clean_budget": args.clean_budget,
                   "shrink_runs": args.shrink_runs,
                   "seed": args.seed, "mutants": rows,
                   "correct_model": clean_rows, "elapsed_s": round(elapsed, 1)},
                  fh, indent=2, sort_keys=True)
        fh.write("\n")
    kept = sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)))
    print(f"wrote {os.path.join(out, 'selftest.json')}" + (
        f" and {len(kept)} {'directory' if len(kept) == 1 else 'directories'} of "
        f"counterexamples and clean runs ({out}/{kept[0]}{', ...' if len(kept) > 1 else ''})"
        if kept else ""))
