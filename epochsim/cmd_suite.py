"""`epochsim suite`: run scenarios at several seeds against their declared expectations."""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor

from epochsim.api import scenario_files as api_scenario_files
from epochsim.common import (
    add_override_args,
    check_seed_range,
    check_writable,
    distinct_names,
    load,
    note_moved_defaults,
    parse_sets,
    positive_int,
    prepare_out_dir,
    repro_line,
    seeds_arg,
)
from epochsim.errors import UsageError
from epochsim.junit import write_junit
from epochsim.progress import RunProgress
from epochsim.tables import column_lines
from invariants.recovery import judged_summary
from scenarios.schema import ScenarioError
from sim.core.files import atomic_write

HELP = """\
Run every scenario (files, or every *.toml directly inside a directory) at --seeds seeds
starting from each scenario's `seed`, and compare each run with the scenario's `expect`.
Prints a table; writes OUT/suite.json and, for runs that miss their expectation, their trace
and verdict under OUT/<scenario>/seed-<N>/. Exit 0 only when every expectation is met.
--junit-xml FILE also writes the runs as a JUnit XML report for CI systems: one test case per
scenario and seed, a failure for each run that missed its expectation.

The column `judged U/P/C` counts the runs in which each after-heal liveness rule judged
something: under_replicated_after_heal / produce_stalled_after_heal /
consume_stalled_after_heal. A rule that judged nothing held vacuously: give such a scenario a
longer settle window or shorter client timeouts (docs/invariants.md). `-`: not checked.

  epochsim suite scenarios/ --seeds 5
  epochsim suite scenarios/kip570-*.toml --seeds 200 --jobs 2
  epochsim suite scenarios/ --seeds 3 --junit-xml runs/suite.xml"""


