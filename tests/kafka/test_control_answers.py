"""What a broker answers to the controller's requests and to the requests they release:
posed as probes (a broker set to a state, sent hand-written messages), each from a Kafka
unit test (see scenarios/conformance/control-*)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

LEADER = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
[probe]
kafka_test = "ReplicaManagerTest.testClearFetchPurgatoryOnStopReplica"
kafka_tag = "{tag}"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 1
replicas = [1, 2]
"""

PARKED_FETCH_THEN_DELETE = LEADER + """
[[probe.steps]]
deliver = "Fetch"
from = "k1"
body = {{ replica_id = -1, max_wait_ms = 500, partitions = [{{ tp = "t-0", fetch_offset = 0 }}] }}
expect = {{ "answered" = false }}
[[probe.steps]]
deliver = "StopReplica"
body = {{ partitions = [{{ tp = "t-0"{epoch}, delete = true }}] }}
expect = {{ "sent_error:FetchResponse/t-0" = "NOT_LEADER_OR_FOLLOWER", "hosted:t-0" = false }}
"""


def _checks(text: str) -> dict:
    verdict = run_scenario(parse_scenario(text, "probe.toml"), 1)
    return {(c["step"], c["check"]): (c["kafka"], c["model"]) for c in verdict["probe"]}


def _disagreements(text: str) -> list:
    return [(key, kafka, model) for key, (kafka, model) in _checks(text).items() if kafka != model]


@pytest.mark.parametrize("profile,tag,epoch", [("2.5", "2.5.0", ""), ("3.7", "3.7.0", ", leader_epoch = -2")])
def test_a_fetch_parked_at_a_deleted_replica_is_answered_not_leader(profile, tag, epoch):
    """`ReplicaManager.stopReplica` (2.5) / `stopPartitions` (2.6+) removes the partition and
    only then completes its parked operations, so a parked Fetch is read again without the
    partition: NOT_LEADER_OR_FOLLOWER, not an empty answer."""
    text = PARKED_FETCH_THEN_DELETE.format(profile=profile, tag=tag, epoch=epoch)
    assert _disagreements(text) == []


TWO_PARTITIONS = LEADER + """
[[probe.steps]]
deliver = "LeaderAndIsr"
body = {{ partitions = [{{ tp = "t-0", leader = 1, leader_epoch = 0, replicas = [1, 2] }},
                       {{ tp = "t-1", leader = 2, leader_epoch = 3, replicas = [1, 2] }}] }}
expect = {{ "error:t-0" = "STALE_CONTROLLER_EPOCH", "error:t-1" = "NONE", "leader:t-1" = 2 }}
"""


def test_a_leader_and_isr_answer_names_every_partition():
    """A LeaderAndIsrResponse carries an error for each partition of the request, NONE for
    those applied (`ReplicaManager.becomeLeaderOrFollower`'s responseMap)."""
    assert _disagreements(TWO_PARTITIONS.format(profile="2.6", tag="2.6.0")) == []


LEADER_NOT_ALIVE = """
[protocol]
profile = "3.4.0"
[cluster]
brokers = 2
[probe]
kafka_test = "MetadataCacheTest.getTopicMetadataPartitionLeaderNotAvailable"
kafka_tag = "3.4.0"
node = "b2"
[[probe.steps]]
deliver = "UpdateMetadata"
body = { alive = [1], partitions = [{ tp = "topic-0", leader = 2, leader_epoch = 1, replicas = [1] }] }
expect = { "metadata_leader:topic-0" = 2 }
[[probe.steps]]
deliver = "Metadata"
from = "k1"
expect = { "answer.leader:topic-0" = -1, "answer.leader_epoch:topic-0" = 1 }
"""


def test_metadata_names_no_leader_for_a_leader_the_cache_does_not_list_alive():
    """The cache keeps the partition's leader as the controller sent it; the answer to a
    client names none (NO_LEADER_ID) while that broker is not among the live ones."""
    assert _disagreements(LEADER_NOT_ALIVE) == []
