"""INVALID_PRODUCER_EPOCH on a Produce: fatal for an idempotent producer until 2.6, a refusal
of the one batch from 2.7 (KIP-588), switch `invalid_producer_epoch_fatal`.

Kafka: `Errors.INVALID_PRODUCER_EPOCH` built a ProducerFencedException at 2.6.0 and an
InvalidProducerEpochException at 2.7.0; `TransactionManager.maybeTransitionToErrorState`
makes ProducerFencedException fatal (read at 2.6.0 and 2.7.0), and a fatal producer fails
every batch it holds, the ones in flight too (`Sender.maybeAbortBatches`).
"""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import resolve_protocol as profile
from sim.kafka.rules.client_producer import producer_fatal
from tests.probe.helpers import probe_checks

PROBE = """
name = "invalid-producer-epoch-{version}"
description = "two idempotent requests in flight; test-0's is answered INVALID_PRODUCER_EPOCH"

[protocol]
profile = "{version}"

[cluster]
brokers = 1

[[topics]]
name = "test"
partitions = 2
replication_factor = 1

[[producers]]
topic = "test"
enable_idempotence = true
retry_backoff_ms = 0

[probe]
kafka_test = "TransactionManager.maybeTransitionToErrorState"
kafka_tag = "{version}.0"
kafka_source = "clients/src/main/java/org/apache/kafka/clients/producer/internals/TransactionManager.java"
node = "p1"

[probe.state]
metadata = [{{ tp = "test-0", leader = 1, leader_epoch = 0 }}, {{ tp = "test-1", leader = 1, leader_epoch = 0 }}]
sequences = [{{ tp = "test-0", next_sequence = 1 }}, {{ tp = "test-1", next_sequence = 1 }}]
batches = [{{ batch_id = "a", tp = "test-0", base_sequence = 0, in_flight_to = 1, corr = 1 }},
           {{ batch_id = "b", tp = "test-1", base_sequence = 0, in_flight_to = 1, corr = 2 }}]

[[probe.steps]]
deliver = "ProduceResponse"
from = "b1"
body = {{ corr = 1, results = [{{ tp = "test-0", error = "INVALID_PRODUCER_EPOCH" }}] }}
expect = {{ "batch:a" = "failed", "batch_error:a" = "INVALID_PRODUCER_EPOCH", "batch:b" = "{b_state}" }}
"""


@pytest.mark.parametrize("version,b_state", [("2.6", "failed"), ("2.7", "in_flight")])
def test_an_invalid_producer_epoch_answer_is_fatal_until_2_6(version, b_state):
    """Until 2.6 the producer goes fatal and test-1's batch, still in flight, fails with it;
    from 2.7 only test-0's batch fails."""
    checks = probe_checks(PROBE.format(version=version, b_state=b_state))
    assert checks["batch:a"] == ("failed", "failed")
    assert checks["batch:b"] == (b_state, b_state)


def test_the_rule_reads_the_switch():
    assert producer_fatal(profile("2.6"), E.INVALID_PRODUCER_EPOCH)
    assert not producer_fatal(profile("2.7"), E.INVALID_PRODUCER_EPOCH)
    assert producer_fatal(profile("3.7"), E.CLUSTER_AUTHORIZATION_FAILED)
    assert not producer_fatal(profile("2.6"), E.NOT_LEADER_OR_FOLLOWER)
