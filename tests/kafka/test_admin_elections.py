"""The admin's leader elections by request (KIP-183, KIP-460): the pure decisions of
`rules.admin_elections`, and a run's `elect_leaders` fault on either controller, whose UNCLEAN
election loses what only the old ISR held, which the invariants excuse as the operator's
choice."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, parse_scenario
from sim.kafka import errors as E
from sim.kafka.rules import admin_elections as AE
from sim.kafka.vocab import ADMIN_UNCLEAN_ELECTION


def test_which_partitions_need_an_election():
    # ZooKeeper mode: UNCLEAN where the leader is gone or its broker not live
    assert AE.zk_election_needed(AE.UNCLEAN, (1, 2), -1, {2})
    assert AE.zk_election_needed(AE.UNCLEAN, (1, 2), 1, {2})
    assert not AE.zk_election_needed(AE.UNCLEAN, (1, 2), 2, {2})
    assert AE.zk_election_needed(AE.PREFERRED, (1, 2), 2, {1, 2})
    assert not AE.zk_election_needed(AE.PREFERRED, (1, 2), 1, set())
    # KRaft: UNCLEAN only where no replica leads (a fenced leader is taken away at fencing)
    assert AE.kraft_election_needed(AE.UNCLEAN, (1, 2), -1)
    assert not AE.kraft_election_needed(AE.UNCLEAN, (1, 2), 2)
    assert not AE.kraft_election_needed(AE.PREFERRED, (1, 2), 1)


def test_the_errors_by_release_and_type():
    assert AE.not_needed_error("preferred") == E.NONE  # 2.2-2.3: `alreadyPreferred` -> NONE
    assert AE.not_needed_error("typed") == E.ELECTION_NOT_NEEDED
    assert AE.failed_error(AE.PREFERRED) == E.PREFERRED_LEADER_NOT_AVAILABLE
    assert AE.failed_error(AE.UNCLEAN) == E.ELIGIBLE_LEADERS_NOT_AVAILABLE
    results = {"t-0": E.NONE, "t-1": E.ELECTION_NOT_NEEDED}
    assert AE.answered(results, every_partition=True) == {"t-0": E.NONE}
    assert AE.answered(results, every_partition=False) == results
    assert AE.refused("none", AE.PREFERRED) and AE.refused("preferred", AE.UNCLEAN)
    assert AE.refused("preferred", AE.PREFERRED) is None and AE.refused("typed", AE.UNCLEAN) is None


RUN = """
name = "admin-unclean"
expect = "pass"
seed = 1
[run]
duration_ms = 14000
settle_ms = 3000
[protocol]
profile = "{profile}"
[cluster]
mode = "{mode}"
brokers = 2
{controllers}
replica_lag_time_max_ms = 1000
broker_session_timeout_ms = 1500
zk_session_timeout_ms = 1500
auto_leader_rebalance = false
[[topics]]
name = "t"
partitions = 1
replication_factor = 2
assignment = [[1, 2]]
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 100
linger_ms = 10
[[faults]]          # b2 stops fetching and leaves the ISR; b1 acknowledges alone
at_ms = 1000
action = "rule"
rule = "drop"
kind = "Fetch"
src = "b2"
duration_ms = 4000
[[faults]]          # the ISR's last member fails: the partition is offline
at_ms = 4500
action = "crash"
target = "b1"
[[faults]]          # the operator gives up b1's records to get the partition back
at_ms = 8000
action = "elect_leaders"
target = "t-0"
election_type = "{election_type}"
"""


def _run(mode: str, election_type: str = "unclean", profile: str = "3.7"):
    controllers = "controllers = 1" if mode == "kraft" else ""
    text = RUN.format(mode=mode, election_type=election_type, profile=profile,
                      controllers=controllers)
    return run_scenario(parse_scenario(text, "admin-unclean.toml"), 1, keep_events=True)


@pytest.mark.parametrize("mode", ["zk", "kraft"])
def test_an_admin_unclean_election_brings_the_partition_back_and_its_loss_is_excused(mode):
    verdict = _run(mode)
    states = [e for e in verdict["_events"] if e["kind"] == "partition_state"]
    elected = [s for s in states if s["reason"] == ADMIN_UNCLEAN_ELECTION]
    assert elected and elected[0]["leader"] == 2 and elected[0]["isr"] == [2], states[-3:]
    outcomes = [e for e in verdict["_events"] if e["kind"] == "fault_outcome"]
    assert not [o for o in outcomes if o.get("step") == 2], outcomes  # it elected
    assert verdict["violated"] == [], verdict["violated"]
    # the excuse mattered: batches acknowledged by b1 alone are gone from b2's log
    acked = {e["bid"] for e in verdict["_events"] if e["kind"] == "ack" and e["acks"] == "all"
             and e["t"] < elected[0]["t"]}
    held = {b[5] for e in verdict["_events"] if e["kind"] == "replicate" and e["node"] == "b2"
            for b in e["batches"]}
    assert acked - held


def test_an_admin_preferred_request_does_not_elect_uncleanly():
    verdict = _run("zk", election_type="preferred")
    outcomes = [e["outcome"] for e in verdict["_events"] if e["kind"] == "fault_outcome"
                and e.get("step") == 2]
    assert outcomes and outcomes[0].startswith("PREFERRED_LEADER_NOT_AVAILABLE"), outcomes
    states = [e for e in verdict["_events"] if e["kind"] == "partition_state"]
    assert states[-1]["leader"] == -1


@pytest.mark.parametrize("profile,election_type,why", [
    ("2.1", "preferred", "no ElectLeaders request before 2.2"),
    ("2.3", "unclean", "UNCLEAN comes with ElectLeaders v1"),
])
def test_a_release_that_cannot_send_the_election_refuses_the_step(profile, election_type, why):
    text = RUN.format(mode="zk", election_type=election_type, profile=profile, controllers="")
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "admin-unclean.toml")
    assert why in str(err.value) and "\n" not in str(err.value)
