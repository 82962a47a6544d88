"""`epochsim study`: the KIP-951 leader-discovery latency study (docs/kip-951-study.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from epochsim.common import (
    check_seed_range,
    distinct_names,
    load,
    positive_int,
    prepare_out_dir,
    seeds_arg,
)
from epochsim.errors import UsageError
from epochsim.progress import RunProgress, phase
from sim.core.files import atomic_write, write_text

HELP = """\
Run the KIP-951 study: every scenario of scenarios/study/ (or the SCENARIO files given) once
per leader-discovery mode (metadata, kip951, refresh_no_backoff) and per seed, then print the
produce (and end-to-end) latency percentiles per mode with the ratios between modes, and draw
DIR/latency-<scenario>.png (the three modes' latency over time, one panel each, leader moves
and the warm-up cut marked). Same seeds, same table.
Writes DIR/study.txt (the table) and DIR/study.json (every run's numbers).

  epochsim study --seeds 3 --out runs/study
  epochsim study scenarios/study/kip951-move-all-leaders.toml --seeds 1 --check"""

# what a study directory may already hold (the pictures of an earlier version, per mode, too)
OUTPUTS = {"study.txt", "study.json"} | {f"latency-{m}.png" for m in
                                         ("metadata", "kip951", "refresh_no_backoff")}


def register(subs) -> None:
    p = subs.add_parser("study", help="KIP-951 leader-discovery latency study", description=HELP,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*", metavar="SCENARIO.toml",
                   help="study scenarios (default: scenarios/study/*.toml)")
    p.add_argument("--seeds", type=seeds_arg, default=3, help="seeds per scenario and mode (default 3)")
    p.add_argument("-o", "--out", metavar="DIR", default=os.path.join("runs", "study"),
                   help="output directory (default runs/study)")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="worker processes (default: all cores)")
    p.add_argument("--check", action="store_true",
                   help="also check every invariant on every run (slower)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNGs")
    p.set_defaults(func=main)


def main(args) -> int:
    from epochsim import study

    paths = args.scenarios or study.default_scenarios()
    if not paths:
        raise UsageError(f"no study scenarios in {study.STUDY_DIR}; pass SCENARIO.toml files")
    scenario_list = [load(p) for p in paths]  # validate everything before running anything
    distinct_names(paths, scenario_list)  # their rows in the table would merge
    check_seed_range(paths, scenario_list, args.seeds)
    from epochsim.study_plot import file_name, plot_latency

    out = prepare_out_dir(args.out, allowed=OUTPUTS | {file_name(sc.name) for sc in scenario_list})
    jobs = study.study_jobs(scenario_list, args.seeds, args.check)
    with RunProgress("study", len(jobs)) as bar:
        results = study.run_study(jobs, args.jobs, lambda done, total: bar.advance(1))
    table = study.format_table(results)
    print(table)
    write_text(os.path.join(out, "study.txt"), table + "\n")
    with atomic_write(os.path.join(out, "study.json")) as fh:
        json.dump({"runs": results, "rows": study.summarise(results)}, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {os.path.join(out, 'study.txt')}, {os.path.join(out, 'study.json')}",
          file=sys.stderr)
    if not args.no_plot:
        phase("plotting the latency figures")
        for path in plot_latency(results, out):
            print(f"wrote {path}", file=sys.stderr)
    failed = [r for r in results if r["violated"]]
    return 1 if failed else 0
