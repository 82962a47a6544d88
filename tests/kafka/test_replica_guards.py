"""The two replica guards the self-test added to `proposed` (docs/selftest.md): the delete
fence with the topic-deletion sentinel (a LeaderAndIsr held behind StopReplica(delete, -2) must
not bring the deleted topic back), and what a FULL LeaderAndIsr may remove."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

HELD_BEHIND_DELETE = """
name = "lai-after-topic-delete"
expect = "pass"
seed = 1
[run]
duration_ms = 3000
settle_ms = 1000
[protocol]
profile = "proposed"
[cluster]
brokers = 3
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 100
linger_ms = 100
[[faults]]          # the leader move's LeaderAndIsr waits for the deletion's StopReplica
at_ms = 500
action = "rule"
rule = "hold"
kind = "LeaderAndIsr"
release_kind = "StopReplica"
duration_ms = 100
[[faults]]
at_ms = 500
action = "move_leader"
target = "t-0"
[[faults]]
at_ms = 600
action = "delete_topic"
target = "t"
"""


def _run(fence: bool) -> dict:
    sc = parse_scenario(HELD_BEHIND_DELETE, "lai-after-topic-delete.toml",
                        {"protocol.leader_and_isr_delete_fence": fence})
    return run_scenario(sc, 1, keep_events=True)


def _resurrected(events) -> list:
    deleted_at = next(e["seq"] for e in events if e["kind"] == "topic_deleted")
    return [e["node"] for e in events
            if e["kind"] == "log_created" and e["topic_id"] == 1 and e["seq"] > deleted_at]


@pytest.mark.parametrize("fence", [True, False])
def test_a_deleted_topic_stays_deleted_only_with_the_fence(fence):
    verdict = _run(fence)
    events = verdict["_events"]
    if fence:
        assert _resurrected(events) == []
        rejected = [p for e in events if e["kind"] == "lai_rejected" for p in e["partitions"]]
        assert rejected and all(p[2] == 2**31 - 1 for p in rejected)  # every epoch fenced
        assert verdict["violations"] == []
    else:
        assert sorted(_resurrected(events)) == ["b1", "b2", "b3"]


# -- full_leader_and_isr: what a FULL LeaderAndIsr may remove ---------------------------------

def _full_leader_and_isr(broker, controller_epoch: int, corr: int):
    """A FULL LeaderAndIsr from `broker`'s controller that lists no partition."""
    from sim.core.network import Message
    from sim.kafka.messages import LeaderAndIsr
    req = LeaderAndIsr(broker.controller, controller_epoch, broker.broker_epoch, corr, (),
                       full=True)
    return Message(0, broker.controller, broker.name, "LeaderAndIsr", req)


def test_a_full_leader_and_isr_removes_what_it_does_not_list_unless_a_later_request_did():
    """A FULL request removes every local replica it does not list, live or not, except one
    that a LeaderAndIsr sent after it brought online (this network can deliver that first)."""
    from sim.core.trace import Trace
    from sim.kafka.cluster import Cluster
    from sim.kafka.log import Log
    sc = parse_scenario(HELD_BEHIND_DELETE.split("[[faults]]")[0], "full-lai.toml")
    trace = Trace({"scenario": "full-lai", "seed": 1}, keep=True)
    cluster = Cluster(sc.options, [], 1, trace)
    cluster.kernel.until_us = 100_000
    cluster.run()
    b1 = cluster.world.actors["b1"]
    assert "t-0" in b1.partitions  # online: brought up by the first LeaderAndIsr
    epoch, corr = b1.partitions["t-0"].lai_stamp
    b1.logs["gone-0"] = (7, Log())  # a log left on disk from a topic the broker missed losing
    b1.dispatch(_full_leader_and_isr(b1, epoch, corr - 1))  # older, and lists nothing
    assert "gone-0" not in b1.logs and "t-0" in b1.logs and "t-0" in b1.partitions
    b1.dispatch(_full_leader_and_isr(b1, epoch, corr + 1))  # a newer one
    assert "t-0" not in b1.logs and "t-0" not in b1.partitions
    removed = [e for e in trace.events if e["kind"] == "log_deleted"]
    assert [(e["node"], e["tp"], e.get("reason")) for e in removed] == \
        [("b1", "gone-0", "stray"), ("b1", "t-0", "stray")]


