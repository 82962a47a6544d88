"""The ZooKeeper-mode controller's automatic preferred-leader rebalance
(`KafkaController.checkAndTriggerAutoLeaderRebalance`, auto.leader.rebalance.enable): the pure
rule, and when a run's controller applies it."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.rules.elections import auto_rebalance_elections

LIVE = {1, 2, 3}


def _part(tp, assignment, leader, isr=(1, 2, 3), live=LIVE):
    return (tp, tuple(assignment), leader, tuple(isr), set(live))


def test_a_broker_is_imbalanced_only_above_the_percentage():
    """1 of 10 partitions off its preferred leader is 10%, not above 10%: nothing; 2 of 10 is."""
    parts = [_part(f"t-{i}", (1, 2, 3), 1) for i in range(10)]
    one_off = [_part("t-0", (1, 2, 3), 2)] + parts[1:]
    two_off = [_part("t-0", (1, 2, 3), 2), _part("t-1", (1, 2, 3), 3)] + parts[2:]
    assert auto_rebalance_elections(one_off, 10, False, True) == []
    assert auto_rebalance_elections(two_off, 10, False, True) == [["t-0", "t-1"]]
    assert auto_rebalance_elections(one_off, 0, False, True) == [["t-0"]]


def test_only_partitions_whose_preferred_replica_can_lead_are_elected():
    """A leaderless partition counts as off its preferred leader; the preferred replica must
    be live and in the ISR to be elected (`canPreferredReplicaBeLeader`)."""
    parts = [_part("t-0", (1, 2), -1, isr=(1,)),  # leaderless: counted and elected
             _part("t-1", (1, 2), 2, isr=(2,)),  # b1 out of the ISR: counted, not elected
             _part("t-2", (1, 2), 2, live={2})]  # b1 not live: counted, not elected
    assert auto_rebalance_elections(parts, 10, False, True) == [["t-0"]]


def test_each_imbalanced_broker_is_one_election_in_broker_order():
    parts = [_part("b-0", (3, 1), 1), _part("a-0", (2, 1), 1), _part("c-0", (1, 2), 1)]
    assert auto_rebalance_elections(parts, 10, False, True) == [["a-0"], ["b-0"]]


def test_a_reassignment_in_progress_stops_it_only_before_kafka_10149():
    parts = [_part("t-0", (1, 2), 2)]
    assert auto_rebalance_elections(parts, 10, True, False) == []
    assert auto_rebalance_elections(parts, 10, True, True) == [["t-0"]]
    assert auto_rebalance_elections(parts, 10, False, False) == [["t-0"]]


SCENARIO = """
name = "auto-rebalance"
expect = "pass"
seed = 1
[run]
duration_ms = 9000
settle_ms = 2000
[protocol]
profile = "3.7"
[cluster]
brokers = 3
{cluster}
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
assignment = [[1, 2, 3]]
[[faults]]
at_ms = 500
action = "move_leader"
target = "t-0"
to = "b2"
[[faults]]
at_ms = 6000
action = "move_leader"
target = "t-0"
to = "b3"
"""


def _elections(cluster: str) -> list[tuple[int, int, int]]:
    verdict = run_scenario(parse_scenario(SCENARIO.format(cluster=cluster), "auto.toml"), 1,
                           keep_events=True)
    return [(e["t"], e["leader"], e["leader_epoch"]) for e in verdict["_events"]
            if e["kind"] == "partition_state" and e["reason"] == "elect:auto_preferred"]


def test_the_controller_checks_5_s_after_it_becomes_active_then_every_interval():
    """Kafka's defaults: the first check 5 s after the controller became active (at 0)
    moves t-0 back to b1; the next is 300 s later, beyond the run, so b3 keeps it."""
    assert _elections("") == [(5_000_000, 1, 2)]
    # with a 2 s interval the check at 7 s moves it back again
    assert _elections("leader_imbalance_check_interval_ms = 2000") == [
        (5_000_000, 1, 2), (7_000_000, 1, 4)]


def test_no_check_runs_with_the_rebalance_off():
    assert _elections("auto_leader_rebalance = false") == []
