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

With --kraft every scenario runs on a KRaft cluster instead (3 controllers, each broker
learning metadata when it fetches and applies it; the timeline starts 3 s later, after the
quorum's start): --metadata-apply-us, --metadata-fetch-wait-ms and --slow-metadata set how far
behind brokers fall, --kraft-profile which release the cluster runs (4.1: brokers learn a
commit without waiting for the log to grow, KIP-1166), and a table of each broker's metadata
lag follows the others.

  epochsim study --seeds 3 --out runs/study
  epochsim study scenarios/study/kip951-move-all-leaders.toml --seeds 1 --check
  epochsim study --kraft --slow-metadata b2:200 --seeds 1 --out runs/study-kraft-slow
  epochsim study --kraft --kraft-profile 4.1 --seeds 3 --out runs/study-kraft-4.1"""

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
    k = p.add_argument_group("KRaft (docs/kip-951-study.md, \"On KRaft\")")
    k.add_argument("--kraft", action="store_true",
                   help="run every scenario on a KRaft cluster of 3 controllers")
    k.add_argument("--metadata-apply-us", type=non_negative_int, metavar="US",
                   help="with --kraft: cluster.metadata_apply_us, each record's apply cost")
    k.add_argument("--metadata-fetch-wait-ms", type=positive_int, metavar="MS",
                   help="with --kraft: cluster.metadata_fetch_wait_ms")
    k.add_argument("--slow-metadata", type=slow_arg, metavar="BROKER:MS",
                   help="with --kraft: BROKER applies every metadata batch MS late from the "
                        "start (the slow_metadata fault)")
    k.add_argument("--kraft-profile", type=kraft_profile_arg, metavar="VERSION",
                   help="with --kraft: the release the cluster runs, 3.7 (the first with "
                        "KIP-951) and later (default: the scenario's own, 3.7)")
    p.set_defaults(func=main)


def non_negative_int(text: str) -> int:
    """argparse type of a count that may be 0."""
    return 0 if text.strip() == "0" else positive_int(text)


def kraft_profile_arg(text: str) -> str:
    """argparse type of --kraft-profile: a release from 3.7 (the first with KIP-951, whose
    study this is) that has KRaft mode."""
    from sim.kafka.profiles import PROFILES, release_order

    if text not in PROFILES or text == "proposed" or release_order(text) < release_order("3.7"):
        known = [p for p in PROFILES if p != "proposed" and
                 release_order(p) >= release_order("3.7")]
        raise argparse.ArgumentTypeError(f"{text!r}: name a release from 3.7 on: "
                                         + ", ".join(known))
    return text


def slow_arg(text: str) -> tuple[str, float]:
    """argparse type of --slow-metadata: BROKER:MS, e.g. b2:200."""
    broker, sep, ms = text.partition(":")
    try:
        delay = float(ms)
    except ValueError:
        delay = -1.0
    if not sep or not broker or not 0 <= delay < 1e9:
        raise argparse.ArgumentTypeError(f"{text!r}: write BROKER:MS, e.g. b2:200")
    return broker, int(delay) if delay.is_integer() else delay


def kraft_settings(args):
    """The KRaft variant the flags ask for, or None; the lag flags need --kraft."""
    from epochsim.study_kraft import KraftSettings

    given = [f for f, v in (("--metadata-apply-us", args.metadata_apply_us),
                            ("--metadata-fetch-wait-ms", args.metadata_fetch_wait_ms),
                            ("--slow-metadata", args.slow_metadata),
                            ("--kraft-profile", args.kraft_profile)) if v is not None]
    if not args.kraft:
        if given:
            raise UsageError(f"{given[0]} sets up the KRaft cluster; add --kraft")
        return None
    return KraftSettings(args.metadata_apply_us, args.metadata_fetch_wait_ms, args.slow_metadata,
                         args.kraft_profile)


def load_all(paths: list[str], settings) -> list:
    """The study scenarios at `paths`, as written or as their KRaft variant."""
    if settings is None:
        return [load(p) for p in paths]
    from epochsim.study_kraft import kraft_scenario
    from scenarios.schema import ScenarioError

    try:
        return [kraft_scenario(p, settings) for p in paths]
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None


def main(args) -> int:
    from epochsim import study

    paths = args.scenarios or study.default_scenarios()
    if not paths:
        raise UsageError(f"no study scenarios in {study.STUDY_DIR}; pass SCENARIO.toml files")
    settings = kraft_settings(args)
    scenario_list = load_all(paths, settings)  # validate everything before running anything
    distinct_names(paths, scenario_list)  # their rows in the table would merge
    check_seed_range(paths, scenario_list, args.seeds)
    from epochsim.study_plot import file_name, plot_latency

    out = prepare_out_dir(args.out, allowed=OUTPUTS | {file_name(sc.name) for sc in scenario_list})
    warmup = study.WARMUP_US
    if settings is not None:
        from epochsim.study_kraft import warmup_us
        warmup = warmup_us(warmup)
    jobs = study.study_jobs(scenario_list, args.seeds, args.check, warmup)
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
