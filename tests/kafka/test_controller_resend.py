"""A ZooKeeper-mode controller resends an unanswered UpdateMetadata with the partitions'
current state: Kafka's channel sends a broker one request at a time, in order
(`RequestSendThread`), so a broker never gets old state after newer."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

SCENARIO = """
name = "resend"
expect = "pass"
seed = 1
[run]
duration_ms = 12000
settle_ms = 3000
[protocol]
profile = "3.7"
[cluster]
brokers = 3
auto_leader_rebalance = false
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
assignment = [[1, 2, 3]]
# UpdateMetadata to b3 sent in the next 600 ms arrives 5 s late: unanswered for longer than
# the controller's 3 s retry, and everything sent to b3 after it waits behind it on the link
[[faults]]
at_ms = 2000
action = "rule"
rule = "delay"
kind = "UpdateMetadata"
dst = "b3"
delay_ms = 5000
duration_ms = 600
[[faults]]
at_ms = 2500
action = "move_leader"
target = "t-0"
to = "b2"
[[faults]]
at_ms = 5000
action = "move_leader"
target = "t-0"
to = "b1"
"""


def test_a_resent_update_metadata_carries_the_current_state():
    """The UpdateMetadata of the first move (leader epoch 1) is resent at 5.5 s, after the
    second move's (leader epoch 2, at 5 s) was sent: it carries epoch 2, so from the first
    instant b3 knows epoch 2 it never ends an instant at an older one. Resent alone,
    the first arrived after the second, which was answered then, and left b3's cache at
    epoch 1 for good (what stalled a consumer in `kip951-lagging-broker` once the automatic rebalance
    moved a leader there)."""
    verdict = run_scenario(parse_scenario(SCENARIO, "resend.toml"), 1, keep_events=True)
    at_end_of: dict[int, int] = {}  # instant -> the leader epoch b3's cache holds after it
    for e in verdict["_events"]:
        if e["kind"] == "metadata" and e["node"] == "b3":
            for tp, _leader, epoch in e["changes"]:
                if tp == "t-0":
                    at_end_of[e["t"]] = epoch
    epochs = [at_end_of[t] for t in sorted(at_end_of)]
    assert epochs == sorted(epochs) and epochs[-1] == 2, at_end_of