# -- faults aimed at a partition whose topic is gone ---------------------------------------------

def test_partition_faults_after_the_topic_is_deleted_are_skipped_with_a_reason():
    """The schema checks targets against the topics a scenario declares, but a topic can be
    deleted while the run goes: a later leader move, preferred election or reassignment of
    one of its partitions does nothing and says why (a `fault_outcome`)."""
    text = HELD_BEHIND_DELETE.split("[[faults]]")[0] + """
[[faults]]
at_ms = 500
action = "delete_topic"
target = "t"
[[faults]]
at_ms = 800
action = "move_leader"
target = "t-0"
[[faults]]
at_ms = 900
action = "preferred_election"
target = "t-0"
[[faults]]
at_ms = 1000
action = "reassign"
target = "t-0"
replicas = [1, 2]
"""
    verdict = run_scenario(parse_scenario(text, "deleted-then-moved.toml"), 1, keep_events=True)
    outcomes = [e["outcome"] for e in verdict["_events"] if e["kind"] == "fault_outcome"]
    assert outcomes == ["no partition t-0 (its topic was deleted)"] * 3


# -- StopReplica without delete ---------------------------------------------------------------

LEADING = """
name = "stop-no-delete"
expect = "pass"
[protocol]
profile = "2.5"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 200
[[faults]]          # followers' Fetches are slow, so acks=all writes wait on the leader
at_ms = 500
action = "rule"
rule = "delay"
kind = "Fetch"
delay_ms = 2000
"""


def test_a_stop_replica_without_delete_leaves_a_leader_leading():
    """`ReplicaManager.stopPartitions` stops the fetcher and, without delete, leaves the
    partition as it is: a leader still leads, and its parked acks=all writes are completed only
    if they can be (`completeDelayedFetchOrProduceRequests`), not failed. On 2.5 a StopReplica
    carries no leader epoch, so a stale one reaches a leader unchecked."""
    from sim.core.network import Message
    from sim.kafka.messages import StopReplica, StopReplicaPartition
    from tests.kafka import build_cluster
    cluster, trace = build_cluster(LEADING)
    cluster.kernel.until_us = 1_000_000
    cluster.run()
    b1 = cluster.world.actors["b1"]
    parked = len(b1.waiters)
    topic_id = b1.partitions["t-0"].topic_id
    stop = StopReplica(b1.controller, b1.controller_epoch, b1.broker_epoch, 99,
                       (StopReplicaPartition("t-0", topic_id, -1, False, 0),))
    b1.on_stop_replica(Message(0, b1.controller, "b1", "StopReplica", stop))
    assert b1.partitions["t-0"].is_leader and "t-0" in b1.logs
    assert len(b1.waiters) == parked > 0  # the parked writes wait on


# -- KIP-841 and KAFKA-13837: brokers that are not (or should not be) replicas ------------------

ZOMBIE = """
name = "zombie"
expect = "pass"
seed = 1
[run]
duration_ms = 12000
settle_ms = 1000
[protocol]
profile = "3.7"
isr_shrink_bumps_epoch = false   # removal from the ISR does not fence b3's Fetches
[cluster]           # sessions as before 2.5 (KIP-537), so each story fits the run
zk_session_timeout_ms = 6000
broker_session_timeout_ms = 6000
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 100
[[faults]]          # b3 loses its ZooKeeper session but still reaches its leader
at_ms = 2000
action = "block"
target = "b3"
dst = "zk"
"""

STALE_LEADER_METADATA = """
[[faults]]          # and the leader never hears that b3 is gone
at_ms = 2000
action = "rule"
rule = "drop"
kind = "UpdateMetadata"
dst = "b1"
"""


def _isrs_and_alters(text: str, check: bool) -> tuple[list, list]:
    events = run_scenario(parse_scenario(text, "z.toml", {"protocol.ineligible_replica_check": check}),
                          1, keep_events=True)["_events"]
    return ([e["isr"] for e in events if e["kind"] == "partition_state"],
            [e["error"] for e in events if e["kind"] == "alter_partition"])


