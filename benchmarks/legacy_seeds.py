"""Which seeds of the random fault mixes break the KIP invariants on a profile without the KIP.

Not a test: a measurement for `docs/kip-evidence.md`. For each (mix scenario, legacy profile,
invariant) it runs seeds 1..N and lists the seeds whose run violates the invariant, and checks
the same seeds on `proposed` (which must be clean).

    python -m benchmarks.legacy_seeds [--seeds 40] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor

CASES = [
    ("scenarios/mix-delayed-metadata.toml", "3.7", "stale_leader_append"),
    ("scenarios/mix-reassignment-churn.toml", "2.5", "stop_replica_out_of_order"),
]


def _violated(job):
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    path, profile, seed = job
    verdict = run_scenario(load_scenario(path, {"protocol.profile": profile}), seed)
    return job, verdict["violated"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    jobs = [(path, prof, s) for path, legacy, _ in CASES for prof in (legacy, "proposed")
            for s in range(1, args.seeds + 1)]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(pool.map(_violated, jobs))
    for path, legacy, invariant in CASES:
        for prof in (legacy, "proposed"):
            seeds = [s for s in range(1, args.seeds + 1) if invariant in results[(path, prof, s)]]
            print(f"{os.path.basename(path)} profile {prof}: {invariant} on {len(seeds)}/{args.seeds} "
                  f"seeds: {seeds}")


if __name__ == "__main__":
    main()
