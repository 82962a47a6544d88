"""`epochsim explore` and `epochsim shrink`: find a counterexample, then the smallest story.

Contract: explore searches fault schedules for SCENARIO with hypothesis (epochsim.explore),
shrinks the first failure while the same invariant fails, and writes DIR/counterexample.toml
(replayable with `epochsim run`), its trace.jsonl, verdict.json, timeline and explore.json
(runs, coverage). shrink minimises the recorded schedule of a failing run the same way. Both
print the shrunk schedule in plain words, progress goes to stderr, and the exit code is 1 when
a counterexample was written, 0 when none was found, 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import sys

from epochsim.common import (
    add_override_args,
    load,
    note_moved_defaults,
    parse_sets,
    positive_int,
    prepare_out_dir,
    seed_arg,
)
from epochsim.errors import UsageError, path_problem

EXPLORE_HELP = """\
Generate fault schedules for SCENARIO (its cluster, topics, workload and protocol, and its
scripted faults as the base of every case unless --no-story), run each, keep the cases that
reach something no earlier run did and derive new cases from them, and on the first invariant
violation shrink the schedule while the same invariant fails. Writes DIR/counterexample.toml
(replay with `epochsim run`), its trace.jsonl, verdict.json, timeline.png, timeline.html
(interactive), coverage.png (situations reached per run) and explore.json (runs, coverage of
protocol situations). The same --seed gives the same counterexample, byte for byte.
Exit 1 when a counterexample is found, 0 when none within the budget, 2 on bad input.

  epochsim explore scenarios/selftest/no_stop_replica_epoch_check.toml --budget 300 --seed 1
  epochsim explore scenarios/kip101-power-loss-divergence-fixed.toml --faults power_loss,crash

