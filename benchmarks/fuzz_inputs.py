"""The full structural fuzz of the shipped inputs (tests/fuzz/): every scenario, conformance
case and sweep spec, every key path mutated, each mutant loaded and a share of those that load
run. CI runs a seeded sample of it (tests/fuzz/test_inputs_fuzz.py); this is the long run.

    python -m benchmarks.fuzz_inputs                       # every mutant, 2% of loaded ones run
    python -m benchmarks.fuzz_inputs --per-doc 40 --run-share 0.2 --only conformance

Prints one line per failure (the shipped file, the key path, the class of fault, the first
line of what went wrong), then the counts per kind and per outcome. Exit 1 when any failed.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

from tests.fuzz.inputs import fuzz, shipped


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fuzz_inputs")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--per-doc", type=int, default=None, help="mutants per file (default: all)")
    p.add_argument("--run-share", type=float, default=0.02,
                   help="share of the mutants that load which are also run")
    p.add_argument("--only", default="", help="only the shipped files whose path holds this")
    p.add_argument("--every", type=int, default=1, help="only every N-th shipped file")
    args = p.parse_args(argv)
    inputs = [i for i in shipped() if args.only in i[1]][::args.every]
    counts: collections.Counter = collections.Counter()
    failures: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for r in fuzz(inputs, args.seed, args.per_doc, args.run_share, Path(tmp)):
            counts[(r.kind, r.outcome)] += 1
            if r.failed:
                first = (r.detail.strip().splitlines() or [""])[-1][:160]
                failures[(r.outcome, first)] += 1
                print(f"FAIL {r.source} {r.where} [{r.label}] {r.outcome}: {first}", flush=True)
    print(f"{len(inputs)} files, {sum(counts.values())} mutants")
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:8} {outcome:12} {n}")
    print(f"{len(failures)} distinct failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
