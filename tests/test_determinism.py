"""Determinism: same scenario + seed => same trace digest, across runs and processes with
different PYTHONHASHSEED; a different seed gives a different digest; golden digests pin it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import ROOT, scenario_path
from tests.golden import GOLDEN_FILE, compute  # update on purpose: python -m tests.golden --update


def _digest_in_subprocess(name: str, seed: int, hash_seed: str, tmp) -> str:
    out = os.path.join(tmp, f"{name}-{seed}-{hash_seed}")
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-m", "epochsim", "run", scenario_path(name), "--seed",
                           str(seed), "--out", out, "--no-plot"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    with open(os.path.join(out, "verdict.json")) as fh:
        return json.load(fh)["trace_digest"]


def test_same_seed_same_digest_across_hash_seeds(tmp_path):
    a = _digest_in_subprocess("smoke", 7, "1", tmp_path)
    b = _digest_in_subprocess("smoke", 7, "2", tmp_path)
    assert a == b


def test_different_seed_different_digest():
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    sc = load_scenario(scenario_path("smoke"))
    assert run_scenario(sc, 7)["trace_digest"] == run_scenario(sc, 7)["trace_digest"]
    assert run_scenario(sc, 7)["trace_digest"] != run_scenario(sc, 8)["trace_digest"]


def test_stored_trace_digest_matches_verdict(tmp_path):
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    from sim.core.trace import digest_of_lines, stored_lines
    verdict = run_scenario(load_scenario(scenario_path("kip570-stop-replica-reorder-legacy")), 1, str(tmp_path))
    header, lines = stored_lines(str(tmp_path / "trace.jsonl"))
    assert digest_of_lines(header, lines) == verdict["trace_digest"]


def test_golden_digests():
    with open(GOLDEN_FILE) as fh:
        golden = json.load(fh)
    got = compute()
    assert set(got) == set(golden)
    for key in sorted(golden):
        assert got[key] == golden[key], f"{key}: behaviour changed; if on purpose, run python -m tests.golden --update"
