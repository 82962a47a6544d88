"""High watermark checkpoints: a restart after a crash reads each log's HW back from the last
`replication-offset-checkpoint` (every replica.high.watermark.checkpoint.interval.ms), a clean
shutdown writes it first, and a 0.10 follower truncates to what it read back."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

# b1 leads t-0 with b2 following; the producer runs throughout. b2 stops at 7.2 s, 2.2 s after
# the checkpoint at 5 s (and 0.8 s before the next), and comes back at 8.3 s, after ZooKeeper
# expired its session (before, its old registration would fail the start).
SCENARIO = """
name = "hw-checkpoint"
expect = "pass"
[run]
duration_ms = 11000
settle_ms = 2000
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
broker_session_timeout_ms = 1000
replica_high_watermark_checkpoint_interval_ms = {interval}
[[topics]]
name = "t"
replication_factor = 2
assignment = [[1, 2]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 10
[[faults]]
at_ms = {stop_at}
action = "{stop}"
target = "b2"
[[faults]]
at_ms = 8300
action = "restart"
target = "b2"
"""


def b2_events(stop: str = "crash", interval: int = 5000, profile: str = "3.7") -> list[dict]:
    text = SCENARIO.format(stop=stop, interval=interval, profile=profile,
                           stop_at=7200 if stop == "crash" else 6700)
    verdict = run_scenario(parse_scenario(text, "hw.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return [e for e in verdict["_events"] if e["node"] == "b2"]


def hw_at(events: list[dict], until_us: int) -> int:
    """b2's last HW for t-0 reported at or before `until_us`."""
    hws = [row[2] for e in events if e["kind"] == "hw" and e["t"] <= until_us
           for row in e["hws"] if row[0] == "t-0"]
    return hws[-1]


def recovered(events: list[dict]) -> list[dict]:
    return [e for e in events if e["kind"] == "hw" and e["role"] == "recovered"]


def test_a_crash_restarts_with_the_hw_of_the_last_checkpoint():
    events = b2_events()
    at_checkpoint, at_crash = hw_at(events, 5_000_000), hw_at(events, 7_200_000)
    assert at_crash > at_checkpoint + 200  # 2.2 s of acks=all traffic at 200 records/s
    [back] = recovered(events)
    assert back["t"] == 8_300_000
    assert [list(row) for row in back["hws"]] == [["t-0", 1, at_checkpoint, 0]]


def test_a_controlled_shutdown_checkpoints_the_hw_first():
    events = b2_events(stop="controlled_shutdown")
    crash = next(e for e in events if e["kind"] == "crash")
    assert crash["t"] > 6_700_000
    assert recovered(events) == []  # it reads back exactly the HW it had


def test_interval_zero_keeps_every_hw_across_a_crash():
    assert recovered(b2_events(interval=0)) == []


@pytest.mark.parametrize("profile, truncates", [("0.10.2", True), ("0.11", False)])
def test_a_010_follower_truncates_to_the_hw_it_read_back(profile, truncates):
    events = b2_events(profile=profile)
    [back] = recovered(events)
    cut = [e for e in events if e["kind"] == "truncate" and e["t"] >= 8_000_000]
    if truncates:  # makeFollowers truncates to the HW: the checkpointed one, not the last
        assert cut and cut[0]["reason"] == "high_watermark"
        assert cut[0]["to_offset"] == back["hws"][0][2]
    else:  # KIP-101: b2's last epoch ends where b1's does, so nothing goes
        assert cut == []
