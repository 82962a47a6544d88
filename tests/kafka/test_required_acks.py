"""A Produce whose acks is not -1, 0 or 1 appends nothing: a partition the broker's metadata
cache knows is answered INVALID_REQUIRED_ACKS (`ReplicaManager.isValidRequiredAcks`), one it
does not UNKNOWN_TOPIC_OR_PARTITION (`KafkaApis.handleProduceRequest` answers those first)."""

from __future__ import annotations

import pytest

from sim.kafka.rules.epochs import valid_required_acks
from tests.probe.helpers import broker_probe, probe_checks

PROBE = broker_probe("ReplicaManagerTest.testIllegalRequiredAcks", "b1", 2) + """
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1, 2]
[[probe.steps]]
deliver = "Produce"
from = "k1"
body = {{ acks = {acks}, partitions = [{{ tp = "t-0" }}, {{ tp = "u-0" }}] }}
expect = {{ "error:t-0" = "NONE", "error:u-0" = "NONE", "log_end_offset:t-0" = 0 }}
"""


@pytest.mark.parametrize("acks", [2, 3, -2, 100])
def test_invalid_acks_append_nothing(acks):
    checks = probe_checks(PROBE.format(acks=acks))
    assert checks["error:t-0"][1] == "INVALID_REQUIRED_ACKS"
    assert checks["error:u-0"][1] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert checks["log_end_offset:t-0"][1] == 0


def test_valid_acks():
    assert [a for a in range(-3, 4) if valid_required_acks(a)] == [-1, 0, 1]
    checks = probe_checks(PROBE.format(acks=1))
    assert checks["error:t-0"][1] == "NONE" and checks["log_end_offset:t-0"][1] == 1
