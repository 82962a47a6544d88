"""`epochsim run`: one scenario at one seed; trace, verdict, summary, repro line."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from epochsim.common import (
    add_override_args,
    describe_liveness,
    describe_violations,
    load,
    note_moved_defaults,
    parse_sets,
    prepare_out_dir,
    repro_line,
    seed_arg,
    set_args,
)
from epochsim.errors import UsageError
from epochsim.runner import draw_timeline, run_scenario
from epochsim.runstore import new_run_dir, point_latest, refuse_held_run
from reports.tracediff import diff_traces, first_different_line, render

HELP = """\
Run SCENARIO once at --seed (default: the scenario's `seed`), write DIR/trace.jsonl and
DIR/verdict.json, and print a summary with a copy-paste repro line. Without --out every run
gets its own directory, runs/<scenario>/<UTC time>-seed-<N>, and runs/<scenario>/latest points
to the newest; an --out that already holds a run is refused unless --force. The summary also says,
for each liveness rule, what it judged or why it judged nothing (a rule that judged nothing
holds vacuously: lengthen run.settle_ms or shorten the clients' timeouts).
Exit 0 when every invariant holds, 1 when one is violated, 2 on bad input.

  epochsim run scenarios/smoke.toml --seed 7            # runs/smoke/<time>-seed-7/
  epochsim run scenarios/smoke.toml --out runs/smoke --force
  epochsim run scenarios/smoke.toml --seed 7 --check-determinism"""


def register(subs) -> None:
    p = subs.add_parser("run", help="run one scenario at one seed", description=HELP,
                        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("--seed", type=seed_arg, help="random seed (default: the scenario's `seed`)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="output directory (default: a new runs/<scenario>/<time>-seed-<N>, with "
                        "runs/<scenario>/latest pointing to it)")
    p.add_argument("--force", action="store_true",
                   help="let --out replace the run a directory already holds")
    p.add_argument("--check-determinism", action="store_true",
                   help="run twice in fresh processes under different PYTHONHASHSEED and compare")
    p.add_argument("--no-plot", action="store_true",
                   help="do not draw the timeline (timeline.png) nor write its interactive page "
                        "(timeline.html)")
    add_override_args(p)
    p.set_defaults(func=main)


def main(args) -> int:
    overrides = parse_sets(args.sets, args.profile)
    scenario = load(args.scenario, overrides)
    note_moved_defaults(args.scenario, overrides, scenario)
    seed = scenario.seed if args.seed is None else args.seed
    if args.check_determinism:
        if args.out:  # its two runs live in a temporary directory: --out would stay empty
            raise UsageError(f"--out {args.out}: --check-determinism writes no run, it compares "
                             "two in a temporary directory; leave out --out, or run without "
                             "--check-determinism to keep the trace")
        return check_determinism(args.scenario, seed, overrides)
    if args.out:
        refuse_held_run(args.out, args.force)
        out = prepare_out_dir(args.out)
    else:
        out = prepare_out_dir(new_run_dir("runs", scenario.name, seed))
    verdict = run_scenario(scenario, seed, out)
    pictures = [] if args.no_plot else draw_timeline(out)
    latest = None if args.out else point_latest(out)
    print_summary(verdict, args.scenario, out, overrides, pictures)
    if latest:
        print(f"  latest: {latest} -> {os.path.basename(out)}")
    disagrees = "probe" in verdict and not verdict["expectation_met"]
    return 1 if verdict["violations"] or disagrees else 0


def print_summary(verdict: dict, scenario_path: str, out: str | None,
                  overrides: dict | None = None, pictures: list[str] = ()) -> None:
    run = verdict["run"]
    m = verdict["metrics"]
    status = "VIOLATED" if verdict["violations"] else "ok"
    events = run.get("trace_events", run["events"])
    print(f"{verdict['scenario']} seed {verdict['seed']}: {status}  "
          f"({events} events, {run['events']} simulation steps, {run['end_us'] / 1e6:.3f}s "
          f"simulated, stopped by {run['stopped_by']})")
    print(f"  trace_digest {verdict['trace_digest']}")
    if "probe" in verdict:  # a probe: each check, Kafka's value against the model's
        for c in verdict["probe"]:
            mark = "agree" if c["agree"] else "DISAGREE"
            print(f"  step {c['step']} {c['check']}: Kafka {c['kafka']}, model {c['model']}: {mark}")
    else:
        print(f"  acked {m['acked']}  failed {m['failed']}  retries {m['retries']}  "
              f"p99 {m['produce_latency_p99_ms']} ms  stale-epoch appends "
              f"{m['stale_epoch_appends']}  acks=1 lost {m['acks1_lost']}")
    if m.get("metadata_lag"):  # KRaft: how far behind each broker's metadata is
        lags = "  ".join(f"{b} {v['applied_offset']}/{m['metadata_high_watermark']} "
                         f"(max {v['max_ms']} ms)" for b, v in m["metadata_lag"].items())
        print(f"  metadata applied: {lags}")
    for line in describe_violations(verdict):
        print(line)
    for line in describe_liveness(verdict.get("liveness", {})):
        print(line)
    exp = "met" if verdict["expectation_met"] else "NOT met"
    note = verdict.get("expectation_note")
    print(f"  expectation {verdict['expect']!r}: {exp}" + (f": {note}" if note else ""))
    if out:
        print("  wrote " + ", ".join([f"{out}/trace.jsonl", f"{out}/verdict.json", *pictures]))
    print(f"  repro: {repro_line(scenario_path, verdict['seed'], overrides=overrides)}")


def check_determinism(scenario_path: str, seed: int, overrides: dict | None = None) -> int:
    """Two fresh processes, two hash seeds; report the first diverging event if any."""
    with tempfile.TemporaryDirectory(prefix="epochsim-det-") as tmp:
        dirs = []
        for hash_seed in ("1", "2"):
            out = os.path.join(tmp, f"h{hash_seed}")
            env = dict(os.environ, PYTHONHASHSEED=hash_seed)
            cmd = [sys.executable, "-m", "epochsim", "run", scenario_path, "--seed", str(seed),
                   "--out", out, "--no-plot", *set_args(overrides or {})]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode == 2:  # the child's one line, without its own "error: "
                last = (proc.stderr.strip().splitlines() or ["bad input"])[-1]
                raise UsageError(last.removeprefix("error: "))
            if proc.returncode not in (0, 1) or not os.path.isfile(os.path.join(out, "verdict.json")):
                # 1 is a violation, which a run reports with its verdict; anything else crashed
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"run under PYTHONHASHSEED={hash_seed} did not finish (exit "
                      f"{proc.returncode}): {last}", file=sys.stderr)
                return 1
            dirs.append(out)
        traces = [os.path.join(d, "trace.jsonl") for d in dirs]
        raw = first_different_line(*traces)
        if raw is None:
            print(f"deterministic: seed {seed} gives byte-identical traces under "
                  "PYTHONHASHSEED=1 and 2")
            return 0
        diff = diff_traces(*traces)
    print("NOT deterministic: the runs under PYTHONHASHSEED=1 (A) and 2 (B) differ")
    if diff.same_events and not diff.setup:  # the same values, written in another order
        lineno, a, b = raw
        print(f"  the same events, written differently; first at line {lineno}:")
        print(f"  A: {a}")
        print(f"  B: {b}")
    for line in render(diff)[2:]:
        print(f"  {line}")
    return 1
