"""What the ZK-style controller writes, and what it leaves alone (ref §1.4 table, §4 row 7).

- Cancelling a reassignment whose new replica never joined the ISR reverts the assignment only:
  neither the leader epoch nor the partition epoch (the ZK version of the partition state) moves,
  so the leader's later AlterPartition still matches and the ISR can shrink.
- An election that finds nobody writes nothing: a leaderless partition keeps its epoch however
  many brokers fail or start, and a controlled shutdown or leader move with no other live ISR
  member leaves the current leader in place.
"""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka import errors as E

NO_AUTO_REBALANCE = "auto_leader_rebalance = false"

HEAD = """
name = "controller-writes"
expect = "pass"
seed = 1
[run]
duration_ms = {duration}
settle_ms = 2000
[protocol]
profile = "3.4.1"
[cluster]
brokers = {brokers}
zk_session_timeout_ms = 1000
broker_session_timeout_ms = 1000
replica_lag_time_max_ms = 2000
{cluster_extra}
[[topics]]
name = "t"
partitions = 1
replication_factor = {rf}
{assignment}
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 20
"""


def _events(body: str, duration=12000, brokers=4, rf=3, assignment='assignment = [[1, 2, 3]]',
            cluster_extra: str = ""):
    text = HEAD.format(duration=duration, brokers=brokers, rf=rf, assignment=assignment,
                       cluster_extra=cluster_extra) + body
    return run_scenario(parse_scenario(text, "controller-writes.toml"), 1, keep_events=True)


def _states(verdict) -> list[dict]:
    return [e for e in verdict["_events"] if e["kind"] == "partition_state"]


CANCEL = """
[[faults]]          # b4's fetches crawl, so it cannot join the ISR before the cancellation
at_ms = 1000
action = "rule"
rule = "delay"
kind = "Fetch"
src = "b4"
delay_ms = 2000
duration_ms = 3000
[[faults]]
at_ms = 1500
action = "reassign"
target = "t-0"
replicas = [1, 2, 4]
[[faults]]
at_ms = 2000
action = "cancel_reassignment"
target = "t-0"
[[faults]]          # then a follower stops fetching: the leader must be able to shrink the ISR
at_ms = 4000
action = "block"
target = "b3"
dst = "b1"
"""


def test_cancelling_a_reassignment_stops_the_new_replica_then_bumps_the_epoch():
    """A cancel is a reassignment back to the original replicas: b4's StopReplica(delete)
    carries the epoch b4 already has (KAFKA-13972's equal epoch), and only then does the
    completion bump the leader epoch (`updateLeaderEpochAndSendRequest`); the leader's later
    ISR changes go through."""
    verdict = _events(CANCEL)
    states = _states(verdict)
    start = next(s for s in states if s["reason"] == "reassign_start")
    cancel = next(s for s in states if s["reason"] == "reassign_cancel")
    assert cancel["replicas"] == [1, 2, 3] and cancel["isr"] == start["isr"]
    assert (cancel["leader_epoch"], cancel["partition_epoch"]) == \
        (start["leader_epoch"] + 1, start["partition_epoch"] + 1)
    stop = next(e for e in verdict["_events"] if e["kind"] == "stop_replica" and e["node"] == "b4")
    assert stop["req_epoch"] == start["leader_epoch"], stop
    alters = [e for e in verdict["_events"] if e["kind"] == "alter_partition"]
    assert alters and all(a["error"] == 0 for a in alters), alters
    assert states[-1]["isr"] == [1, 2], states[-1]  # b3, cut off from the leader, was shrunk out
    assert not verdict["violations"]


