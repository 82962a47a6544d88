"""Tests of `epochsim sweep`: the spec, cells and chunk plan (fast), and one Spark sweep."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A small, fast base scenario (a few ms per run) with a random mix, so every seed differs.
TINY = """
name = "tiny"
description = "leader moves under delayed LeaderAndIsr, short"
expect = "pass"

[run]
duration_ms = 3000
settle_ms = 1000

[protocol]
profile = "3.7"

[[topics]]
name = "t"
replication_factor = 2

[[producers]]
topic = "t"
acks = 1
records_per_sec = 100
linger_ms = 20
metadata_max_age_ms = 200
enable_idempotence = false

[[mix]]
action = "rule"
every_ms = 500
params = { rule = "delay", kind = "LeaderAndIsr", delay_ms = 800 }
duration_ms = 300

[[mix]]
action = "move_leader"
every_ms = 300
targets = ["t-0"]
"""


def write_spec(folder, body: str, scenario: str = TINY) -> str:
    """A spec file `sweep.toml` beside the scenario `base.toml` in `folder`; returns its path."""
    (folder / "base.toml").write_text(scenario, encoding="utf-8")
    path = folder / "sweep.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)
