"""Scenario texts and helpers the loader's tests share."""

import pytest

from scenarios.schema import ScenarioError, parse_scenario

MINIMAL = """
expect = "pass"
[[topics]]
name = "t"
"""

FULL = """
name = "full"
description = "every section"
expect = "violation:stale_leader_append"
seed = 7
invariants = ["stale_leader_append", "acked_write_lost"]

[run]
duration_ms = 20000
settle_ms = 4000

[protocol]
profile = "2.6"
mutant = "no_produce_epoch_check"
leader_discovery = "refresh_no_backoff"

[cluster]
brokers = 4
controllers = 1
unclean_leader_election = true

[[topics]]
name = "t"
partitions = 2
assignment = [[1, 2, 3], [4, 1, 2]]

[[topics]]
name = "old.format"
replication_factor = 2
message_format = 1

[[producers]]
topic = "t"
acks = -1
enable_idempotence = true
records_per_sec = 250.5

[[producers]]
name = "legacy"
topic = "old.format"
acks = 1
enable_idempotence = false
stop_ms = 9000

[[consumers]]
topic = "t"

[network]
latency = { dist = "uniform", min_ms = 1, max_ms = 3 }
drop = 0.01

[[network.links]]
src = "c1"
dst = "b2"
latency = { dist = "constant", ms = 40 }

[[faults]]
at_ms = 9000
action = "heal"

[[faults]]
at_ms = 2000
action = "partition"
groups = [["b1"], ["b2", "b3", "c1"]]

[[faults]]
at_ms = 3000
action = "rule"
rule = "hold"
kind = "StopReplica"
release_kind = "LeaderAndIsr"
dst = "b2"

[[faults]]
at_ms = 3000
action = "crash"
target = "leader:t-1"

[[faults]]
at_ms = 4000
action = "reassign"
target = "t-0"
replicas = [2, 3, 4]

[[faults]]
at_ms = 5000
action = "create_topic"
name = "fresh"
partitions = 3

[[faults]]
at_ms = 6000
action = "retention"
target = "fresh-2"
log_start_offset = 10

[[faults]]
at_ms = 7000
action = "move_leader"
target = "t-0"

[[faults]]
at_ms = 19000
action = "restart"
target = "leader:t-1"

[[mix]]
action = "crash"
every_ms = 1500
targets = ["b1", "controller"]
duration_ms = [200, 800]

[[mix]]
action = "rule"
every_ms = 3000
duration_ms = 500
params = { rule = "delay", kind = "Fetch", delay_ms = 50 }
"""


def bad(text: str, path: str = "scen.toml") -> str:
    """The error message for `text`, checked to be one line naming the file."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


def with_topic(extra_top: str = "", after: str = "") -> str:
    """A valid scenario with `extra_top` keys at the top and `after` tables appended."""
    return f'expect = "pass"\n{extra_top}\n[[topics]]\nname = "t"\n{after}'
