"""A ZooKeeper-mode broker whose session expired registers again with a new broker epoch, and
learns it `cluster.broker_registration_ms` after the controller can read it; before KAFKA-9839
(2.2-2.5.0) a control request carrying the new epoch in that window is refused with
UNKNOWN_SERVER_ERROR and never resent (`KafkaApis.isBrokerEpochStale` throws): scenarios
kafka9839-newer-broker-epoch-legacy / -fixed. b2 is cut from zk from 2 s to 22 s."""

from __future__ import annotations

import functools

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.kafka import errors as E
from tests.conftest import scenario_path

HEAL_US = 22_000_000


@functools.lru_cache(maxsize=None)
def _run(profile: str, registration_ms: int = 500, session_ms: int = 6000) -> dict:
    overrides = {"protocol.profile": profile, "cluster.broker_registration_ms": registration_ms,
                 "cluster.broker_session_timeout_ms": session_ms}
    path = scenario_path("kafka9839-newer-broker-epoch-fixed")
    return run_scenario(load_scenario(path, overrides), 1, keep_events=True)


def _of(events, node: str, kind: str) -> list:
    return [e for e in events if e["node"] == node and e["kind"] == kind]


def _answers_after_heal(events) -> list:
    return [(e["msg"], e["error"]) for e in _of(events, "b2", "send") if e["t"] >= HEAL_US
            and e["msg"] in ("LeaderAndIsrResponse", "UpdateMetadataResponse")][:2]


def test_a_broker_whose_session_expired_registers_again_with_a_new_epoch():
    events = _run("2.6")["_events"]
    [reg] = _of(events, "b2", "broker_registered")
    assert reg["t"] == HEAL_US and reg["reason"] == "session_expired"
    assert reg["broker_epoch"] > reg["previous_epoch"] > 0 and reg["known_in_us"] == 500_000
    # the controller sends the new incarnation its state at once; 2.6 takes the newer epoch
    assert _answers_after_heal(events) == [("UpdateMetadataResponse", E.NONE),
                                           ("LeaderAndIsrResponse", E.NONE)]
    follows = [e for e in _of(events, "b2", "replica_state") if e["t"] >= HEAL_US]
    assert follows and follows[0]["leader_epoch"] == 1
    assert _run("2.6")["violated"] == []


def test_before_kafka_9839_the_new_epoch_is_refused_and_the_follower_stays_out():
    verdict = _run("2.5")
    events = verdict["_events"]
    assert _answers_after_heal(events) == [("UpdateMetadataResponse", E.UNKNOWN_SERVER_ERROR),
                                           ("LeaderAndIsrResponse", E.UNKNOWN_SERVER_ERROR)]
    assert [e for e in _of(events, "b2", "replica_state") if e["t"] >= HEAL_US] == []
    assert verdict["violated"] == ["under_replicated_after_heal"]


def test_a_broker_that_knows_its_epoch_at_once_closes_the_window():
    verdict = _run("2.5", registration_ms=0)
    assert _answers_after_heal(verdict["_events"])[1] == ("LeaderAndIsrResponse", E.NONE)
    assert verdict["violated"] == []


def test_a_session_that_did_not_expire_keeps_its_registration():
    verdict = _run("2.5", session_ms=30_000)  # longer than the 20 s cut
    assert _of(verdict["_events"], "b2", "broker_registered") == []
    assert [e for e in verdict["_events"] if e["kind"] == "partition_state"
            and e["reason"] == "isr_remove_offline"] == []
    assert verdict["violated"] == []
