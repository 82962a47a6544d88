"""KIP-853's dynamic voter set in the model (`sim.kafka.quorum_voters`; `KafkaRaftClient`,
`KRaftControlRecordStateMachine` and `RemoveVoterHandler` read at 3.9.0-rc3): the set a node
takes from its log, the operator's fault actions, and `cluster.initial_controllers`."""

from __future__ import annotations

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from sim.kafka import errors as E
from sim.kafka.kraft_messages import NO_OP, VOTERS, MetadataRecord, QuorumFetchResponse
from tests.kafka import build_cluster

UNIT = """
name = "voters-unit"
expect = "pass"
[protocol]
profile = "{profile}"
[cluster]
mode = "kraft"
brokers = 1
controllers = 4
{initial}
[[topics]]
name = "t"
replication_factor = 1
"""


def _cluster(profile: str = "3.9", initial: int = 3):
    text = UNIT.format(profile=profile, initial=f"initial_controllers = {initial}" if initial
                       else "")
    return build_cluster(text)


def test_the_formatted_voters_vote_and_the_others_observe():
    cluster, _trace = _cluster()
    c1, c4 = cluster.world.actors["c1"], cluster.world.actors["c4"]
    assert c1.voters == ["c1", "c2", "c3"] and c1.kraft_version == 1
    assert c4.is_observer and c4.voters == ["c1", "c2", "c3"]


def test_a_follower_takes_a_voters_record_at_append_and_drops_it_on_truncation():
    """`KRaftControlRecordStateMachine`: the set changes as the record reaches the log,
    committed or not, and a truncation past it falls back to the set before."""
    cluster, trace = _cluster()
    c2 = cluster.world.actors["c2"]
    c2.quorum_epoch, c2.role, c2.leader = 1, "follower", "c1"
    entries = ((0, 1, MetadataRecord.of(NO_OP)),
               (1, 1, MetadataRecord.of(VOTERS, voters=("c1", "c2", "c3", "c4"))))
    c2._apply_fetched(QuorumFetchResponse(1, "c1", E.NONE, entries, 0, None, 0))
    assert c2.voters == ["c1", "c2", "c3", "c4"] and c2.hw == 0
    c2._apply_fetched(QuorumFetchResponse(2, "c3", E.NONE, (), 0, (1, 1), 0))  # diverging
    assert c2.end_offset == 1 and c2.voters == ["c1", "c2", "c3"]
    changed = [e for e in trace.events if e["kind"] == "voters_changed" and e["node"] == "c2"]
    assert [(e["voters"], e["offset"]) for e in changed] == [
        (["c1", "c2", "c3", "c4"], 1), (["c1", "c2", "c3"], -1)]


def test_a_static_voter_set_is_kept_whatever_the_log_holds():
    """kraft.version 0: no VotersRecord, the set the node was given stays (`voters` as set)."""
    cluster, _trace = _cluster("3.9", 0)
    c2 = cluster.world.actors["c2"]
    assert c2.voters == ["c1", "c2", "c3", "c4"] and c2.kraft_version == 0
    c2.voters = ["c2", "c3"]  # as a test or a probe sets it
    c2.quorum_epoch, c2.role, c2.leader = 1, "follower", "c3"
    c2._apply_fetched(QuorumFetchResponse(1, "c3", E.NONE, ((0, 1, MetadataRecord.of(NO_OP)),),
                                          1, None, 0))
    assert c2.voters == ["c2", "c3"]


def test_a_removed_resigned_leader_goes_unattached_in_the_next_epoch():
    """`pollResigned` (3.9.0-rc3): outside the voter set it does not stand once its election
    timeout passes, but moves to epoch + 1, unattached, an observer."""
    cluster, _trace = _cluster()
    c1 = cluster.world.actors["c1"]
    c1.voters = ["c2", "c3"]
    c1.quorum_epoch, c1.role, c1.leader, c1.election_deadline_us = 4, "resigned", "c1", 0
    c1.send = lambda dst, kind, body: None
    c1._poll_resigned(1)
    assert (c1.quorum_state(), c1.quorum_epoch, c1.is_observer) == ("unattached", 5, True)


