"""KIP-966 end to end on a KRaft cluster (4.1, `eligible_leader_replicas`): a broker that
stops cleanly names its epoch when it registers again and keeps its ELR place; one that
crashed is taken out of the ELR before its RegisterBrokerRecord
(`ReplicationControlManager.handleBrokerUncleanShutdown`); 4.0 writes no ELR at all. And the
whole-run pair: `kip966-power-loss-leader-legacy` loses acknowledged batches, `-fixed` not."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from tests.conftest import scenario_path

SCENARIO = """
name = "elr-restart"
expect = "pass"
seed = 1
[run]
duration_ms = 9000
settle_ms = 3000
[protocol]
profile = "{profile}"
[cluster]
mode = "kraft"
brokers = 3
controllers = 1
min_insync_replicas = 3
broker_session_timeout_ms = 1500
broker_heartbeat_interval_ms = 500
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 50
[[faults]]
at_ms = 3000
action = "{stop}"
target = "b3"
[[faults]]
at_ms = 5000
action = "restart"
target = "b3"
"""


def _states(profile: str, stop: str) -> list[dict]:
    text = SCENARIO.format(profile=profile, stop=stop)
    events = run_scenario(parse_scenario(text, "elr.toml"), 1, keep_events=True)["_events"]
    return [e for e in events if e["kind"] == "partition_state"]


def _left_elr_while_out_of_isr(states: list[dict]) -> bool:
    """Did a change take b3 out of the ELR while it was not in the ISR?"""
    return any(3 in a.get("elr", []) and 3 not in b.get("elr", []) and 3 not in b["isr"]
               for a, b in zip(states, states[1:]))


def test_a_crashed_broker_leaves_the_elr_when_it_registers_again():
    states = _states("4.1", "crash")
    assert any(s.get("elr") == [3] for s in states)  # fenced below min.insync.replicas
    assert _left_elr_while_out_of_isr(states)


def test_a_cleanly_stopped_broker_keeps_its_elr_place():
    states = _states("4.1", "controlled_shutdown")
    assert any(s.get("elr") == [3] for s in states)
    assert not _left_elr_while_out_of_isr(states)
    assert states[-1]["isr"] == [1, 2, 3]  # back in the ISR, which clears the ELR


def test_without_elr_no_record_carries_one():
    assert not any("elr" in s or "last_known_elr" in s for s in _states("4.0", "crash"))


@pytest.mark.parametrize("name, violated", [("kip966-power-loss-leader-legacy", ["acked_write_lost"]),
                                            ("kip966-power-loss-leader-fixed", [])])
def test_elr_keeps_what_a_power_cut_leader_lost(name, violated):
    verdict = run_scenario(load_scenario(scenario_path(name)), 1)
    assert verdict["violated"] == violated
    assert (verdict["metrics"]["acked_lost_to_power_loss"] > 0) == bool(violated)
