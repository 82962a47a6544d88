"""A restarted KRaft broker's replica Fetches before its registration is accepted.

Kafka's restarted broker fetches as soon as its first metadata publish makes it a follower,
while the controller refuses its registration until the previous incarnation's session ends;
the proposal `kraft_replicates_once_registered` holds its Fetches until then
(`finding-elr-restarted-replica-dropped` / `-proposed`).
"""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from tests.conftest import scenario_path

FINDING = "finding-elr-restarted-replica-dropped"
RESTART_US = 3_500_000  # the scenario restarts b2 here


def _run(name: str) -> dict:
    return run_scenario(load_scenario(scenario_path(name)), 1, keep_events=True)


def _b2_fetches(events: list[dict], start: int, end: int) -> int:
    return sum(1 for e in events if e["kind"] == "send" and e["node"] == "b2"
               and e.get("msg") == "Fetch" and start <= e["t"] < end)


def _b2_registered_at(events: list[dict]) -> int:
    """When the controller wrote b2's new incarnation's registration."""
    return next(e["t"] for e in events if e["kind"] == "metadata_append"
                and e["record"].get("kind") == "RegisterBrokerRecord"
                and e["record"].get("broker") == 2 and e["t"] > RESTART_US)


@pytest.mark.parametrize("name, before, violated", [
    (FINDING, True, ["acked_write_lost"]),
    (FINDING + "-proposed", False, []),
])
def test_a_restarted_broker_replicates_before_registering_unless_held(name, before, violated):
    verdict = _run(name)
    events = verdict["_events"]
    registered = _b2_registered_at(events)
    assert registered > RESTART_US + 1_000_000  # refused while the old session was valid
    assert (_b2_fetches(events, RESTART_US, registered) > 0) == before
    if not before:  # held until now, it fetches at once
        assert _b2_fetches(events, registered, registered + 200_000) > 0
    assert verdict["violated"] == violated