def test_a_broker_without_a_session_rejoins_the_isr_only_without_kip_841():
    """The controller removes b3 from the ISR when its session expires; b3 still fetches from
    b1. Before KIP-841 b1 adds it back at once; with it, b1 proposes only brokers its metadata
    lists alive, and the controller refuses an ISR naming a broker that is not live."""
    assert _isrs_and_alters(ZOMBIE, False) == ([[1, 2, 3], [1, 2], [1, 2, 3]], [0])
    assert _isrs_and_alters(ZOMBIE, True) == ([[1, 2, 3], [1, 2]], [])
    isrs, errors = _isrs_and_alters(ZOMBIE + STALE_LEADER_METADATA, True)
    assert isrs == [[1, 2, 3], [1, 2]] and errors and set(errors) == {107}  # INELIGIBLE_REPLICA


@pytest.mark.parametrize("profile", ["2.5", "3.3", "3.7"])
def test_a_fetch_from_a_broker_that_is_no_replica_is_an_error_only_from_3_3(profile):
    """KAFKA-13837 (3.3): UNKNOWN_LEADER_EPOCH for a Fetch naming an epoch, NOT_LEADER_OR_FOLLOWER
    for one without; before, no error and no records."""
    from sim.kafka.profiles import resolve_protocol
    from sim.kafka.rules.replication import non_replica_fetch_error
    proto = resolve_protocol(profile)
    later = proto.non_replica_fetch_error
    assert non_replica_fetch_error(proto, 0) == (75 if later else 0)
    assert non_replica_fetch_error(proto, -1) == (6 if later else 0)
    assert later is (profile != "2.5")


def test_a_control_request_for_a_previous_incarnation_is_fenced_only_from_kip_380():
    """KIP-380 (2.2): a StopReplica addressed to the broker epoch before a restart is answered
    STALE_BROKER_EPOCH; a 1.0 broker, whose requests carry no broker epoch, applies it."""
    from sim.core.network import Message
    from sim.kafka.messages import StopReplica, StopReplicaPartition
    from tests.kafka import build_cluster
    for profile, fenced in (("1.0", False), ("2.4", True)):
        cluster, trace = build_cluster(LEADING.replace('profile = "2.5"', f'profile = "{profile}"'))
        cluster.kernel.until_us = 300_000
        cluster.run()
        b3 = cluster.world.actors["b3"]
        stale = StopReplica(b3.controller, b3.controller_epoch, b3.broker_epoch - 1, 99,
                            (StopReplicaPartition("t-0", 1, -1, False, 0),))
        assert b3.broker_epoch - 1 >= 0
        seen = len(trace.events)
        b3.dispatch(Message(0, b3.controller, "b3", "StopReplica", stale))
        applied = [e for e in trace.events[seen:] if e["kind"] == "stop_replica"]
        assert (applied == []) is fenced


def test_a_broker_back_from_a_controlled_shutdown_rejoins_the_isr():
    """The controller keeps a shutting-down broker out of ISRs (KIP-841) only until it is
    gone: a shutdown asked while it is already down marks nothing (Kafka answers
    BrokerNotAvailable), and a broker that registers again is eligible."""
    text = ZOMBIE.split("[[faults]]")[0].replace('profile = "3.7"', 'profile = "proposed"') + "".join(
        f'[[faults]]\nat_ms = {at}\naction = "{action}"\ntarget = "b1"\n'
        for at, action in ((500, "controlled_shutdown"), (1500, "controlled_shutdown"),
                           (2500, "restart")))
    events = run_scenario(parse_scenario(text, "bounce.toml"), 1, keep_events=True)["_events"]
    isrs = [e["isr"] for e in events if e["kind"] == "partition_state" and e["tp"] == "t-0"]
    assert 1 not in isrs[1] and sorted(isrs[-1]) == [1, 2, 3], isrs


