"""A ZooKeeper-mode follower leaves a LeaderAndIsr unapplied whose leader its metadata cache
does not list alive (`ReplicaManager.makeFollowers`, 0.10.2.0-3.7.0): its epoch, role and
fetcher stay, its log is created, and it answers NONE; a controller's failover therefore sends
the live brokers (UpdateMetadata) before any LeaderAndIsr (`onControllerFailover`)."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

TEXT = """
name = "leader-unavailable"
expect = "pass"
seed = 1
[run]
duration_ms = 5000
settle_ms = 1000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
[[topics]]
name = "t"
replication_factor = 3
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = 1
records_per_sec = 50
{faults}
"""

# b3's UpdateMetadata (the failover's first, with the live brokers) waits until a later
# LeaderAndIsr has reached b3: the failover's own, which b3 therefore handles with an empty
# cache. The leadership moves to b2 at 2 s.
HELD = """
[[faults]]
at_ms = 0
action = "rule"
rule = "hold"
kind = "UpdateMetadata"
dst = "b3"
release_kind = "LeaderAndIsr"
duration_ms = 1500
[[faults]]
at_ms = 2000
action = "move_leader"
target = "t-0"
to = "b2"
"""


def _events(faults: str = "", profile: str = "3.7") -> list[dict]:
    scenario = parse_scenario(TEXT.format(profile=profile, faults=faults), "u.toml")
    return run_scenario(scenario, 1, keep_events=True)["_events"]


def _b3(events, kind):
    return [e for e in events if e["kind"] == kind and e["node"] == "b3"]


def test_a_follower_leaves_a_leader_and_isr_alone_while_its_leader_is_not_alive_in_its_cache():
    for profile in ("0.10.2", "2.4", "3.7"):
        events = _events(HELD, profile)
        skipped = [(e["t"], p) for e in _b3(events, "lai_leader_unavailable")
                   for p in e["partitions"]]
        # the failover's LeaderAndIsr (b1 leads at epoch 0): the replica keeps epoch -1
        assert skipped == [(1000, ["t-0", 1, 0, -1])], (profile, skipped)
        assert [e["t"] for e in _b3(events, "log_created")] == [1000]  # its log only
        # no fetcher: b3 sends no Fetch until the move's LeaderAndIsr, which it applies
        fetches = [e["t"] for e in events if e["kind"] == "send" and e["node"] == "b3"
                   and e["msg"] == "Fetch"]
        assert fetches and min(fetches) >= 2_001_000, (profile, fetches[:3])
        states = [(e["t"], e["role"], e["leader"], e["leader_epoch"])
                  for e in _b3(events, "replica_state")]
        assert states[0] == (2_001_000, "follower", 2, 1), (profile, states)
        answers = [e["error"] for e in events if e["kind"] == "send" and e["node"] == "b3"
                   and e["msg"] == "LeaderAndIsrResponse"]
        assert answers[:2] == [0, 0]  # answered NONE, as Kafka's responseMap says


def test_without_a_hold_every_follower_applies_the_first_leader_and_isr():
    events = _events()
    assert not [e for e in events if e["kind"] == "lai_leader_unavailable"]
    assert [(e["t"], e["leader_epoch"]) for e in _b3(events, "replica_state")][:1] == [(1000, 0)]


def test_a_controllers_failover_sends_the_live_brokers_before_any_leader_and_isr():
    """`onControllerFailover`: UpdateMetadata first (every partition's state before 2.2,
    none after, KAFKA-7537), then the state machines' LeaderAndIsr and UpdateMetadata."""
    for profile, parts in (("2.1", 1), ("2.2", 0), ("3.7", 0)):
        events = _events(profile=profile)
        first = [(e["msg"], e.get("n_parts")) for e in events
                 if e["kind"] == "send" and e["node"] == "c1" and e["dst"] == "b3"][:3]
        assert first == [("UpdateMetadata", parts), ("LeaderAndIsr", None),
                         ("UpdateMetadata", 1)], (profile, first)
