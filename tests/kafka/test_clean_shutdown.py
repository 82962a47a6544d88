"""A clean shutdown closes the broker's ZooKeeper session (`KafkaServer.shutdown` ->
`zkClient.close()`), so the controller sees the broker gone at once; a crash leaves the session
to time out (broker_session_timeout_ms), and so does a clean shutdown cut off from zk."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

# b2 crashes at 2 s and leaves the ISR; at 8 s b1, the last in-sync replica, stops, so the
# controller can only mark t-0 leaderless, and does so when it learns b1 is gone.
SCENARIO = """
name = "clean-shutdown"
expect = "pass"
[run]
duration_ms = 20000
settle_ms = 2000
[cluster]
replica_lag_time_max_ms = 2000
broker_session_timeout_ms = 6000
[[topics]]
name = "t"
assignment = [[1, 2]]
[[producers]]
topic = "t"
records_per_sec = 100
[[faults]]
at_ms = 2000
action = "crash"
target = "b2"
{cut}
[[faults]]
at_ms = 8000
action = "{stop}"
target = "b1"
"""
CUT = '[[faults]]\nat_ms = 7000\naction = "block"\ntarget = "b1"\ndst = "zk"\n'


def leaderless_at(stop: str, cut: bool = False) -> int:
    text = SCENARIO.format(stop=stop, cut=CUT if cut else "")
    verdict = run_scenario(parse_scenario(text, "c.toml"), 1, keep_events=True)
    return next(e["t"] for e in verdict["_events"]
                if e["kind"] == "partition_state" and e["leader"] == -1)


@pytest.mark.parametrize("stop, cut, low, high", [
    ("controlled_shutdown", False, 8_000_000, 8_700_000),  # the stop itself, 0.5 s after
    ("crash", False, 13_000_000, 14_500_000),  # 6 s session timeout
    ("controlled_shutdown", True, 12_000_000, 14_500_000),  # cannot close what it cannot reach
])
def test_the_controller_learns_of_a_clean_stop_at_once(stop, cut, low, high):
    assert low <= leaderless_at(stop, cut) <= high
