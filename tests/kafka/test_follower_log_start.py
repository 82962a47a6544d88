"""A follower takes the leader's log start from each Fetch answer (KIP-107, 0.11+:
`ReplicaFetcherThread.processPartitionData` -> `maybeIncrementLogStartOffset`), and DeleteRecords
moves only the leader's (`Partition.deleteRecordsOnLeader`): scenario
delete-records-follower-catches-up, after Kafka's
`PlaintextAdminIntegrationTest.testReplicaCanFetchFromLogStartOffsetAfterDeleteRecords`."""

from __future__ import annotations

import functools

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.kafka.profiles import PROFILES
from sim.kafka.rules.replication import follower_log_start
from tests.conftest import scenario_path

SCENARIO = "delete-records-follower-catches-up"
DELETE_AT, RESTART_AT = 4_000_000, 6_000_000


@functools.lru_cache(maxsize=None)
def _events(profile: str) -> list:
    overrides = {"protocol.profile": profile}
    verdict = run_scenario(load_scenario(scenario_path(SCENARIO), overrides), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def _starts(events, node: str) -> list:
    return [(e["t"], e["log_start_offset"]) for e in events
            if e["kind"] == "log_start" and e["node"] == node and e["tp"] == "t-0"]


def test_delete_records_moves_the_leader_and_the_followers_follow_by_fetch():
    events = _events("2.6")
    assert _starts(events, "b1") == [(DELETE_AT, 100)]  # the leader, at once
    b2 = _starts(events, "b2")  # a live follower: with its next Fetch answer, not at once
    assert len(b2) == 1 and DELETE_AT < b2[0][0] < DELETE_AT + 600_000 and b2[0][1] == 100
    b3 = _starts(events, "b3")  # down when it ran: with its first answer after the restart
    assert len(b3) == 1 and RESTART_AT < b3[0][0] and b3[0][1] == 100
    # b3 came back with about 150 records, past the new start: its Fetch stayed in range
    assert not [e for e in events if e["kind"] == "truncate" and e["node"] == "b3"]


def test_before_kip_107_a_follower_keeps_its_own_log_start():
    assert PROFILES["0.10.2"].follower_log_start_from_leader is False
    events = _events("0.10.2")
    assert _starts(events, "b1") == [(DELETE_AT, 100)]
    assert _starts(events, "b2") == []  # the live follower never hears of it
    # b3 restarts, truncates to its checkpointed HW (0.10.2's rule) and so fetches below the
    # leader's log start: only OFFSET_OUT_OF_RANGE moves it there
    b3 = _starts(events, "b3")
    out_of_range = [e["t"] for e in events if e["kind"] == "truncate" and e["node"] == "b3"
                    and e["reason"] == "out_of_range"]
    assert len(b3) == 1 and b3[0][1] == 100 and out_of_range == [b3[0][0]]


def test_the_rule_takes_only_a_higher_start_within_the_followers_hw():
    on, off = PROFILES["2.6"], PROFILES["0.10.2"]
    assert follower_log_start(on, 100, 0, 150) == 100
    assert follower_log_start(on, 150, 0, 150) == 150
    assert follower_log_start(on, 100, 100, 150) is None  # not higher
    assert follower_log_start(on, 50, 100, 150) is None  # lower: a start never goes back
    assert follower_log_start(on, 200, 0, 150) is None  # above its HW: Kafka refuses it
    assert follower_log_start(off, 100, 0, 150) is None


BELOW_LEADER_START = """
name = "divergent-below-leader-log-start"
expect = "pass"
seed = 1
[run]
duration_ms = 6000
settle_ms = 2000
[protocol]
profile = "3.7"
[cluster]
brokers = 3
controllers = 2
broker_session_timeout_ms = 1500
zk_session_timeout_ms = 1500
replica_lag_time_max_ms = 3000
auto_leader_rebalance = false
[[topics]]
name = "t"
replication_factor = 3
assignment = [[1, 2, 3]]
[[producers]]
name = "p1"
topic = "t"
acks = 1
records_per_sec = 100
linger_ms = 100
enable_idempotence = "off"
metadata_max_age_ms = 500
request_timeout_ms = 1000
delivery_timeout_ms = 4000
[[faults]]
at_ms = 2200
action = "move_leader"
target = "t-0"
to = "b1"
[[faults]]
at_ms = 3000
action = "controlled_shutdown"
target = "b1"
[[faults]]
at_ms = 3800
action = "retention"
target = "t-0"
log_start_offset = 220
[[faults]]
at_ms = 3800
action = "restart"
target = "b1"
"""


def test_a_follower_drops_below_the_leaders_log_start_before_its_hw_covers_it():
    """b1 led epoch 1 with acks=1 writes b2 never fetched; b2 leads epoch 2 from its own log
    end, and DeleteRecords moves b2's log start past where the two diverge, which trims the
    epoch cache: b1, back, is told epoch 1 ended at the log start and truncates only to it,
    keeping its own batches below. The same answer moves b1's log start there, before its HW
    is announced (found by the self-test's deeper search of a correct model: with the HW
    announced first, `log_divergence` saw b1's batch below its HW)."""
    from scenarios.schema import parse_scenario

    verdict = run_scenario(parse_scenario(BELOW_LEADER_START, "d.toml"), 1, keep_events=True)
    assert verdict["violated"] == []
    events = [e for e in verdict["_events"] if e["node"] == "b1" and e["t"] >= 3_800_000]
    truncated = [e["to_offset"] for e in events if e["kind"] == "truncate"]
    assert truncated == [220]  # the leader's log start, not where the logs diverge
    kinds = [e["kind"] for e in events if e["kind"] in ("log_start", "hw")]
    assert kinds[:2] == ["log_start", "hw"], kinds
