"""Per-node versions in whole runs: the `upgrade` and `bump_ibp` actions, what the
inter-broker protocol lets brokers send each other, and a client on another profile than its
brokers."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from tests.conftest import scenario_path

BASE = """
name = "versions"
expect = "pass"
[run]
duration_ms = 8000
settle_ms = 2000
[cluster]
broker_session_timeout_ms = 6000
[protocol]
profile = "{profile}"
{protocol}
[[topics]]
name = "t"
[[producers]]
topic = "t"
records_per_sec = 200
{faults}
"""


def fault(at_ms: int, action: str, target: str | None = None, **params) -> str:
    lines = ["[[faults]]", f"at_ms = {at_ms}", f'action = "{action}"']
    lines += [f'target = "{target}"'] if target else []
    lines += [f'{k} = "{v}"' for k, v in params.items()]
    return "\n".join(lines) + "\n"


def events(profile: str, faults: str, protocol: str = "") -> list[dict]:
    text = BASE.format(profile=profile, protocol=protocol, faults=faults)
    return run_scenario(parse_scenario(text, "v.toml"), 1, keep_events=True)["_events"]


def of(evs: list[dict], node: str, *kinds: str) -> list[dict]:
    return [e for e in evs if e["node"] == node and e["kind"] in kinds]


def outcomes(evs: list[dict]) -> list[str]:
    return [e["outcome"] for e in evs if e["kind"] == "fault_outcome"]


def test_upgrade_restarts_a_broker_on_the_new_profile_with_its_logs():
    evs = events("2.6", fault(2000, "upgrade", "b1", profile="2.6"),
                 'inter_broker_protocol = "2.5"\n'
                 '[protocol.brokers]\nb1 = "2.5"\nb2 = "2.5"\nb3 = "2.5"')
    life = of(evs, "b1", "crash", "upgrade", "restart")
    assert [e["kind"] for e in life] == ["crash", "upgrade", "restart"]
    assert life[0]["t"] == 2_500_000 == life[2]["t"]  # after the controlled shutdown
    assert life[1]["profile"] == "2.6" and life[1]["protocol"]["stop_replica_epoch"] is True
    # the log survived: it is not made again, and b1 fetches on from where it ended
    assert len(of(evs, "b1", "log_created")) == 1 and not of(evs, "b1", "log_deleted")
    fetched = [e for e in of(evs, "b1", "replicate") if e["t"] > life[2]["t"]]
    assert fetched and fetched[0]["batches"][0][2] > 0
    assert outcomes(evs) == []


def test_upgrade_of_a_broker_that_is_down_takes_effect_when_it_restarts():
    """b1 restarts once ZooKeeper expired its session, 6 s after its last heartbeat (before,
    its old registration would fail the start)."""
    evs = events("2.6", fault(1000, "crash", "b1") + fault(2000, "upgrade", "b1", profile="2.6")
                 + fault(7100, "restart", "b1"),
                 'inter_broker_protocol = "2.5"\n[protocol.brokers]\nb1 = "2.5"')
    assert outcomes(evs) == ["down: it runs 2.6 once restarted"]
    assert [(e["kind"], e["t"]) for e in of(evs, "b1", "crash", "upgrade", "restart")] == \
        [("crash", 1_000_000), ("upgrade", 2_000_000), ("restart", 7_100_000)]


def test_a_broker_is_not_upgraded_to_a_release_older_than_the_ibp():
    evs = events("2.6", fault(1000, "upgrade", "b1", profile="2.5"))
    assert outcomes(evs) == ["refused: 2.5 does not know inter-broker protocol 2.6, so b1 "
                             "would not start"]
    assert not of(evs, "b1", "crash", "upgrade")


def test_the_ibp_is_not_bumped_past_a_broker_or_the_controllers():
    mixed = 'inter_broker_protocol = "2.5"\n[protocol.brokers]\nb2 = "2.5"'
    evs = events("2.6", fault(1000, "bump_ibp", version="2.6"), mixed)
    assert outcomes(evs) == ["refused: b2 runs 2.5, which does not know inter-broker protocol 2.6"]
    evs = events("2.5", fault(1000, "bump_ibp", version="2.6"),
                 '[protocol.brokers]\nb1 = "2.6"\nb2 = "2.6"\nb3 = "2.6"')
    assert outcomes(evs) == ["refused: the controllers run 2.5, which does not know "
                             "inter-broker protocol 2.6"]


def test_a_zookeeper_mode_broker_is_not_upgraded_to_a_release_without_zookeeper():
    evs = events("3.7", fault(1000, "upgrade", "b1", profile="4.0"))
    assert outcomes(evs) == ["refused: 4.0 has no ZooKeeper mode, so b1 would not start"]
    assert not of(evs, "b1", "crash", "upgrade")


@pytest.mark.parametrize("step", [fault(1000, "upgrade", "b1", profile="3.8"),
                                  fault(1000, "bump_ibp", version="3.8")])
def test_version_actions_are_refused_in_kraft_mode(step):
    text = BASE.format(profile="3.7", protocol="", faults=step).replace(
        "[cluster]\n", '[cluster]\nmode = "kraft"\n')
    evs = run_scenario(parse_scenario(text, "v.toml"), 1, keep_events=True)["_events"]
    assert len(outcomes(evs)) == 1 and outcomes(evs)[0].endswith(
        "is not modelled in KRaft mode (every broker runs the run's profile)")
    assert not of(evs, "b1", "upgrade")


def stop_replicas(name: str) -> list[tuple]:
    evs = run_scenario(load_scenario(scenario_path(name)), 1, keep_events=True)["_events"]
    return [(e["req_epoch"], e["result"]) for e in of(evs, "b3", "stop_replica") if e["delete"]]


def test_brokers_on_2_6_get_no_stop_replica_epoch_until_the_ibp_is_2_6():
    """KIP-570's StopReplica v3 is the controller's to send, by the IBP
    (`ControllerChannelManager.sendStopReplicaRequests` at 2.6.0)."""
    assert stop_replicas("kip570-rolling-upgrade-mid") == [(-1, "applied")]
    [(epoch, result)] = stop_replicas("kip570-rolling-upgrade-done")
    assert epoch >= 0 and result == "fenced"


def test_an_old_ibp_keeps_a_follower_from_sending_its_leader_epoch():
    """KAFKA-6880's zombie follower is fenced by KIP-320's CurrentLeaderEpoch on 2.4 brokers,
    but not at inter-broker protocol 1.0, whose Fetch has no such field
    (`ReplicaFetcherThread.fetchRequestVersion`)."""
    path = scenario_path("kafka6880-zombie-follower-fixed")
    assert run_scenario(load_scenario(path), 1)["violations"] == []
    old = run_scenario(load_scenario(path, {"protocol.inter_broker_protocol": "1.0"}), 1)
    assert {v["invariant"] for v in old["violations"]} == {"log_divergence"}


@pytest.mark.parametrize("profile, ibp, violated", [
    ("2.8", "2.7", set()), ("2.8", "2.6", {"log_divergence"}), ("2.7", "2.7", {"log_divergence"})])
def test_ibp_2_7_lets_2_8_followers_name_their_last_epoch_in_every_fetch(profile, ibp, violated):
    """Without KIP-320's fetch epochs the zombie follower is caught only by truncation on
    fetch: Fetch v12 comes with IBP 2.7 (`KAFKA_2_7_IV1`), but only 2.8 code uses it
    (KAFKA-10554; `isTruncationOnFetchSupported` at 2.8.0)."""
    overrides = {"protocol.profile": profile, "protocol.fetch_epoch_check": False,
                 "protocol.inter_broker_protocol": ibp}
    verdict = run_scenario(load_scenario(scenario_path("kafka6880-zombie-follower-fixed"),
                                         overrides), 1)
    assert {v["invariant"] for v in verdict["violations"]} == violated


def producer_run(overrides: dict) -> list[dict]:
    path = scenario_path("idem-client-2.5-broker-1.0-retention")
    return run_scenario(load_scenario(path, overrides), 1, keep_events=True)["_events"]


def answers(evs: list[dict]) -> set[int]:
    return {e["error"] for e in evs if e["kind"] == "produce_result" and e["error"]}


def epochs(evs: list[dict]) -> list[int]:
    return sorted({b["producer_epoch"] for e in evs if e["kind"] == "append"
                   for b in e["batches"] if "pid" in b})


@pytest.mark.parametrize("overrides, errors, producer_epochs", [
    # the KIP-360 client on 1.0 brokers: UNKNOWN_PRODUCER_ID after retention, an epoch bump
    ({}, {59}, [0, 1, 2, 3]),
    # a 1.0 client on the same brokers restarts its sequences under the same epoch
    ({"producers.0.profile": "1.0"}, {59}, [0]),
    # 2.5 brokers take an unknown producer's sequence (KIP-360): nothing to answer
    ({"protocol.profile": "2.5"}, set(), [0]),
])
def test_a_client_and_its_brokers_each_follow_their_own_profile(overrides, errors,
                                                                producer_epochs):
    evs = producer_run(overrides)
    assert answers(evs) == errors
    assert epochs(evs) == producer_epochs
