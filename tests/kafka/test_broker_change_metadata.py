"""What a ZooKeeper-mode controller sends as brokers come and go. At a broker's startup
(`onBrokerStartup`): from 2.2 (KAFKA-7537) the brokers already live get the new broker list and
no partition state, the started ones every partition's; before, every live broker got every
partition's state. At a failure (`onReplicasBecomeOffline`): `OfflineReplica` sends a partition
whose ISR already lacks the replica too, and an UpdateMetadata of no partition announces a
failed broker that hosted nothing even while a partition stays leaderless from 3.1
(KAFKA-13225)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules.controller import offline_update_metadata, startup_update_metadata


def _scenario(profile: str, assignment: list, faults: list[tuple], session_ms: int = 6000) -> str:
    """A 3-broker ZooKeeper-mode run of `profile` (no automatic rebalance, so leaders stay
    where the steps put them) with topic t on `assignment`, `faults` as (at_ms, action,
    target) and the brokers' ZooKeeper sessions expiring `session_ms` after their last
    heartbeat."""
    steps = "".join(f'[[faults]]\nat_ms = {at}\naction = "{action}"\ntarget = "{target}"\n'
                    for at, action, target in faults)
    return f"""
name = "change"
expect = "pass"
seed = 1
[run]
duration_ms = 9000
settle_ms = 3000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
auto_leader_rebalance = false
broker_session_timeout_ms = {session_ms}
[[topics]]
name = "t"
partitions = {len(assignment)}
replication_factor = {len(assignment[0])}
assignment = {assignment}
""" + steps

def test_the_rule_splits_the_brokers_from_2_2():
    assert startup_update_metadata(resolve_protocol("2.2"), (3, 1, 2), (3,)) == ((1, 2), (3,))
    assert startup_update_metadata(resolve_protocol("3.7"), (1, 2, 4, 3), (4, 2)) == \
        ((1, 3), (2, 4))
    assert startup_update_metadata(resolve_protocol("2.1"), (3, 1, 2), (3,)) == ((), (1, 2, 3))


def _startup_update_metadata(profile: str) -> dict[str, list[int]]:
    """Broker -> the partition counts of the UpdateMetadata the controller sent it at b3's
    restart, in order. b3 crashes just after a heartbeat and starts again just after ZooKeeper
    expired its session (before, its old registration would fail the start), before the
    controller's next read of the registrations (every 100 ms): a bounce."""
    text = _scenario(profile, [[1, 2], [2, 3]], [(2400, "crash", "b3"), (3350, "restart", "b3")],
                     session_ms=1000)
    verdict = run_scenario(parse_scenario(text, "startup.toml"), 1, keep_events=True)
    assert verdict["expectation_met"]
    events = verdict["_events"]
    restarted = next(e["t"] for e in events if e["kind"] == "restart" and e["node"] == "b3")
    read = next(e["t"] for e in events if e["kind"] == "send" and e["node"] == "c1"
                and e["t"] >= restarted)  # the controller's read of the registrations
    sent: dict[str, list[int]] = {}
    for e in events:
        if e["kind"] == "send" and e["msg"] == "UpdateMetadata" and e["t"] == read:
            sent.setdefault(e["dst"], []).append(e["n_parts"])
    return sent


@pytest.mark.parametrize("profile,existing", [("3.7", [1, 0, 1]), ("2.2", [1, 0, 0, 1]),
                                              ("2.1", [1, 0, 2, 1])])
def test_the_brokers_already_live_get_every_partition_only_before_2_2(profile, existing):
    """b3 (a replica of t-1 only) comes back as the controller learns b3's session ended: `onBrokerFailure` sends b1 and b2 t-1 (and, up to 3.0, as no partition is without
    a leader, an UpdateMetadata of no partition), then `onBrokerStartup` sends b1 and b2 the
    broker list with no partition (2.2+) or both partitions (2.1) and b3 both; b3's replica
    going online sends it LeaderAndIsr and every live broker t-1 once more."""
    sent = _startup_update_metadata(profile)
    assert sent["b3"] == [2, 1]
    assert sent["b1"] == sent["b2"] == existing


def _run(text: str) -> list[dict]:
    verdict = run_scenario(parse_scenario(text, "change.toml"), 1, keep_events=True)
    assert verdict["expectation_met"]
    return verdict["_events"]


def _controller_sends(events, after: int) -> list[tuple]:
    return [(e["msg"], e["dst"], e.get("n_parts", e.get("parts"))) for e in events
            if e["kind"] == "send" and e["node"] == "c1" and e["t"] >= after]


def test_a_failed_broker_s_partition_already_out_of_its_isr_is_sent_again():
    """b3's controlled shutdown takes it out of t-0's ISR (epoch 1); when it stops, the
    controller's OfflineReplica finds t-0's ISR without it and sends t-0 again, unwritten:
    LeaderAndIsr at the same epoch to b1, its other replica, and UpdateMetadata to b1 and b2."""
    events = _run(_scenario("3.7", [[1, 3], [1, 2]], [(2000, "controlled_shutdown", "b3")]))
    stopped = next(e["t"] for e in events if e["kind"] == "disconnect" and e["node"] == "c1"
                   and e["peer"] == "b3")
    writes = [e for e in events if e["kind"] == "partition_state" and e["node"] == "c1"
              and e["t"] > 0]
    assert [(e["tp"], e["leader_epoch"], e["isr"]) for e in writes] == [("t-0", 1, [1])]
    sends = [e for e in events if e["kind"] == "send" and e["node"] == "c1"
             and e["t"] < stopped and e["t"] > writes[-1]["t"]]
    assert [(e["msg"], e["dst"]) for e in sends] == [
        ("LeaderAndIsr", "b1"), ("UpdateMetadata", "b1"), ("UpdateMetadata", "b2")]
    assert sends[0]["parts"] == [["t-0", 1, 1]] and sends[1]["n_parts"] == 1


def test_the_offline_update_metadata_rule():
    new, old = resolve_protocol("3.1"), resolve_protocol("3.0")
    assert offline_update_metadata(new, True, False, False)  # KAFKA-13225's case
    assert not offline_update_metadata(old, True, False, False)
    assert offline_update_metadata(old, False, True, True)  # no leaderless partition
    assert not offline_update_metadata(new, False, True, False)  # OfflineReplica sends
    assert not offline_update_metadata(new, False, False, True)  # the election sends


@pytest.mark.parametrize("profile,announced", [("3.1", True), ("3.7", True), ("3.0", False)])
def test_a_broker_that_hosted_nothing_is_announced_while_a_partition_stays_leaderless(
        profile, announced):
    """t-0's only replica b2 fails first (t-0 left leaderless); b3, hosting nothing, fails
    next: from 3.1 the controller tells b1 with an UpdateMetadata of no partition; up to 3.0
    it sent nothing, so b1's metadata kept naming b3."""
    events = _run(_scenario(profile, [[2]], [(2000, "crash", "b2"), (3000, "crash", "b3")]))
    first = next(e["t"] for e in events if e["kind"] == "send" and e["node"] == "c1"
                 and e["msg"] == "UpdateMetadata" and e["t"] > 0)  # b2's failure: t-0's state
    after = _controller_sends(events, first + 1)
    assert after == ([("UpdateMetadata", "b1", 0)] if announced else []), after
