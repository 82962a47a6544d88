"""The network resets a producer's connections while ProduceResponses are on their way
(scenarios/idem-connection-reset-dedup.toml): the broker had appended the batches, the client
never hears so and sends them again. Without idempotence the log holds them twice; with it
the broker answers the retries from its cache (ref §2.2), as Kafka's idempotent producer
exists to do."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from tests.conftest import scenario_path

NAME = "idem-connection-reset-dedup"


def _run(**overrides) -> dict:
    return run_scenario(load_scenario(scenario_path(NAME), overrides), 1, keep_events=True)


@pytest.fixture(scope="module")
def plain():
    return _run(**{"producers.0.enable_idempotence": False})


def test_the_reset_loses_the_answers_on_their_way_and_the_producer_hears_of_it(plain):
    events = plain["_events"]
    lost = [e for e in events if e["kind"] == "drop" and e["reason"] == "connection_reset"]
    assert lost and {e["msg"] for e in lost} == {"ProduceResponse"}
    assert {e["dst"] for e in lost} == {"p1"}
    heard = {e["peer"] for e in events if e["kind"] == "disconnect" and e["node"] == "p1"}
    assert "b1" in heard  # the leader (and any broker p1 asked for metadata)


def test_without_idempotence_the_retried_batches_are_written_twice(plain):
    assert plain["metrics"]["duplicates_non_idempotent"] > 0
    assert plain["violated"] == []  # counted, not a violation: Kafka promises nothing here


def test_with_idempotence_the_broker_answers_the_retries_from_its_cache():
    verdict = _run()
    assert verdict["violated"] == [] and verdict["metrics"]["duplicates_non_idempotent"] == 0
    assert verdict["metrics"]["retries"] > 0  # the same batches were sent again
    # the planted bug `no_dedup_cache`: the same reset duplicates them, and the invariant
    # that guards idempotence says so
    assert "duplicate_append" in _run(**{"protocol.mutant": "no_dedup_cache"})["violated"]
