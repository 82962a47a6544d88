"""Shared test helpers: paths and a cached scenario runner."""

from __future__ import annotations

import functools
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def scenario_path(name: str) -> str:
    return os.path.join(ROOT, "scenarios", name if name.endswith(".toml") else f"{name}.toml")


@functools.lru_cache(maxsize=None)
def run_cached(name: str, seed: int, overrides: tuple = ()) -> dict:
    """Run a shipped scenario once per (name, seed, overrides) for the whole test session."""
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    return run_scenario(load_scenario(scenario_path(name), dict(overrides)), seed)


@pytest.fixture
def run_shipped():
    return run_cached
