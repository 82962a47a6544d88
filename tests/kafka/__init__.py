"""Helpers for model tests that drive actors directly."""

from __future__ import annotations

from epochsim.runner import header_for, schedule_for
from scenarios.schema import parse_scenario
from sim.core.trace import Trace
from sim.kafka.cluster import Cluster


def build_cluster(text: str, name: str = "unit.toml") -> tuple[Cluster, Trace]:
    """A cluster wired from scenario `text`, not yet run, with a trace that keeps its events."""
    sc = parse_scenario(text, name)
    schedule = schedule_for(sc, 1)
    trace = Trace(header_for(sc, 1, schedule), None, keep=True)
    return Cluster(sc.options, schedule, 1, trace), trace