def register(subs) -> None:
    p = subs.add_parser("suite", help="check scenarios against their expectations", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--seeds", type=seeds_arg, default=1, help="seeds per scenario (default 1)")
    p.add_argument("-o", "--out", default=os.path.join("runs", "suite"), help="output directory (default runs/suite)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="worker processes (default: all cores)")
    p.add_argument("--junit-xml", metavar="FILE",
                   help="also write the runs as a JUnit XML report (one test case per scenario "
                        "and seed)")
    add_override_args(p)
    p.set_defaults(func=main)


def scenario_files(paths: list[str]) -> list[str]:
    """`epochsim.api.scenario_files`, its error a usage error."""
    try:
        return api_scenario_files(paths)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None


def junit_target(path: str) -> str:
    """`--junit-xml FILE`: a file name in an existing directory we can write to, checked
    before any run (a report that cannot be written would be found only at the end)."""
    if os.path.isdir(path) or path.endswith(os.sep):
        raise UsageError(f"--junit-xml {path}: is a directory; name a file, e.g. "
                         f"{os.path.join(path, 'suite.xml')}")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"--junit-xml {path}: no directory {parent}; create it or choose "
                         "another path")
    if os.path.lexists(path) and (os.path.islink(path) or not os.path.isfile(path)):
        raise UsageError(f"--junit-xml {path}: exists and is not a regular file; choose "
                         "another path")
    if os.path.isfile(path) and not written_junit(path):  # the user's own file, kept
        raise UsageError(f"--junit-xml {path}: exists and is not a JUnit report epochsim "
                         "wrote; choose another path or remove it first")
    check_writable(parent, "--junit-xml")
    return path


def written_junit(path: str) -> bool:
    """Is the file at `path` a JUnit report `suite --junit-xml` wrote (its root element,
    `<testsuites name="epochsim suite"`, in the first KiB)? Only such a file is replaced."""
    from epochsim.junit import ROOT_TAG
    try:
        with open(path, "rb") as fh:
            return ROOT_TAG in fh.read(1024)
    except OSError:
        return False


def _run_one(job: tuple) -> dict:
    from epochsim.runner import run_scenario
    path, seed, out, overrides = job
    started = time.monotonic()  # wall time, for the JUnit report only (never in suite.json)
    scenario = load(path, overrides)
    verdict = run_scenario(scenario, seed, None)
    # a run that missed its expectation is kept to be read, and so is the first run of a
    # scenario that expects a violation: its story (how the race goes) is the point
    story = seed == scenario.seed and scenario.expect.startswith("violation")
    if not verdict["expectation_met"] or story:
        run_dir = os.path.join(out, scenario.name, f"seed-{seed}")
        verdict = run_scenario(scenario, seed, run_dir)  # same seed: same trace, now on disk
        verdict["dir"] = run_dir
    return {"path": path, "scenario": verdict["scenario"], "seed": seed,
            "trace_digest": verdict["trace_digest"], "violated": verdict["violated"],
            "expect": verdict["expect"], "expectation_met": verdict["expectation_met"],
            "dir": verdict.get("dir"), "metrics": verdict["metrics"],
            "note": verdict.get("expectation_note"), "stopped_by": verdict["run"]["stopped_by"],
            "seconds": time.monotonic() - started}


def _entries(path: str) -> list[str]:
    return os.listdir(path) if os.path.isdir(path) else []


def _own_run_dir(path: str) -> bool:
    """Is `path` a seed-N directory that holds only what `epochsim run` writes?"""
    from epochsim.common import OWN_OUTPUTS, foreign_output
    name = os.path.basename(path)
    return (name.startswith("seed-") and name[5:].isdecimal() and os.path.isdir(path)
            and all(f in OWN_OUTPUTS and not foreign_output(path, f, OWN_OUTPUTS)
                    for f in os.listdir(path)))


def main(args) -> int:
    files = scenario_files(args.paths)
    overrides = parse_sets(args.sets, args.profile)
    scenarios = [load(f, overrides) for f in files]  # validate everything before running anything
    distinct_names(files, scenarios)  # both would write their failing runs to <out>/<name>/seed-N
    check_seed_range(files, scenarios, args.seeds)
    for f, sc in zip(files, scenarios):
        note_moved_defaults(f, overrides, sc)
    junit = junit_target(args.junit_xml) if args.junit_xml else None
    from epochsim.common import OWN_OUTPUTS
    out = prepare_out_dir(args.out, allowed=OWN_OUTPUTS | {sc.name for sc in scenarios})
    for sc in scenarios:  # an existing <out>/<name> must hold only seed-N runs of epochsim
        runs = os.path.join(out, sc.name)
        if os.path.exists(runs):
            prepare_out_dir(runs, allowed={n for n in _entries(runs)
                                           if _own_run_dir(os.path.join(runs, n))})
    jobs = [(f, sc.seed + k, out, overrides) for f, sc in zip(files, scenarios)
            for k in range(args.seeds)]
    results = []
    with RunProgress("suite", len(jobs)) as bar, \
            ProcessPoolExecutor(max_workers=min(args.jobs, len(jobs))) as pool:
        for res in pool.map(_run_one, jobs):
            results.append(res)
            missed = sum(not r["expectation_met"] for r in results)
            bar.advance(1, note=f"{missed} missed" if missed else "")
    rows = summarise(files, scenarios, results, overrides)
    write_suite(out, rows, [{k: v for k, v in r.items() if k != "seconds"} for r in results])
    if junit:
        write_junit(junit, rows, results, overrides)
    print_table(rows)
    print(f"wrote {os.path.join(out, 'suite.json')}")
    kept = [r["dir"] for r in results if r.get("dir")]
    if kept:
        print(f"kept {len(kept)} runs (the first run of each scenario expecting a violation, "
              f"and any run that missed): {', '.join(kept[:3])}{', ...' if len(kept) > 3 else ''}")
        print(f"read their stories: epochsim report {out}")
    if junit:
        print(f"wrote {junit}")
    return 0 if all(r["met"] == r["runs"] for r in rows) else 1


def summarise(files, scenarios, results, overrides: dict) -> list[dict]:
    rows = []
    for path, sc in zip(files, scenarios):
        mine = [r for r in results if r["path"] == path]
        failing = [r for r in mine if not r["expectation_met"]]
        first = failing[0] if failing else None
        rows.append({"scenario": sc.name, "path": path, "expect": sc.expect, "runs": len(mine),
                     "met": len(mine) - len(failing),
                     "first_failing_seed": first["seed"] if first else None,
                     "first_failing_violated": first["violated"] if first else None,
                     "first_failing_dir": first["dir"] if first else None,
                     "first_failing_note": first["note"] if first else None,
                     "first_failing_stopped_by": first["stopped_by"] if first else None,
                     "repro": repro_line(path, first["seed"], overrides=overrides) if first else None,
                     "violating_seeds": [r["seed"] for r in mine if r["violated"]],
                     "liveness_judged": judged_runs(mine)})
    return rows


def judged_runs(results: list[dict]) -> dict:
    """Per after-heal rule that the runs checked, in how many of them it judged something."""
    counts: dict[str, int] = {}
    for r in results:
        for rule, n in r["metrics"].get("liveness_judged", {}).items():
            counts[rule] = counts.get(rule, 0) + (n > 0)
    return counts


def write_suite(out: str, rows: list[dict], results: list[dict]) -> None:
    with atomic_write(os.path.join(out, "suite.json")) as fh:
        json.dump({"rows": rows, "runs": results}, fh, indent=2, sort_keys=True)
        fh.write("\n")


CUT_BY = {"max_events": "run.max_events", "time_budget": "the time budget",
          "memory_budget": "the memory budget"}


def _cut(row: dict) -> str:
    """"; cut short by ..." when the first failing run missed its pass for being cut short; a
    probe's first disagreement otherwise."""
    if not row["first_failing_note"]:
        return ""
    if row["first_failing_stopped_by"] not in CUT_BY:  # a probe's disagreement, in words
        return f"; {row['first_failing_note']}"
    return f"; cut short by {CUT_BY[row['first_failing_stopped_by']]}"


def print_table(rows: list[dict]) -> None:
    """One line per scenario: its expectation, how many runs met it, what the liveness rules
    judged, and the first failing seed with its repro line."""
    lines = []
    for r in rows:
        tail = "" if r["first_failing_seed"] is None else \
            f"{r['first_failing_seed']} (violated: {', '.join(r['first_failing_violated']) or 'none'}" \
            f"{_cut(r)})  repro: {r['repro']}"
        lines.append([r["scenario"], r["expect"], f"{r['met']}/{r['runs']}",
                      judged_summary(r["liveness_judged"]), tail])
    for line in column_lines(["scenario", "expect", "met", "judged U/P/C", "first failing seed"],
                             lines, right=("met", "judged U/P/C")):
        print(line)
    ok = sum(r["met"] == r["runs"] for r in rows)
    print(f"{ok}/{len(rows)} scenarios met their expectation")
