"""The `sent_error:Kind/tp` check: the error for a partition in a message the node sent during
the step to anyone, such as the answer to a parked request that the step released."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, parse_scenario

PARKED_PRODUCE = """
[protocol]
profile = "2.6"
[cluster]
brokers = 2
[probe]
kafka_test = "ReplicaManagerTest.testClearPurgatoryOnBecomingFollower"
kafka_tag = "2.6.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1, 2]
[[probe.steps]]
deliver = "Produce"
from = "p1"
body = {{ acks = -1, partitions = [{{ tp = "t-0" }}] }}
expect = {{ {key} = "NOT_LEADER_OR_FOLLOWER" }}
[[probe.steps]]
deliver = "LeaderAndIsr"
body = {{ partitions = [{{ tp = "t-0", leader = 2, leader_epoch = 1, replicas = [1, 2] }}] }}
expect = {{ {key} = "NOT_LEADER_OR_FOLLOWER" }}
"""


def _checks(key: str) -> list:
    verdict = run_scenario(parse_scenario(PARKED_PRODUCE.format(key=key), "p.toml"), 1)
    return [(c["check"], c["model"]) for c in verdict["probe"]]


def test_it_reads_the_released_answer_and_none_before():
    """Step 0 parks the Produce (nothing sent yet); step 1 releases its answer."""
    assert _checks('"sent_error:ProduceResponse/t-0"') == [
        ("sent_error:ProduceResponse/t-0", "none"),
        ("sent_error:ProduceResponse/t-0", "NOT_LEADER_OR_FOLLOWER")]


def test_a_kind_or_partition_the_node_did_not_send_reads_none():
    assert _checks('"sent_error:FetchResponse/t-0"')[1] == ("sent_error:FetchResponse/t-0", "none")
    assert _checks('"sent_error:ProduceResponse/t-1"')[1] == ("sent_error:ProduceResponse/t-1", "none")


def test_it_needs_its_argument():
    with pytest.raises(ScenarioError, match="needs an argument"):
        parse_scenario(PARKED_PRODUCE.format(key='"sent_error"'), "p.toml")