Fault kinds (--faults): crash, isolate, block, rule:delay, rule:hold, rule:reorder, rule:drop,
rule:duplicate, move_leader, preferred_election, reassign, controlled_shutdown,
controller_crash, move_all_leaders, retention, control_race are drawn by default; power_loss
(a broker loses its unflushed writes), reset_connections (the network resets connections,
losing what is in flight) and elect_leaders (the admin's ElectLeaders, preferred or unclean)
only when named, as are the KRaft-only stop_controller (a clean
stop: a quorum leader resigns first), split_quorum (a voter cut from the other voters),
cut_from_quorum (a broker cut from the quorum), slow_metadata (a broker applies metadata
late) and voter_change (KIP-853: a controller removed from the voters, maybe added back; only
with cluster.initial_controllers on 3.9+). Give a list to search with those kinds only, or +KIND / -KIND to add to or take
from the default set (--faults=-retention, --faults +split_quorum,+stop_controller)."""

SHRINK_HELP = """\
Minimise the fault schedule of a failing run (a run directory or its trace.jsonl) while the
same invariant fails: delta debugging over fault/undo pairs, then single steps, then simpler
times. Writes DIR/counterexample.toml and its trace, verdict and timeline like explore.
Exit 1 when a counterexample is written, 2 on bad input (or a run that breaks nothing).

  epochsim shrink runs/kip570-stop-replica-reorder-legacy/seed-1"""


def register(subs) -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    p = subs.add_parser("explore", help="search fault schedules for a counterexample",
                        description=EXPLORE_HELP, formatter_class=fmt)
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("--budget", type=positive_int, default=200,
                   help="generated runs before giving up (default 200)")
    p.add_argument("--seed", type=seed_arg, default=0, help="search seed (default 0)")
    p.add_argument("-o", "--out", metavar="DIR", help="output directory (default runs/explore/<scenario>)")
    add_override_args(p)
    p.add_argument("--target", metavar="INVARIANT",
                   help="the invariant to break (default: the scenario's expected violation, "
                        "else any); 'any' for any invariant")
    p.add_argument("--faults", metavar="KINDS", type=fault_kinds, default=None,
                   help="fault kinds to draw: a comma-separated list, or +KIND/-KIND changes "
                        "to the default set (see above)")
    p.add_argument("--max-faults", type=positive_int, default=8,
                   help="most fault episodes per generated schedule (default 8)")
    p.add_argument("--shrink-runs", type=positive_int, default=300,
                   help="most runs hypothesis may spend shrinking (default 300)")
    p.add_argument("--no-story", action="store_true",
                   help="drop the scenario's scripted [[faults]] instead of keeping them as "
                        "every case's base")
    p.add_argument("--differential", action="store_true",
                   help="count a failure only if the same schedule does not break the target "
                        "without the scenario's planted mutant")
    p.add_argument("--database", metavar="DIR",
                   help="hypothesis example database (default none: runs depend on --seed only)")
    p.add_argument("--no-plot", action="store_true", help="do not draw the timeline")
    _force_arg(p)
    p.set_defaults(func=main)
    s = subs.add_parser("shrink", help="minimise the schedule of a failing run",
                        description=SHRINK_HELP, formatter_class=fmt)
    s.add_argument("run", metavar="RUN_DIR_OR_TRACE")
    s.add_argument("-o", "--out", metavar="DIR",
                   help="output directory (default runs/shrink/<scenario>/seed-<N>)")
    s.add_argument("--target", metavar="INVARIANT",
                   help="the invariant to keep failing (default: the run's first violation)")
    s.add_argument("--no-plot", action="store_true", help="do not draw the timeline")
    _force_arg(s)
    s.set_defaults(func=shrink_main)


def _force_arg(parser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="let --out replace the results of an earlier search it holds")


def take_out_dir(out: str, force: bool) -> str:
    """`prepare_out_dir(out)`, refusing a directory that holds an earlier search's results
    unless `force`, and then removing them first: a search that found nothing left the last
    one's counterexample beside its own explore.json, and `report` showed it as this one's."""
    from epochsim.explore.output import SEARCH_FILES

    held = sorted(f for f in SEARCH_FILES if os.path.isfile(os.path.join(out, f)))
    if held and not force:
        raise UsageError(f"--out {out}: already holds the results of an earlier search "
                         f"({', '.join(held)}); pass --force to replace them, or choose "
                         "another --out")
    out = prepare_out_dir(out)
    try:
        for name in held:
            os.remove(os.path.join(out, name))
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot remove the earlier search's {exc.filename} "
                         f"({exc.strerror}); choose another --out") from None
    return out


def fault_kinds(text: str) -> tuple:
    from epochsim.explore.strategies import parse_kinds
    try:
        return parse_kinds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def progress(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def resolve_target(asked: str | None, scenario) -> str | None:
    """The invariant to break: --target, else the scenario's expected violation, else any."""
    if asked == "any":
        return None
    if asked is None:
        kind, _, name = scenario.expect.partition(":")
        return name if kind == "violation" else None
    if asked not in scenario.invariants:
        raise UsageError(f"--target {asked}: not among the scenario's invariants "
                         f"({', '.join(scenario.invariants)}); name one of them or 'any'")
    return asked


def main(args) -> int:
    from epochsim.explore.report import finish_explore
    from epochsim.explore.search import explore
    from epochsim.explore.strategies import KINDS, FaultSpace

    kinds = args.faults or KINDS
    overrides = parse_sets(args.sets, args.profile)
    scenario = load(args.scenario, overrides)
    note_moved_defaults(args.scenario, overrides, scenario)
    target = resolve_target(args.target, scenario)
    try:
        FaultSpace.of(scenario, args.max_faults, kinds)  # a window and kinds, checked first
    except ValueError as exc:
        raise UsageError(f"{args.scenario}: {exc}") from None
    out = args.out or os.path.join("runs", "explore", scenario.name)
    not_an_output(args.scenario, out, "the scenario being explored")
    out = take_out_dir(out, args.force)
    database = _database(args.database)
    reference = _reference(scenario, target) if args.differential else None
    drawn = "" if kinds == KINDS else f", faults {','.join(kinds)}"
    print(f"explore {scenario.name}: budget {args.budget}, seed {args.seed}, target "
          f"{target or 'any invariant'}{drawn}", file=sys.stderr)
    try:
        result = explore(scenario, args.budget, args.seed, target, args.max_faults,
                         args.shrink_runs, database, progress, reference, kinds,
                         story=not args.no_story)
    except ValueError as exc:
        raise UsageError(f"{args.scenario}: {exc}") from None
    return finish_explore(result, out, plot=not args.no_plot)


def not_an_output(source: str, out: str, what: str) -> None:
    """Refuse an --out where a file explore writes (counterexample.toml, trace.jsonl, ...) is
    `source` itself: writing the results would destroy the input, edits and all."""
    from epochsim.common import OWN_OUTPUTS

    for name in sorted(OWN_OUTPUTS):
        target = os.path.join(out, name)
        try:
            same = os.path.samefile(source, target)
        except (OSError, ValueError):  # either does not exist (yet), or a NUL byte
            same = False
        if same:
            raise UsageError(f"--out {out}: its {name} is {source}, {what}, which explore "
                             "would replace; choose another --out, or copy the scenario "
                             "elsewhere first")


def _reference(scenario, target: str | None):
    """The scenario without its planted mutant, for --differential."""
    from epochsim.explore.selftest import without_mutant
    if not scenario.options.protocol.mutant:
        raise UsageError("--differential: the scenario plants no mutant (protocol.mutant)")
    if target is None:
        raise UsageError("--differential needs a target invariant: give --target or an "
                         "expect = \"violation:<invariant>\" scenario")
    return without_mutant(scenario)


def _database(path: str | None):
    if path is None:
        return None
    from hypothesis.database import DirectoryBasedExampleDatabase
    # hypothesis swallows the errors of a database it cannot write, so a bad path would
    # silently keep nothing: make sure it is a directory we can create and write now.
    try:
        os.makedirs(path, exist_ok=True)
        writable = os.access(path, os.W_OK | os.X_OK)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise UsageError(f"--database {path}: cannot create it as a directory "
                         f"({path_problem(exc)}); pass a directory") from None
    if not writable:
        raise UsageError(f"--database {path}: cannot write into it; pass a writable directory")
    return DirectoryBasedExampleDatabase(path)


def shrink_main(args) -> int:
    from epochsim.explore.recorded import load_run
    from epochsim.explore.report import finish_shrink, shrink_run

    run = load_run(args.run)
    default = os.path.join("runs", "shrink", run.scenario.name, f"seed-{run.seed}")
    run_dir = args.run if os.path.isdir(args.run) else os.path.dirname(args.run) or "."
    if args.out and os.path.realpath(args.out) == os.path.realpath(run_dir):
        raise UsageError(f"--out {args.out}: is the run being shrunk, whose trace and verdict "
                         "the counterexample would replace; choose another --out")
    out = take_out_dir(args.out or default, args.force)
    outcome = shrink_run(run, args.target, progress)
    return finish_shrink(outcome, out, plot=not args.no_plot)
