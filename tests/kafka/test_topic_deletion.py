"""Topic deletion waits for every replica, as Kafka's ZooKeeper-mode TopicDeletionManager does.

A broker that is down while its topic is deleted keeps the replicas on disk. The deletion stays
pending (the topic is "marked for deletion", and its name cannot be reused) until that broker
starts again and confirms the StopReplica(delete). A controller that takes over in between
resumes the deletion. Before this, the deletion was forgotten and the returning broker kept
stray replicas of a topic nobody knew any more (`stray_replica`).
"""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

HEAD = """
name = "deletion"
expect = "pass"
[run]
duration_ms = 16000
settle_ms = 4000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
broker_session_timeout_ms = 6000  # sessions as before 2.5 (KIP-537), to fit the run
zk_session_timeout_ms = 6000
[[topics]]
name = "t"
partitions = 2
[[producers]]
topic = "t"
records_per_sec = 100
linger_ms = 20
[[faults]]
at_ms = 2000
action = "crash"
target = "b3"
[[faults]]
at_ms = 4000
action = "delete_topic"
target = "t"
[[faults]]
at_ms = 6000
action = "create_topic"
name = "t"
partitions = 1
"""

RESTART = """
[[faults]]
at_ms = 9000
action = "restart"
target = "b3"
[[faults]]
at_ms = 10000
action = "create_topic"
name = "t"
partitions = 1
"""


def _run(body: str, profile: str = "3.7"):
    text = HEAD.format(profile=profile) + body
    return run_scenario(parse_scenario(text, "deletion.toml"), 1, keep_events=True)


def _kinds(verdict, *kinds):
    return [e for e in verdict["_events"] if e["kind"] in kinds]


def test_a_broker_down_during_deletion_deletes_its_replicas_when_it_returns():
    verdict = _run(RESTART)
    outcomes = {e["step"]: e["outcome"] for e in _kinds(verdict, "fault_outcome")}
    assert outcomes[2] == "TOPIC_ALREADY_EXISTS: topic t is marked for deletion", outcomes
    b3_deleted = {e["tp"] for e in _kinds(verdict, "log_deleted") if e["node"] == "b3"}
    assert b3_deleted == {"t-0", "t-1"}
    done = _kinds(verdict, "topic_deletion_completed")
    assert len(done) == 1 and done[0]["topic_id"] == 1 and 9_000_000 < done[0]["t"] < 10_000_000
    assert 4 not in outcomes  # the name was free again at 10 s: the topic was created
    created = [e for e in _kinds(verdict, "partition_state") if e["reason"] == "create_topic"]
    assert [(e["tp"], e["topic_id"]) for e in created] == [("t-0", 2)]
    assert not verdict["violations"], verdict["violations"]


def test_each_live_replica_is_stopped_then_deleted():
    """`onPartitionDeletion`: OfflineReplica (StopReplica without deletion) before
    ReplicaDeletionStarted (with deletion), each at the deletion's epoch (-2, KIP-570)."""
    verdict = _run("")
    for broker in ("b1", "b2"):
        stops = [(e["tp"], e["delete"], e["req_epoch"]) for e in _kinds(verdict, "stop_replica")
                 if e["node"] == broker]
        assert stops == [("t-0", False, -2), ("t-1", False, -2),
                         ("t-0", True, -2), ("t-1", True, -2)], stops


def test_a_new_controller_resumes_a_pending_deletion():
    body = """
[[faults]]
at_ms = 7000
action = "crash"
target = "controller"
[[faults]]
at_ms = 13000
action = "restart"
target = "b3"
"""
    verdict = _run(body, profile="2.5")  # before KIP-570: StopReplica carries no epoch
    elected = [e for e in _kinds(verdict, "controller_elected") if e["t"] > 7_000_000]
    assert elected and elected[0]["node"] == "c2"
    stops = [e for e in _kinds(verdict, "stop_replica") if e["node"] == "b3"]
    assert {e["tp"] for e in stops} == {"t-0", "t-1"} and all(e["req_epoch"] == -1 for e in stops)
    done = _kinds(verdict, "topic_deletion_completed")
    assert len(done) == 1 and done[0]["node"] == "c2"
    assert not verdict["violations"], verdict["violations"]


def test_a_broker_that_never_returns_keeps_the_topic_marked_for_deletion():
    verdict = _run("")
    assert not _kinds(verdict, "topic_deletion_completed")
    assert not [e for e in _kinds(verdict, "partition_state") if e["reason"] == "create_topic"]


DELETE_WINDOW = """
name = "delete-window"
expect = "pass"
seed = 1
[run]
duration_ms = 9000
settle_ms = 1000
[protocol]
profile = "3.7"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 100
request_timeout_ms = 3000
[[faults]]          # the leader's StopReplica(delete) is held until a Metadata request passes
at_ms = 2990
action = "rule"
rule = "hold"
kind = "StopReplica"
dst = "b1"
release_kind = "Metadata"
count = 1
[[faults]]
at_ms = 3000
action = "delete_topic"
target = "t"
"""


def test_a_leader_whose_metadata_dropped_the_topic_appends_no_more():
    """`KafkaApis.handleProduceRequest` answers UNKNOWN_TOPIC_OR_PARTITION for a partition its
    metadata cache lacks before the replica manager sees the batch: once the deletion's
    UpdateMetadata reaches b1, it appends nothing to t-0 though its StopReplica is still held."""
    events = run_scenario(parse_scenario(DELETE_WINDOW, "d.toml"), 1, keep_events=True)["_events"]
    dropped = next(e["t"] for e in events if e["node"] == "b1" and e["kind"] == "metadata"
                   and ["t-0", -1, -2] in e["changes"])  # LeaderDuringDelete
    late = [e for e in events if e["node"] == "b1" and e["kind"] == "append" and e["t"] > dropped]
    refused = [e for e in events if e["node"] == "b1" and e["kind"] == "produce_result"
               and e["t"] > dropped and e["error"] == 3]  # UNKNOWN_TOPIC_OR_PARTITION
    assert late == [] and refused


def test_a_manual_assignment_is_taken_as_given_down_brokers_included():
    """ZooKeeper mode: `ZkAdminManager.createTopics` checks an assignment's shape, not that
    its brokers live, so the new topic's replica on b3 (down) is in its replicas and ISR."""
    verdict = _run(RESTART.replace('partitions = 1\n', 'assignment = [[3, 1]]\n'))
    created = [e for e in _kinds(verdict, "partition_state") if e["reason"] == "create_topic"]
    assert [(e["tp"], e["replicas"], e["topic_id"]) for e in created] == [("t-0", [3, 1], 2)]
    assert created[0]["leader"] in (3, 1)
