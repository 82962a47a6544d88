"""Behaviour digests: every scenario under scenarios/ at seeds 1-3, events only.

A refactor that must not change behaviour is checked by taking these digests before and after:

    python -m tests.behaviour --write before.json
    ... change the code ...
    python -m tests.behaviour --compare before.json

Each digest covers the trace's event lines (not its header, so a new protocol switch or a new
harness version does not count as a change) and the run's verdict (violations and metrics). The
compare lists every (scenario, seed) whose digest moved and exits 1 if any did.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = (1, 2, 3)


def scenario_files() -> list[str]:
    """Every loadable scenario file under scenarios/ (sweep specs are not scenarios)."""
    paths = sorted(glob.glob(os.path.join(ROOT, "scenarios", "**", "*.toml"), recursive=True))
    return [p for p in paths if os.sep + "sweeps" + os.sep not in p or os.sep + "base" + os.sep in p]


def one(task: tuple[str, int]) -> tuple[str, str]:
    """(key, digest) of one run: the hash of its event lines and its verdict's findings."""
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    path, seed = task
    key = f"{os.path.relpath(path, ROOT)}@{seed}"
    with tempfile.TemporaryDirectory() as out:
        verdict = run_scenario(load_scenario(path), seed, out_dir=out)
        h = hashlib.sha256()
        with open(os.path.join(out, "trace.jsonl"), "rb") as fh:
            fh.readline()  # the header
            for line in fh:
                h.update(line)
    findings = {"violations": verdict["violations"], "metrics": verdict["metrics"],
                "run": verdict["run"]}
    h.update(json.dumps(findings, sort_keys=True).encode())
    return key, h.hexdigest()


def compute(jobs: int) -> dict[str, str]:
    tasks = [(p, s) for p in scenario_files() for s in SEEDS]
    with ProcessPoolExecutor(jobs) as pool:
        return dict(sorted(pool.map(one, tasks, chunksize=4)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--compare", metavar="FILE")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    now = compute(args.jobs)
    if args.write:
        with open(args.write, "w") as fh:
            json.dump(now, fh, indent=1, sort_keys=True)
        print(f"{len(now)} digests written to {args.write}")
        return 0
    with open(args.compare) as fh:
        before = json.load(fh)
    moved = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    for key in moved:
        print(f"moved: {key}")
    print(f"{len(now) - len(moved)} of {len(set(before) | set(now))} runs unchanged")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
