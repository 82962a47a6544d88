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


ALTER = """
name = "alter-reset"
expect = "pass"
seed = 1
[run]
duration_ms = 8000
settle_ms = 1000
[cluster]
brokers = 3
replica_lag_time_max_ms = 1000
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = 1
records_per_sec = 100
# b1's first AlterPartition (dropping the crashed b3 from the ISR) is held on its way
[[faults]]
at_ms = 500
action = "rule"
rule = "hold"
kind = "AlterPartition"
release_kind = "StopReplica"
count = 1
[[faults]]
at_ms = 1000
action = "crash"
target = "b3"
[[faults]]
at_ms = 4000
action = "reset_connections"
target = "b1"
peer = "c1"
"""


@pytest.mark.parametrize("reset", [True, False])
def test_a_broker_resends_its_alter_partition_when_the_controller_connection_drops(tmp_path,
                                                                                  reset):
    """BrokerToControllerChannelManager puts a request whose connection dropped back at the
    head of its queue: the ISR change lands a link latency after the reset, not after the
    30 s controller.socket.timeout.ms that an unanswered request waits otherwise."""
    path = tmp_path / "s.toml"
    path.write_text(ALTER if reset else ALTER.split("[[faults]]\nat_ms = 4000")[0])
    events = run_scenario(load_scenario(str(path)), 1, keep_events=True)["_events"]
    shrunk = [e["t"] for e in events if e["kind"] == "partition_state"
              and e["reason"] == "alter_partition"]
    # (without the reset, the controller drops b3 itself once its session expires)
    assert shrunk == ([4_002_000] if reset else []), shrunk
