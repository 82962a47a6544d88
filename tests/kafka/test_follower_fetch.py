"""A follower whose fetch offset the leader's retention passed starts over at the leader's log
start (`fetchOffsetAndTruncate` / `truncateFullyAndStartAt`), catches up and rejoins the ISR,
instead of backing off forever. Before KIP-101 a follower truncates to its own HW as soon as
its leader changes; from KIP-101 on it waits for the leader's answer. Before KAFKA-7414 a
follower ahead of its leader's log end halts its broker unless unclean election is allowed.
Before 2.8 a follower that missed an epoch change never asks where its log diverges; a leader's
answer naming an epoch the follower lacks makes it truncate part way and ask again."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from sim.kafka.log import Log
from sim.kafka.rules.replication import offset_truncation_state
from tests.conftest import scenario_path

BEHIND_RETENTION = """
name = "follower-behind-retention"
expect = "pass"
seed = 1
[run]
duration_ms = 14000
settle_ms = 2000
[protocol]
profile = "3.4.1"
[cluster]
brokers = 3
replica_lag_time_max_ms = 2000
broker_session_timeout_ms = 6000
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = 1
records_per_sec = 200
[[faults]]          # b3 is down while retention moves the log start far past its log end
at_ms = 1000
action = "crash"
target = "b3"
[[faults]]
at_ms = 6000
action = "retention"
target = "t-0"
log_start_offset = 800
[[faults]]
at_ms = 7000
action = "restart"
target = "b3"
"""


def test_a_follower_behind_the_leaders_log_start_starts_over_there_and_rejoins():
    verdict = run_scenario(parse_scenario(BEHIND_RETENTION, "behind.toml"), 1, keep_events=True)
    events = verdict["_events"]
    b3 = [e for e in events if e["node"] == "b3" and e["t"] >= 7_000_000]
    restart = next(i for i, e in enumerate(b3) if e["kind"] == "log_start")
    assert b3[restart]["log_start_offset"] >= 800
    assert b3[restart - 1]["kind"] == "truncate" and b3[restart - 1]["reason"] == "out_of_range"
    fetched = [b[2] for e in b3[restart:] if e["kind"] == "replicate" for b in e["batches"]]
    assert fetched and fetched[0] == b3[restart]["log_start_offset"]
    isr = [e["isr"] for e in events if e["kind"] == "partition_state"]
    assert 3 not in isr[-2] and 3 in isr[-1], isr  # shrunk while down, back in after catching up
    assert not verdict["violations"]


def _b1_at_leader_change(profile: str) -> tuple[dict, list[dict]]:
    """b1's last HW before t-0 moves to b3 in the KIP-101 scenario, and b1's events at the move."""
    sc = load_scenario(scenario_path("kip101-hw-truncation-legacy"), {"protocol.profile": profile})
    events = run_scenario(sc, 1, keep_events=True)["_events"]
    b1 = [e for e in events if e["node"] == "b1"]
    move = next(e["t"] for e in b1 if e["kind"] == "replica_state" and e["leader"] == 3)
    hw = [e for e in b1 if e["kind"] == "hw" and e["t"] < move][-1]["hws"][0][2]
    leo = max(b[2] + b[3] for e in b1 if e["kind"] == "replicate" and e["t"] < move
              for b in e["batches"])
    return {"hw": hw, "leo": leo}, [e for e in b1 if e["t"] == move]


def test_before_kip101_a_follower_truncates_to_its_own_hw_when_its_leader_changes():
    before, at_move = _b1_at_leader_change("0.10.2")
    assert before["leo"] > before["hw"]  # b1 held batches above its HW, as followers do
    cut = [e for e in at_move if e["kind"] == "truncate"]
    assert cut == [dict(cut[0], to_offset=before["hw"], reason="high_watermark")], at_move


def test_from_kip101_on_a_follower_keeps_its_log_until_the_leader_answers():
    before, at_move = _b1_at_leader_change("0.11")
    assert before["leo"] > before["hw"]
    assert not [e for e in at_move if e["kind"] == "truncate"], at_move


def _b2_after_restart(overrides: dict) -> list[dict]:
    """b2's halt, crash and truncate events after it comes back in the KIP-101 scenario, with
    a producer that backs off exponentially (a 3.7 client): it is still backing off when b2
    returns, so b1's log is shorter than b2's. (A 0.10 client retries every 100 ms, and b1's
    log is longer by then.) The producer retries and unclean election is off, as the story
    needs, where 0.10.2's defaults are `retries` 0 and unclean election on."""
    overrides = {"protocol.client_backoff": "exponential", "producers.0.retries": 2**31 - 1,
                 "cluster.unclean_leader_election": False, **overrides}
    sc = load_scenario(scenario_path("kip101-hw-truncation-legacy"), overrides)
    events = run_scenario(sc, 1, keep_events=True)["_events"]
    return [e for e in events if e["node"] == "b2" and e["t"] > 6_000_000
            and e["kind"] in ("halt", "crash", "truncate")]