def test_an_election_that_finds_nobody_does_not_bump_the_epoch():
    """b1, t-0's only replica, fails: t-0 is written leaderless once (`OfflineReplica`); the
    elections that find nobody, b2's start's and a new controller's, write nothing. A 3.4.1
    controller taking over takes b1's replica offline again, which writes a new epoch
    (`doRemoveReplicasFromIsr` writes `newLeaderAndIsr` though the ISR keeps its last member,
    KAFKA-3143): that write's reason says so."""
    body = """
[[faults]]
at_ms = 1000
action = "crash"
target = "b1"
[[faults]]
at_ms = 3000
action = "crash"
target = "b2"
[[faults]]
at_ms = 5000
action = "restart"
target = "b2"
[[faults]]
at_ms = 6000
action = "crash"
target = "controller"
"""
    states = _states(_events(body, brokers=2, rf=1, assignment="assignment = [[1]]"))
    leaderless = [s for s in states if s["leader"] == -1]
    assert leaderless and states[-1]["t"] > 6_000_000, states  # the new controller wrote too
    assert not any(s["reason"].startswith("elect") for s in leaderless), leaderless
    writes = [s for s in leaderless if s["reason"] != "controller_failover"]
    assert [s["reason"] for s in writes] == ["isr_remove_offline"] * 2, writes
    assert [s["leader_epoch"] for s in writes] == [1, 2], writes


def test_a_leader_with_no_other_live_isr_member_keeps_the_partition():
    body = """
[[faults]]
at_ms = 1000
action = "move_all_leaders"
target = "b1"
[[faults]]
at_ms = 1500
action = "controlled_shutdown"
target = "b1"
"""
    verdict = _events(body, duration=6000, brokers=2, rf=1, assignment="assignment = [[1]]")
    states = _states(verdict)
    moved = [s for s in states if s["reason"] in ("elect:move_all_leaders", "elect:controlled_shutdown")]
    assert not moved, moved  # b1 leads until it stops; then the broker-failure path's election
    # finds nobody and the replica's ISR removal writes the partition leaderless (OfflineReplica)
    assert states[-1]["reason"] == "isr_remove_offline" and states[-1]["leader"] == -1, states
    outcomes = [e for e in verdict["_events"] if e["kind"] == "fault_outcome"]
    assert any("no partition moved" in str(e) for e in outcomes), outcomes


def test_a_preferred_election_for_one_partition_says_why_it_did_nothing():
    """Kafka's ElectLeaders answers per partition (KIP-460): PREFERRED_LEADER_NOT_AVAILABLE
    while the preferred replica is out of the ISR, ELECTION_NOT_NEEDED once it leads."""
    body = """
[[faults]]
at_ms = 500
action = "move_leader"
target = "t-0"
to = "b2"
[[faults]]          # b1 stops fetching and leaves the ISR
at_ms = 1000
action = "block"
target = "b1"
dst = "b2"
[[faults]]
at_ms = 4000
action = "preferred_election"
target = "t-0"
[[faults]]
at_ms = 4500
action = "heal"
[[faults]]
at_ms = 8000
action = "preferred_election"
target = "t-0"
[[faults]]
at_ms = 9000
action = "preferred_election"
target = "t-0"
"""
    # the automatic rebalance off, as in Kafka's ControllerIntegrationTest, so that only the
    # scripted elections move the leader
    verdict = _events(body, duration=12000, brokers=3, cluster_extra=NO_AUTO_REBALANCE)
    outcomes = {e["step"]: e["outcome"] for e in verdict["_events"] if e["kind"] == "fault_outcome"}
    assert outcomes[2].startswith("PREFERRED_LEADER_NOT_AVAILABLE: b1 is not a live ISR replica"), outcomes
    assert 4 not in outcomes  # b1 caught up and was elected
    assert outcomes[5] == "ELECTION_NOT_NEEDED: b1 already leads t-0", outcomes
    assert _states(verdict)[-1]["leader"] == 1


def test_an_alter_partition_lost_with_its_controller_goes_to_the_next_one():
    """The controller dies with b1's AlterPartition (adding b4) unanswered: b1 sends it again to
    the controller that takes over, and the reassignment it waits for completes. Before, the
    request was sent once, so the ISR of t-0 could never change again."""
    body = """
[[faults]]          # b1's AlterPartition adding b4 is still on its way when c1 dies
at_ms = 1000
action = "rule"
rule = "delay"
kind = "AlterPartition"
delay_ms = 1000
duration_ms = 2000
[[faults]]
at_ms = 2000
action = "reassign"
target = "t-0"
replicas = [2, 3, 4]
[[faults]]
at_ms = 2500
action = "crash"
target = "controller"
"""
    verdict = _events(body, duration=14000)
    alters = [(e["node"], e["isr"]) for e in verdict["_events"] if e["kind"] == "alter_partition"]
    assert ("c2", [1, 2, 3, 4]) in alters, alters
    states = _states(verdict)
    assert "reassign_complete" in [st["reason"] for st in states]
    final = states[-1]  # the last write takes b1, the removed replica, out of the ISR
    assert (final["reason"], final["replicas"], final["leader"], final["isr"]) == (
        "reassign_remove", [2, 3, 4], 2, [2, 3, 4])
    assert not verdict["violations"]


