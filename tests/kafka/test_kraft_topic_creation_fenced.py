"""A scenario's topic is created in KRaft mode only once each partition has an unfenced replica.

Kafka's `ReplicationControlManager.createTopic` refuses a topic a partition of which has no
active replica (INVALID_REPLICA_ASSIGNMENT for a manual assignment, INVALID_REPLICATION_FACTOR
for a placed one; read at 3.9.0-rc3), and whoever creates it asks again. The model once wrote
such partitions after waiting a session timeout, with no leader and an ISR of their first
replica; found by `explore --profile 4.3 --faults +power_loss,...` on kraft-controller-split
(a partition whose ISR, its first replica alone, crashed before it was ever unfenced: left
without a leader for good, `under_replicated_after_heal`).
"""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.kafka.rules.kraft_admin import partition_without_active_replica

# kraft-controller-split's cluster and workload, with the story the search shrank to: the
# brokers are still fenced when the controller's session-timeout wait for them ends
STORY = """
name = "kraft-topic-created-while-fenced"
expect = "pass"
seed = 62539
[run]
duration_ms = 20000
settle_ms = 6000
[protocol]
profile = "4.3"
[cluster]
mode = "kraft"
brokers = 3
controllers = 3
min_insync_replicas = 2
broker_session_timeout_ms = 1000
broker_heartbeat_interval_ms = 250
[[topics]]
name = "t"
partitions = 3
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 20
[[faults]]
at_ms = 1000
action = "stop_controller"
target = "c3"
[[faults]]
at_ms = 4400
action = "restart"
target = "c3"
[[faults]]
at_ms = 6000
action = "crash"
target = "b3"
[[faults]]
at_ms = 11000
action = "restart"
target = "b3"
"""


def test_a_partition_without_an_active_replica_is_named():
    assert partition_without_active_replica([[1, 2], [2, 3]], {1, 2}) is None
    assert partition_without_active_replica([[1, 2], [3, 4], [4]], {1, 2}) == 1
    assert partition_without_active_replica([[1]], set()) == 0


def test_no_partition_is_created_without_a_leader(tmp_path):
    path = tmp_path / "story.toml"
    path.write_text(STORY, encoding="utf-8")
    verdict = run_scenario(load_scenario(str(path)), 62539, keep_events=True)
    created = [e for e in verdict["_events"] if e["kind"] == "partition_state"
               and e.get("reason") == "PartitionRecord"]
    assert len(created) == 3
    assert all(e["leader"] in e["isr"] for e in created)
    assert verdict["violated"] == []