def test_before_kafka7414_a_follower_ahead_of_its_leader_halts_its_broker():
    events = _b2_after_restart({})
    assert [e["kind"] for e in events] == ["halt", "crash"], events
    assert events[0]["leader_end_offset"] < events[0]["log_end_offset"]


def test_a_follower_behind_its_new_leader_neither_halts_nor_truncates_out_of_range():
    events = _b2_after_restart({"protocol.client_backoff": "constant"})
    assert not [e for e in events if e["kind"] in ("halt", "crash")], events
    assert not [e for e in events if e.get("reason") == "out_of_range"], events


def test_after_kafka7414_or_with_unclean_election_it_truncates_instead():
    for overrides in ({"protocol.out_of_range_halts": False}, {"cluster.unclean_leader_election": True}):
        events = _b2_after_restart(overrides)
        assert [(e["kind"], e.get("reason")) for e in events] == [("truncate", "out_of_range")], \
            (overrides, events)


def _zombie_b2(profile: str) -> tuple[list[dict], int]:
    """b2's truncate events in the KAFKA-6880 scenario with KIP-320's fetch epochs off, and
    when b2 first hears of epoch 2 (the controller's retry of the LeaderAndIsr it lost)."""
    sc = load_scenario(scenario_path("kafka6880-zombie-follower-fixed"),
                       {"protocol.profile": profile, "protocol.fetch_epoch_check": False})
    events = run_scenario(sc, 1, keep_events=True)["_events"]
    b2 = [e for e in events if e["node"] == "b2"]
    told = next(e["t"] for e in b2 if e["kind"] == "replica_state" and e["leader_epoch"] == 2)
    return [e for e in b2 if e["kind"] == "truncate"], told


def test_before_2_8_a_follower_that_missed_the_epoch_change_never_asks():
    cuts, told = _zombie_b2("2.4")
    assert cuts == [], cuts  # it kept the old tail, and epoch 2 came with the same leader


def test_from_2_8_every_fetch_asks_so_the_zombie_truncates_before_it_hears():
    cuts, told = _zombie_b2("3.7")
    assert [e["reason"] for e in cuts] == ["diverging_epoch"], cuts
    assert cuts[0]["t"] < told


def _truncate_diverging(entries: list[tuple[int, int]], answer: tuple[int, int]) -> tuple[bool, Log]:
    """`offset_truncation_state` on a follower log of (epoch, batches) runs of 2-record
    batches: (whether it settled, the log after)."""
    log = Log()
    for epoch, batches in entries:
        for _ in range(batches):
            log.append(2, epoch, None, 0)
    local = log.end_offset_for_epoch(answer[0])
    target, _reason, done = offset_truncation_state(answer, local, log.hw, log.leo,
                                                    log.log_start_offset)
    log.truncate_to(target)
    return done, log


def test_an_answer_naming_an_epoch_the_follower_has_settles_the_truncation():
    done, log = _truncate_diverging([(0, 5), (3, 5)], (3, 14))  # epoch 3 ends at 14 on the leader
    assert done and log.leo == 14 and log.last_epoch() == 3


def test_an_answer_naming_an_epoch_the_follower_lacks_truncates_part_way_and_asks_again():
    # the follower has epochs 0 and 5; the leader's largest epoch <= 5 is 4, ending at 16
    done, log = _truncate_diverging([(0, 5), (5, 5)], (4, 16))
    assert not done  # AbstractFetcherThread: truncationCompleted = false
    assert log.leo == 10 and log.last_epoch() == 0  # the end of its own epoch below 4


def test_a_power_loss_drops_what_the_replica_appended_in_its_last_unflushed_ms():
    """In the KIP-101 power-loss scenario b2 loses power at 5.7 s with 1.5 s unflushed: its log
    ends where the first batch it received after 4.2 s began, and it keeps everything before."""
    events = run_scenario(load_scenario(scenario_path("kip101-power-loss-divergence-fixed")), 1,
                          keep_events=True)["_events"]
    b2 = [e for e in events if e["node"] == "b2"]
    cut = next(e for e in b2 if e["kind"] == "truncate" and e["reason"] == "power_loss")
    received = [(e["t"], b[2]) for e in b2 if e["kind"] == "replicate" and e["t"] < cut["t"]
                for b in e["batches"]]
    assert cut["t"] == 5_700_000
    assert cut["to_offset"] == min(base for t, base in received if t > 4_200_000)
    assert any(t <= 4_200_000 for t, _ in received)