def test_a_new_controller_forgets_which_brokers_were_shutting_down():
    """`initializeControllerContext` clears `shuttingDownBrokerIds`: a broker that began a
    controlled shutdown under the old controller and registered again while no controller was
    active rejoins the ISR under the new one (the self-test's search of the correct model found
    it kept out for good: INELIGIBLE_REPLICA to every AlterPartition)."""
    text = ZOMBIE.split("[[faults]]")[0].replace('profile = "3.7"', 'profile = "proposed"') + "".join(
        f'[[faults]]\nat_ms = {at}\naction = "{action}"\ntarget = "{target}"\n'
        for at, action, target in ((100, "controlled_shutdown", "b1"), (100, "crash", "controller"),
                                   (100, "restart", "controller"), (700, "restart", "b1")))
    events = run_scenario(parse_scenario(text, "failover.toml"), 1, keep_events=True)["_events"]
    isrs = [e["isr"] for e in events if e["kind"] == "partition_state" and e["tp"] == "t-0"]
    errors = {e["error"] for e in events if e["kind"] == "alter_partition"}
    assert 1 not in isrs[1] and sorted(isrs[-1]) == [1, 2, 3] and 107 not in errors, (isrs, errors)


def _live_lists(events, node: str) -> list:
    return [e["alive"] for e in events if e["kind"] == "metadata" and e["node"] == node]


def test_a_broker_failure_that_changes_no_partition_still_tells_the_live_brokers():
    """`onReplicasBecomeOffline` sends an UpdateMetadata when no leader or ISR changed: b1,
    out of every ISR after its controlled shutdown, stops; b2 and b3 learn it is gone."""
    text = ZOMBIE.split("[[faults]]")[0].replace('profile = "3.7"', 'profile = "proposed"') + (
        '[[faults]]\nat_ms = 500\naction = "controlled_shutdown"\ntarget = "b1"\n')
    events = run_scenario(parse_scenario(text, "gone.toml"), 1, keep_events=True)["_events"]
    for node in ("b2", "b3"):
        assert _live_lists(events, node)[-1] == [2, 3], (node, _live_lists(events, node))


@pytest.mark.parametrize("fence", [False, True])
def test_a_late_update_metadata_undoes_a_newer_live_broker_list_only_without_the_fence(fence):
    """The finding pair's story: the UpdateMetadata saying b1 is gone reaches b2 after the one
    saying b1 is back. Without the fence b2 ends believing b1 dead and never proposes it for
    the ISR; with it, b2 keeps the newer list and the ISR is whole again."""
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    scenario = load_scenario(scenario_path("finding-isr-stuck-after-late-update-metadata-unfenced"),
                             {"protocol.update_metadata_fence": fence})
    events = run_scenario(scenario, 1, keep_events=True)["_events"]
    fenced = [e for e in events if e["kind"] == "metadata_fenced"]
    isr = [e["isr"] for e in events if e["kind"] == "partition_state"][-1]
    assert _live_lists(events, "b2")[-1] == ([1, 2, 3] if fence else [2, 3])
    assert (sorted(isr) == [1, 2, 3]) is fence and bool(fenced) is fence, (isr, fenced)
    if fence:
        assert fenced[0]["node"] == "b2" and fenced[0]["alive"] is True


def test_an_update_metadata_for_a_previous_incarnation_is_fenced_only_from_kip_380():
    """KIP-380 (2.2): UpdateMetadata carries the broker epoch too (`isBrokerEpochStale` in
    `handleUpdateMetadataRequest`); a controller's resend of one addressed to the broker before
    its restart cannot roll its cache back. A 1.0 broker applies it."""
    from sim.core.network import Message
    from sim.kafka.messages import UpdateMetadata
    from tests.kafka import build_cluster
    for profile, fenced in (("1.0", False), ("2.4", True)):
        cluster, _ = build_cluster(LEADING.replace('profile = "2.5"', f'profile = "{profile}"'))
        cluster.kernel.until_us = 300_000
        cluster.run()
        b3 = cluster.world.actors["b3"]
        stale = UpdateMetadata(b3.controller, b3.controller_epoch, 99, (), (1, 2),
                               broker_epoch=b3.broker_epoch - 1)
        b3.dispatch(Message(0, b3.controller, "b3", "UpdateMetadata", stale))
        assert (b3.alive_brokers != (1, 2)) is fenced
