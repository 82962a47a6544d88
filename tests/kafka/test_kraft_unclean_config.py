"""KAFKA-12670 (3.9): a KRaft controller elects uncleanly where unclean.leader.election.enable
says so (`kraft_unclean_election_config`); at 3.3-3.8 `uncleanLeaderElectionEnabledForTopic`
returns false, so a partition whose last ISR member is fenced stays leaderless whatever the
config says."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.kraft_controller import KraftController

# t-0 on [b1, b2]: b2 crashes (fenced: ISR [1]), b1 crashes too, b2 comes back and is unfenced
# before b1's session runs out, so when b1 is fenced only b2, outside the ISR, could lead
STORY = """
name = "kraft-unclean-config"
expect = "pass"
invariants = ["stale_leader_append"]
[run]
duration_ms = 20000
settle_ms = 2000
[protocol]
profile = "{profile}"
[cluster]
mode = "kraft"
brokers = 2
controllers = 1
unclean_leader_election = {unclean}
[[topics]]
name = "t"
replication_factor = 2
[[producers]]
topic = "t"
acks = 1
records_per_sec = 20
[[faults]]
at_ms = 4000
action = "crash"
target = "b2"
[[faults]]
at_ms = 9000
action = "crash"
target = "b1"
[[faults]]
at_ms = 13000
action = "restart"
target = "b2"
"""


def last_state(profile: str, unclean: str) -> tuple:
    text = STORY.format(profile=profile, unclean=unclean)
    evs = run_scenario(parse_scenario(text, "u.toml"), 1, keep_events=True)["_events"]
    states = [e for e in evs if e["node"] == "c1" and e["kind"] == "partition_state"]
    return states[-1]["leader"], states[-1]["isr"]


@pytest.mark.parametrize("profile,unclean,leader,isr", [
    ("3.9", "true", 2, [2]),    # b2 elected uncleanly when b1, the last ISR member, is fenced
    ("4.1", "true", 2, [2]),
    ("3.9", "false", -1, [1]),  # the config off: leaderless, the ISR keeps its last member
    ("3.8", "true", -1, [1]),   # before KAFKA-12670 the config is not read
    ("3.3", "true", -1, [1]),
])
def test_the_controller_reads_the_unclean_config_from_3_9(profile, unclean, leader, isr):
    assert last_state(profile, unclean) == (leader, isr)


@pytest.mark.parametrize("switch,config,enabled", [
    (False, True, False), (True, True, True), (True, False, False), (False, False, False)])
def test_the_config_counts_only_with_the_switch(switch, config, enabled):
    """`unclean_enabled` is what both the partition changes and `cancel_reassignment` (a revert
    that needs an unclean election, `PartitionReassignmentRevert.unclean`) ask."""
    node = SimpleNamespace(protocol=SimpleNamespace(kraft_unclean_election_config=switch),
                           cluster=SimpleNamespace(unclean_leader_election=config))
    assert KraftController.unclean_enabled(node) is enabled