def test_batches_lost_to_power_are_a_metric_not_a_violation():
    verdict = run_scenario(load_scenario(scenario_path("kip101-power-loss-divergence-fixed")), 1)
    assert verdict["violated"] == [] and verdict["metrics"]["acked_lost_to_power_loss"] > 0
    with open(scenario_path("kip101-power-loss-divergence-fixed")) as fh:
        text = fh.read().replace('action = "power_loss"', 'action = "crash"')
    text = "\n".join(line for line in text.splitlines() if not line.startswith("unflushed_ms"))
    crash = run_scenario(parse_scenario(text, "plain-crashes.toml"), 1)
    assert crash["metrics"]["acked_lost_to_power_loss"] == 0  # a process crash keeps the page cache


def test_a_follower_without_epochs_in_its_cache_truncates_to_the_leaders_answer():
    """A follower whose cache has no epoch for the answer (its batches predate leader epochs,
    message format v1): "safe to truncate to leader's offset" (`getOffsetTruncationState`),
    not back to its own high watermark."""
    done, log = _truncate_diverging([(-1, 5)], (3, 6))
    assert done and log.leo == 6, log.leo


LEARNS_HW = """
name = "learns-hw"
expect = "pass"
seed = 1
[run]
duration_ms = 2000
settle_ms = 500
[protocol]
profile = "{profile}"
[network]
latency = {{ dist = "constant", ms = 5 }}
[[topics]]
name = "t"
assignment = [[1, 2]]
[[producers]]
name = "p1"
topic = "t"
acks = 1
records_per_sec = 200
linger_ms = 10
"""


def _mean_hw_lag_us(profile: str) -> float:
    """How long after leader b1's HW reaches a value follower b2's HW does, on average. With
    acks=1 every batch finds the follower's Fetch answered at once with records, so the HW that
    answer carries is the one the switch decides."""
    events = run_scenario(parse_scenario(LEARNS_HW.format(profile=profile), "learns-hw.toml"), 1,
                          keep_events=True)["_events"]

    def hws(node, role):
        return [(e["t"], h[2]) for e in events if e["kind"] == "hw" and e["node"] == node
                and e["role"] == role for h in e["hws"]]
    follower, lags, j = hws("b2", "follower"), [], 0
    for t, hw in hws("b1", "leader"):
        while j < len(follower) and (follower[j][1] < hw or follower[j][0] < t):
            j += 1
        if j < len(follower):
            lags.append(follower[j][0] - t)
    assert len(lags) > 100
    return sum(lags) / len(lags)


def test_a_1_0_follower_learns_each_hw_a_round_trip_sooner_than_a_2_x_one():
    """KAFKA-7104 (2.0): the answer to the Fetch that moves the HW carries the HW read before
    it, so a 2.x follower learns it from its next Fetch, one round trip (10 ms here) after a
    1.0 follower, whose answer carried the leader's HW after the update."""
    sooner, later = _mean_hw_lag_us("1.0"), _mean_hw_lag_us("2.4")
    assert 9_000 <= later - sooner <= 11_000, (sooner, later)


STEADY = """
name = "steady"
expect = "pass"
[protocol]
profile = "{profile}"
isr_shrink_bumps_epoch = false
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 50
"""


def _fetcher_after_leader_and_isr(profile: str, epoch_step: int, leader: int = 1) -> int:
    """b2 follows b1 on t-0; its fetcher entry is given a far backoff, then b2 gets a
    LeaderAndIsr at leader epoch + `epoch_step` naming `leader`. Returns the entry's backoff
    after (what a restarted fetcher resets)."""
    from sim.core.network import Message
    from sim.kafka.messages import LeaderAndIsr, PartitionState
    from tests.kafka import build_cluster
    cluster, _ = build_cluster(STEADY.format(profile=profile))
    cluster.kernel.until_us = 500_000
    cluster.run()
    b2 = cluster.world.actors["b2"]
    p = b2.partitions["t-0"]
    partition_epoch = p.partition_epoch
    b2.fetchers[1]["t-0"] = 10**12
    state = PartitionState("t-0", p.topic_id, leader, p.leader_epoch + epoch_step,
                           p.partition_epoch + 1, (1, 2), (1, 2, 3))
    req = LeaderAndIsr(b2.controller, b2.controller_epoch, b2.broker_epoch, 10**6, (state,))
    b2.dispatch(Message(0, b2.controller, "b2", "LeaderAndIsr", req))
    assert p.partition_epoch == partition_epoch + 1  # applied
    return b2.fetchers[1].get("t-0", -1)


@pytest.mark.parametrize("profile", ["2.4", "3.7"])
def test_an_equal_epoch_change_that_keeps_the_leader_leaves_the_fetcher_alone(profile):
    """`Partition.makeFollower` answers false for the same leader at the same epoch, so
    `makeFollowers` neither removes nor re-adds its fetcher; a new epoch restarts it."""
    assert _fetcher_after_leader_and_isr(profile, 0) == 10**12
    assert _fetcher_after_leader_and_isr(profile, 1) == 0
