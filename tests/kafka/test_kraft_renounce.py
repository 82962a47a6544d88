"""A KRaft controller that loses its leadership fails the answers still waiting for their
records to commit with NOT_CONTROLLER (`QuorumController.renounce`, 3.3.0-3.7.0), and the
broker's channel sends a refused AlterPartition to the controller it learns of next, even
when that is the same node, active again (`NodeToControllerRequestThread`)."""

from __future__ import annotations

import functools

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka import errors as E
from sim.kafka.kraft_controller import not_controller_answer
from sim.kafka.kraft_messages import BrokerHeartbeatResponse, BrokerRegistrationResponse
from sim.kafka.messages import AlterPartitionResponse

# Found by `epochsim explore` on the correct model of a self-test base: c2, cut off, runs up
# the quorum epoch; b2 asks c3 (active) to add b1 back to the ISRs at 9.977 s, and the heal at
# 10 s makes c3 resign before those records leave its 25 ms linger. c3 is elected again at
# 12.6 s. The answers were dropped, so b2 waited for them for good and the ISRs stayed short.
# (Since brokers' metadata Fetches carry their quorum epoch, b2 asks at 10.203 s, so the heal
# moved to 10.22 s to stage the same race; since candidates back off after a lost election,
# the voters' election draws differ, and at seed 298 c3 wins again, at 11.9 s, where seed 265
# now elects c1. The race needs c2 to run up the epoch, which KIP-996's Pre-Vote stops from
# 4.0: `raft_pre_vote` is off here, as up to 3.9.)
SCENARIO = """
name = "renounce"
expect = "pass"
seed = 298
[run]
duration_ms = 20000
settle_ms = 6000
[protocol]
profile = "4.1"
produce_epoch_check = true
raft_pre_vote = false
[cluster]
brokers = 3
controllers = 3
min_insync_replicas = 2
broker_session_timeout_ms = 1000
broker_heartbeat_interval_ms = 250
[[topics]]
name = "t"
partitions = 3
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = 1
records_per_sec = 100
linger_ms = 100
"""
FAULTS = [(6000, 'action = "partition"\ngroups = [["c2"], ["c1", "c3"]]'),
          (6000, 'action = "crash"\ntarget = "b3"'),
          (7000, 'action = "isolate"\ntarget = "c2"'),
          (8600, 'action = "isolate"\ntarget = "follower:t-0"\ncut = "e0"'),
          (9000, 'action = "crash"\ntarget = "b1"'),
          (9000, 'action = "restart"\ntarget = "b1"'),
          (9400, 'action = "heal"\ntarget = "follower:t-0"\ncut = "e0"'),
          (10220, 'action = "heal"'),
          (10220, 'action = "heal"\ntarget = "c2"'),
          (11000, 'action = "restart"\ntarget = "b3"')]


@functools.lru_cache(maxsize=None)
def _verdict() -> dict:
    text = SCENARIO + "".join(f"[[faults]]\nat_ms = {at}\n{body}\n" for at, body in FAULTS)
    return run_scenario(parse_scenario(text, "renounce.toml"), 298, keep_events=True)


def _sends(events, node: str, msg: str, after: int) -> list[dict]:
    return [e for e in events if e["kind"] == "send" and e["node"] == node
            and e["msg"] == msg and e["t"] >= after]


def test_the_waiting_alter_partition_answers_fail_when_the_controller_resigns():
    events = _verdict()["_events"]
    resigned = next(e for e in events if e["kind"] == "controller_resigned")
    assert (resigned["node"], resigned["controller_epoch"]) == ("c3", 1)  # the epoch it led
    waited = [e for e in events if e["kind"] == "alter_partition" and e["node"] == "c3"
              and resigned["t"] - 25_000 < e["t"] < resigned["t"] and e["error"] == E.NONE]
    assert len(waited) == 3, "the fixture no longer stages the race: c3 resigned with none waiting"
    refused = [e for e in _sends(events, "c3", "AlterPartitionResponse", resigned["t"])
               if e["t"] == resigned["t"]]
    assert sorted(e["tp"] for e in refused) == ["t-0", "t-1", "t-2"]
    assert {e["error"] for e in refused} == {E.NOT_CONTROLLER}


def test_the_refused_alter_partitions_go_again_to_the_same_node_once_it_leads_again():
    verdict = _verdict()
    events = verdict["_events"]
    resigned = next(e for e in events if e["kind"] == "controller_resigned")
    elected = next(e for e in events if e["kind"] == "controller_elected"
                   and e["t"] > resigned["t"])
    assert elected["node"] == "c3"
    again = _sends(events, "b2", "AlterPartition", resigned["t"])
    # to c3 only (one sent while it leads the quorum but is not yet active is answered
    # NOT_CONTROLLER and goes again), and each again once it is the active controller
    assert again and {e["dst"] for e in again} == {"c3"}
    after = [e for e in again if e["t"] >= elected["t"]]
    assert sorted({e["tp"] for e in after}) == ["t-0", "t-1", "t-2"]
    assert verdict["expectation_met"], verdict["violations"][:1]


def test_each_waiting_answer_has_its_not_controller_form():
    alter = not_controller_answer("AlterPartitionResponse",
                                  AlterPartitionResponse(7, "t-0", E.NONE, 3, 4, (1, 2)), "c1")
    assert alter == AlterPartitionResponse(7, "t-0", E.NOT_CONTROLLER, -1, -1, ())
    beat = not_controller_answer("BrokerHeartbeatResponse",
                                 BrokerHeartbeatResponse(E.NONE, False, "c3"), "c1")
    assert beat == BrokerHeartbeatResponse(E.NOT_CONTROLLER, True, "c1")
    reg = not_controller_answer("BrokerRegistrationResponse",
                                BrokerRegistrationResponse(E.NONE, 12, 2), None)
    assert reg == BrokerRegistrationResponse(E.NOT_CONTROLLER, -1, 2)