def test_an_unanswered_alter_partition_is_sent_again_after_the_socket_timeout():
    """Its answer lost on a live connection, the AlterPartition waits out
    controller.socket.timeout.ms (30 s), then goes again on a new connection."""
    body = """
[[faults]]
at_ms = 1000
action = "rule"
rule = "drop"
kind = "AlterPartitionResponse"
count = 1
[[faults]]
at_ms = 1000
action = "block"
target = "b3"
dst = "b1"
"""
    verdict = _events(body, duration=36000)
    sends = [e for e in verdict["_events"] if e["kind"] == "send" and e["msg"] == "AlterPartition"]
    assert len(sends) == 2 and sends[1]["t"] - sends[0]["t"] == 30_000_000, sends
    assert _states(verdict)[-1]["isr"] == [1, 2]


def test_an_alter_partition_resent_to_a_new_controller_restarts_its_only_timeout():
    """Resent to the controller that took over, the AlterPartition's clock starts again: the
    timeout of the first send no longer fires a resend of its own. b3 falls out of the ISR
    and catches up while the controller dies with b1's AlterPartition adding it back; c2's
    answer is lost, so the request goes once more, 30 s after the resend only."""
    body = """
[[faults]]
at_ms = 1000
action = "block"
target = "b3"
dst = "b1"
[[faults]]
at_ms = 4000
action = "rule"
rule = "delay"
kind = "AlterPartition"
delay_ms = 1000
duration_ms = 1000
[[faults]]
at_ms = 4000
action = "heal"
[[faults]]
at_ms = 4500
action = "crash"
target = "controller"
[[faults]]
at_ms = 5000
action = "rule"
rule = "drop"
kind = "AlterPartitionResponse"
count = 1
"""
    verdict = _events(body, duration=45000, brokers=3)
    sends = [(e["t"], e["isr"]) for e in verdict["_events"]
             if e["kind"] == "send" and e["msg"] == "AlterPartition"]
    expand = [t for t, isr in sends if isr == [1, 2, 3]]
    assert len(expand) == 3, sends
    assert expand[2] - expand[1] == 30_000_000 and expand[1] - expand[0] > 1_000_000, sends
    assert _states(verdict)[-1]["isr"] == [1, 2, 3]


def test_an_alter_partition_from_a_registration_the_controller_dropped_is_refused_whole():
    """b1 loses its ZooKeeper session, so the controller takes it for dead and elects b2; b1,
    still leading in its own view, asks to shrink the ISR to itself. The controller refuses
    the request as a whole, STALE_BROKER_EPOCH (`processAlterPartition`: b1 is no live broker
    it knows), and b1's AlterPartitionManager sends it again every 50 ms; once b1 registered
    again, with a new broker epoch, and the controller read it, the request reaches the
    partition checks and is fenced (FENCED_LEADER_EPOCH: b2 leads a newer epoch)."""
    body = """
[[faults]]
at_ms = 1000
action = "block"
target = "b1"
dst = "zk"
[[faults]]
at_ms = 5000
action = "heal"
"""
    verdict = _events(body, brokers=3)
    answers = [(e["t"], e["error"]) for e in verdict["_events"]
               if e["kind"] == "alter_partition" and e["from"] == 1]
    registered = next(e["t"] for e in verdict["_events"] if e["kind"] == "broker_registered"
                      and e["node"] == "b1" and e["reason"] == "session_expired")
    stale = [t for t, error in answers if error == E.STALE_BROKER_EPOCH]
    # the controller reads the new registration at its next look, within 100 ms
    assert len(stale) > 2 and all(t < registered + 100_000 for t in stale)
    assert any(t > registered and error == E.FENCED_LEADER_EPOCH for t, error in answers)
    assert not verdict["violations"]
