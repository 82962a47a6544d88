"""A ZooKeeper-mode controller's UpdateMetadata at a broker's startup (`onBrokerStartup`): from
2.2 (KAFKA-7537) the brokers already live get the new broker list and no partition state, the
started ones every partition's; before, every live broker got every partition's state."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules.controller import startup_update_metadata

SCENARIO = """
name = "startup"
expect = "pass"
seed = 1
[run]
duration_ms = 8000
settle_ms = 3000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
auto_leader_rebalance = false
[[topics]]
name = "t"
partitions = 2
replication_factor = 2
assignment = [[1, 2], [2, 3]]
[[faults]]
at_ms = 2000
action = "crash"
target = "b3"
[[faults]]
at_ms = 4000
action = "restart"
target = "b3"
"""


def test_the_rule_splits_the_brokers_from_2_2():
    assert startup_update_metadata(resolve_protocol("2.2"), (3, 1, 2), (3,)) == ((1, 2), (3,))
    assert startup_update_metadata(resolve_protocol("3.7"), (1, 2, 4, 3), (4, 2)) == \
        ((1, 3), (2, 4))
    assert startup_update_metadata(resolve_protocol("2.1"), (3, 1, 2), (3,)) == ((), (1, 2, 3))


def _startup_update_metadata(profile: str) -> dict[str, list[int]]:
    """Broker -> the partition counts of the UpdateMetadata the controller sent it at b3's
    restart, in order."""
    text = SCENARIO.format(profile=profile)
    verdict = run_scenario(parse_scenario(text, "startup.toml"), 1, keep_events=True)
    assert verdict["expectation_met"]
    events = verdict["_events"]
    restarted = next(e["t"] for e in events if e["kind"] == "restart" and e["node"] == "b3")
    sent: dict[str, list[int]] = {}
    for e in events:
        if e["kind"] == "send" and e["msg"] == "UpdateMetadata" and e["t"] == restarted:
            sent.setdefault(e["dst"], []).append(e["n_parts"])
    return sent


@pytest.mark.parametrize("profile,existing", [("3.7", 0), ("2.2", 0), ("2.1", 2)])
def test_the_brokers_already_live_get_every_partition_only_before_2_2(profile, existing):
    """b3 (a replica of t-1 only) comes back at 4 s, as the controller learns b3's session
    ended: `onBrokerFailure` sends b1 and b2 t-1, then `onBrokerStartup` sends b1 and b2 the
    broker list with no partition (2.2+) or both partitions (2.1) and b3 both; b3's replica
    going online sends it LeaderAndIsr and every live broker t-1 once more."""
    sent = _startup_update_metadata(profile)
    assert sent["b3"] == [2, 1]
    assert sent["b1"] == sent["b2"] == [1, existing, 1]
