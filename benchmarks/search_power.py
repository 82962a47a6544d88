"""The search's power per planted bug: at how many search seeds the self-test finds it.

Not a test: a measurement for `docs/explore.md`. The self-test's figure is one search seed;
a change of the search (a draw, a mutation, a chain) moves which bugs fall inside the budget
at that seed, so whether the change helps is read from the share of seeds. For each mutant
and each search seed in the range it runs the self-test's search of that mutant's base (the
same task as `epochsim selftest --mutants M --seed S --no-clean --no-plot`) and prints, per
mutant, the seeds that found it and the run each found it at, then the total.

    python -m benchmarks.search_power --seeds 1-20 --jobs 2
    python -m benchmarks.search_power --mutants no_stop_replica_epoch_check,lai_accepts_older_epoch

To compare two versions of the search, run it in a worktree of each, in the same hour.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

from epochsim.explore.selftest import mutant_task
from sim.kafka.profiles import MUTANTS

# the bases whose search is nearest the budget (docs/explore.md, docs/selftest.md)
HARD = ("no_produce_epoch_check", "no_stop_replica_epoch_check", "stop_replica_equal_epoch_flipped",
        "lai_accepts_older_epoch", "controller_reuses_leader_epoch", "follower_skips_truncation",
        "no_sequence_check", "consumer_skips_validation")


def seed_range(text: str) -> list[int]:
    """`a-b` (inclusive) or one seed; raises ValueError naming the text."""
    lo, _, hi = text.partition("-")
    try:
        first, last = int(lo), int(hi or lo)
    except ValueError:
        raise ValueError(f"--seeds {text!r}: give a seed or a range such as 1-20") from None
    if first < 0 or last < first:
        raise ValueError(f"--seeds {text!r}: the range must run upwards from 0 or more")
    return list(range(first, last + 1))


def _one(job: tuple) -> tuple[str, int, int | None]:
    mutant, seed, budget, out = job
    row = mutant_task((mutant, budget, seed, os.path.join(out, f"{mutant}-{seed}"), False, {}, 20))
    return mutant, seed, row["runs_to_first"] if row["found"] else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-20", help="search seeds, e.g. 1-20 (default)")
    parser.add_argument("--mutants", default=",".join(HARD),
                        help="comma-separated planted bugs (default: the eight nearest the budget)")
    parser.add_argument("--budget", type=int, default=150, help="runs per search (default 150)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    try:
        seeds = seed_range(args.seeds)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    mutants = [m.strip() for m in args.mutants.split(",") if m.strip()]
    unknown = [m for m in mutants if m not in MUTANTS]
    if unknown:
        parser.exit(2, f"error: --mutants: unknown {', '.join(unknown)}; see `epochsim list mutants`\n")
    with tempfile.TemporaryDirectory() as out:
        jobs = [(m, s, args.budget, out) for m in mutants for s in seeds]
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            found = {(m, s): runs for m, s, runs in pool.map(_one, jobs)}
    total = 0
    for m in mutants:
        hits = [found[(m, s)] for s in seeds]
        total += sum(r is not None for r in hits)
        runs = " ".join("-" if r is None else str(r) for r in hits)
        print(f"{m:34} {sum(r is not None for r in hits):3}/{len(seeds)}  {runs}")
    print(f"{'all':34} {total:3}/{len(seeds) * len(mutants)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
