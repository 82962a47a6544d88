"""Which seeds of the random fault mixes break the KIP invariants on a profile without the KIP.

Not a test: a measurement for `docs/kip-evidence.md`. For each (mix scenario, profiles,
invariant) it runs seeds 1..N on each profile, oldest first, and lists the seeds whose run
violates the invariant; the last profile is `proposed`, which must be clean.

    python -m benchmarks.legacy_seeds [--seeds 40] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ProcessPoolExecutor

CASES = [
    ("scenarios/mix-delayed-metadata.toml", ("3.7", "proposed"), "stale_leader_append"),
    ("scenarios/mix-reassignment-churn.toml", ("2.5", "proposed"), "stop_replica_out_of_order"),
    # KIP-570's race, seen as liveness: a replica deleted while being added stalls its reassignment
    ("scenarios/mix-reassignment-churn.toml", ("2.5", "proposed"), "under_replicated_after_heal"),
    # KIP-101: HW truncation (0.10.2), KIP-101's end offsets (0.11), KIP-279 (proposed)
    ("scenarios/mix-delayed-metadata.toml", ("0.10.2", "0.11", "proposed"), "acked_write_lost"),
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
    jobs = sorted({(path, prof, s) for path, profiles, _ in CASES for prof in profiles
                   for s in range(1, args.seeds + 1)})
    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(pool.map(_violated, jobs))
    for path, profiles, invariant in CASES:
        for prof in profiles:
            seeds = [s for s in range(1, args.seeds + 1) if invariant in results[(path, prof, s)]]
            print(f"{os.path.basename(path)} profile {prof}: {invariant} on {len(seeds)}/{args.seeds} "
                  f"seeds: {seeds}")


if __name__ == "__main__":
    main()
