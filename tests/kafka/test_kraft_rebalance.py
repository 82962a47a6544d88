"""A KRaft controller's automatic preferred-leader balancing (`QuorumController
.maybeScheduleNextBalancePartitionLeaders`, `ReplicationControlManager
.maybeBalancePartitionLeaders`, 3.7.0): once a partition's leader is not its first replica, a
balance runs `leader_imbalance_check_interval_ms` later and elects the first replica if it is
a usable ISR member; while it is not, the next balance comes an interval after the last."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.kraft_admin import KraftAdmin

BASE = """
name = "kraft-balance"
expect = "pass"
seed = 1
[run]
duration_ms = 16000
settle_ms = 3000
[protocol]
profile = "3.7"
[cluster]
mode = "kraft"
brokers = 3
controllers = 3
broker_heartbeat_interval_ms = 500
broker_session_timeout_ms = 1500
auto_leader_rebalance = {enabled}
leader_imbalance_check_interval_ms = {interval}
[[topics]]
name = "t"
partitions = 2
replication_factor = 3
assignment = [[1, 2, 3], [2, 3, 1]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 100
[[faults]]
at_ms = 2000
action = "crash"
target = "b1"
[[faults]]
at_ms = 5000
action = "restart"
target = "b1"
"""


def _writes(enabled: bool = True, interval: int = 4000) -> list[dict]:
    text = BASE.format(enabled=str(enabled).lower(), interval=interval)
    verdict = run_scenario(parse_scenario(text, "k.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return [e for e in verdict["_events"] if e["kind"] == "partition_state"
            and e["tp"] == "t-0" and e["node"].startswith("c")]


def test_a_balance_an_interval_after_the_imbalance_moves_the_leader_back():
    writes = _writes()
    moved = next(e for e in writes if e["leader"] != 1)  # b1 fenced: b2 leads
    back = [e for e in writes if e["reason"] == "elect:auto_preferred"]
    assert len(back) == 1 and back[0]["leader"] == 1
    assert back[0]["leader_epoch"] > moved["leader_epoch"]
    # a balance comes a whole number of intervals after the imbalance began (b1 not yet in
    # the ISR at the first one), up to the commit's few ms
    waited_us = back[0]["t"] - moved["t"]
    assert waited_us >= 4_000_000 and waited_us % 4_000_000 < 100_000, waited_us
    assert writes[-1]["leader"] == 1


def test_no_balance_when_disabled_or_beyond_the_run():
    for writes in (_writes(enabled=False), _writes(interval=300_000)):
        assert not [e for e in writes if e["reason"] == "elect:auto_preferred"]
        assert writes[-1]["leader"] != 1


def test_a_balance_elects_at_most_its_limit_and_the_rest_follow_at_once(monkeypatch):
    """With a limit of one election a balance, the two imbalanced partitions move back one
    balance after the other, 10 ms apart (the records may still share a batch and a commit).
    With the limit of 1000, one balance moves both (the other tests)."""
    monkeypatch.setattr("sim.kafka.kraft_rebalance.MAX_ELECTIONS_PER_IMBALANCE", 1)
    elections: list[tuple[int, str]] = []
    original = KraftAdmin.elect_preferred

    def recording(self, tp, reason=""):
        wrote = original(self, tp, reason)
        if wrote:
            elections.append((self.now_us, tp))
        return wrote
    monkeypatch.setattr(KraftAdmin, "elect_preferred", recording)
    text = BASE.format(enabled="true", interval=4000).replace(
        "assignment = [[1, 2, 3], [2, 3, 1]]", "assignment = [[1, 2, 3], [1, 3, 2]]")
    verdict = run_scenario(parse_scenario(text, "k.toml"), 1, keep_events=True)
    assert [tp for _t, tp in elections] == ["t-0", "t-1"]
    assert elections[1][0] - elections[0][0] == 10_000
    back = [e["tp"] for e in verdict["_events"] if e["kind"] == "partition_state"
            and e.get("reason") == "elect:auto_preferred"]
    assert back == ["t-0", "t-1"]