def test_the_scenario_removes_the_leader_and_adds_an_observer_and_the_removed_one():
    """The library's scenario: the leader removes itself (answered NONE), c4 joins, and of
    c1, c2 and c3 asked again only the removed one joins (the others DUPLICATE_VOTER)."""
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    sc = load_scenario(scenario_path("kraft-voters-remove-add-under-crash"))
    verdict = run_scenario(sc, 1, keep_events=True)
    assert verdict["violated"] == []
    changes = [(e["op"], e["voter"], e["error"]) for e in verdict["_events"]
               if e["kind"] == "voter_change"]
    assert changes[0][0] == "remove" and changes[0][2] == E.NONE
    assert changes[1] == ("add", "c4", E.NONE)
    assert sorted(e for _op, _v, e in changes[2:]) == [E.NONE, E.DUPLICATE_VOTER,
                                                       E.DUPLICATE_VOTER]


def test_the_fault_actions_say_why_they_do_nothing():
    from sim.kafka.faults import ACTIONS
    cluster, _trace = _cluster("3.8", 0)
    assert "before 3.9" in ACTIONS["add_voter"].apply(cluster, "c4", {})
    cluster, _trace = _cluster()
    assert ACTIONS["remove_voter"].apply(cluster, "b1", {}) == "b1 is not a controller: nothing done"
    assert ACTIONS["remove_voter"].apply(cluster, "c2", {}) == "no quorum leader: nothing done"


def test_static_voters_answer_a_voter_change_unsupported_version():
    cluster, trace = _cluster("3.9", 0)
    c1 = cluster.world.actors["c1"]
    c1.voters = ["c1"]  # a quorum of one leads at once
    c1._stand()
    c1.hw, c1.hw_known = c1.end_offset, True
    answers = []
    c1.remove_voter("c2", answers.append)
    assert c1.role == "leader" and answers == [E.UNSUPPORTED_VERSION]


@pytest.mark.parametrize("profile,initial,mode,problem", [
    ("3.8", 3, "kraft", "3.9 or later"),
    ("3.9", 3, "zk", "3.9 or later"),
    ("3.9", 5, "kraft", "exceeds cluster.controllers"),
])
def test_initial_controllers_is_checked_at_load(profile, initial, mode, problem):
    text = UNIT.format(profile=profile, initial=f"initial_controllers = {initial}")
    text = text.replace('mode = "kraft"', f'mode = "{mode}"')
    with pytest.raises(ScenarioError, match=problem):
        parse_scenario(text, "m.toml")


def test_a_static_quorums_header_has_no_initial_controllers():
    static = parse_scenario(UNIT.format(profile="3.9", initial=""), "m.toml").options
    formatted = parse_scenario(UNIT.format(profile="3.9", initial="initial_controllers = 3"),
                               "m.toml").options
    assert "initial_controllers" not in static.cluster.to_json()
    assert formatted.cluster.to_json()["initial_controllers"] == 3
    assert type(formatted.cluster).from_json(formatted.cluster.to_json()) == formatted.cluster


def test_a_leader_counts_itself_for_check_quorum_only_while_a_voter():
    """`updateCheckQuorumForFollowingVoter`: a leader outside its voter set needs a majority
    of the voters themselves."""
    cluster, _trace = _cluster()
    c1 = cluster.world.actors["c1"]
    c1.voters = ["c2", "c3", "c4"]
    c1.role, c1.quorum_epoch = "leader", 2
    limit = cluster.options.cluster.quorum_fetch_timeout_ms * 1500
    c1.voter_contact = {"c2": 10 * limit, "c3": 0, "c4": 0}
    resigned = []
    c1._resign = lambda reason, successors=None: resigned.append(reason)
    c1._check_quorum(10 * limit)
    assert resigned == ["lost quorum"]  # it heard c2 only: one of three
    c1.voter_contact["c3"] = 10 * limit
    resigned.clear()
    c1._check_quorum(10 * limit)
    assert resigned == []
