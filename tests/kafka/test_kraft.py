"""KRaft mode end to end: the control plane a scenario picks, what a ZooKeeper-mode trace
header keeps, each broker's own metadata lag, the KRaft faults, and the planted bugs."""

from __future__ import annotations

import functools

import pytest

from scenarios.schema import ScenarioError, load_scenario, parse_scenario
from sim.kafka.modes import modes
from sim.kafka.options import Options
from tests.conftest import run_cached, scenario_path

BASE = """
name = "m"
expect = "pass"
[protocol]
profile = "{profile}"
[cluster]
{mode}
[[topics]]
name = "t"
"""


def _options(profile: str, mode: str = "") -> Options:
    text = BASE.format(profile=profile, mode=f'mode = "{mode}"' if mode else "")
    return parse_scenario(text, "m.toml").options


@pytest.mark.parametrize("profile,mode", [("2.6", "zk"), ("3.7", "zk"), ("3.3", "zk"),
                                          ("4.0", "kraft"), ("4.1", "kraft"),
                                          ("4.2", "kraft"), ("4.3", "kraft"),
                                          ("proposed", "zk")])
def test_each_profile_has_its_default_mode(profile, mode):
    assert _options(profile).cluster.mode == mode == modes(profile)[0]


@pytest.mark.parametrize("profile,mode,words", [
    ("4.0", "zk", "profile '4.0' has no 'zk' mode"),
    ("4.3", "zk", "profile '4.3' has no 'zk' mode"),
    ("2.6", "kraft", "profile '2.6' has no 'kraft' mode"),
    ("3.7", "raft", "unknown value 'raft'")])
def test_a_mode_the_release_lacks_is_refused_in_one_line(profile, mode, words):
    with pytest.raises(ScenarioError) as err:
        _options(profile, mode)
    assert "cluster.mode" in str(err.value) and words in str(err.value)
    assert "\n" not in str(err.value)


def test_a_zookeeper_header_leaves_every_kraft_field_out_and_reads_back():
    options = _options("3.5")
    data = options.to_json()
    assert "mode" not in data["cluster"] and "metadata_apply_us" not in data["cluster"]
    assert "kraft_isr_shrink_bumps_epoch" not in data["protocol"]
    assert Options.from_json(data) == options
    kraft = _options("3.5", "kraft")
    data = kraft.to_json()
    assert data["cluster"]["mode"] == "kraft"
    assert data["protocol"]["kraft_isr_shrink_bumps_epoch"] is True  # 3.5: before KAFKA-15021
    assert Options.from_json(data) == kraft


@functools.lru_cache(maxsize=None)
def _events(name: str, overrides: tuple = ()) -> list[dict]:
    from epochsim.runner import run_scenario
    scenario = load_scenario(scenario_path(name), dict(overrides))
    return run_scenario(scenario, scenario.seed, keep_events=True)["_events"]


def _applied_at(events, broker: str, offset: int) -> int:
    """When `broker` first had applied the metadata log up to `offset`."""
    return next(e["t"] for e in events if e["kind"] == "metadata_apply"
                and e["node"] == broker and e["to_offset"] >= offset)


def test_each_broker_applies_a_record_at_its_own_pace():
    """kraft-lagging-broker: b3 applies every batch 800 ms late; b1, cut from the quorum,
    learns that it was fenced only after the heal; b2 within milliseconds of the commit."""
    events = _events("kraft-lagging-broker")
    fenced = next(e for e in events if e["kind"] == "metadata_commit" and any(
        r[2]["kind"] == "BrokerRegistrationChangeRecord" and r[2]["broker"] == 1
        and r[2]["fenced"] for r in e["records"]))
    offset = fenced["records"][0][0] + 1
    # the session (3 s) timed out after the last heartbeat (every 500 ms) before the cut
    assert 8_000_000 + 3_000_000 - 500_000 <= fenced["t"] < 12_000_000
    b2, b3 = _applied_at(events, "b2", offset), _applied_at(events, "b3", offset)
    b1 = _applied_at(events, "b1", offset)
    assert b2 - fenced["t"] < 50_000
    assert b3 - fenced["t"] >= 800_000
    assert b1 >= 14_000_000  # after the heal


def test_the_fenced_broker_loses_its_leaderships_in_the_controllers_truth():
    events = _events("kraft-lagging-broker")
    leaders_after_fence = {e["tp"]: e["leader"] for e in events
                           if e["kind"] == "partition_state" and 10_000_000 < e["t"] < 14_000_000}
    assert leaders_after_fence and 1 not in leaders_after_fence.values()


def test_the_quorum_fails_over_and_the_cut_leader_truncates_what_it_did_not_commit():
    events = _events("kraft-controller-split")
    leaders = [(e["node"], e["epoch"]) for e in events if e["kind"] == "quorum_leader"]
    assert leaders[0][0] == "c2" and len({n for n, _ in leaders}) >= 2
    truncated = {e["node"]: e for e in events if e["kind"] == "metadata_truncate"}
    assert "c2" in truncated
    # brokers fetching from the cut leader kept its uncommitted records in their own metadata
    # logs, as Kafka's observers do, and the new leader's divergence cuts them too
    brokers = [truncated[n] for n in ("b1", "b2") if n in truncated]
    assert brokers and all(e["to_offset"] == truncated["c2"]["to_offset"] for e in brokers)


@pytest.mark.parametrize("name,mutant,invariant", [
    ("kraft-controller-split", "raft_commits_without_majority", "metadata_log_safety"),
    ("kraft-smoke", "broker_applies_uncommitted", "metadata_applied_in_order"),
])
def test_the_kraft_planted_bugs_are_caught(name, mutant, invariant):
    assert run_cached(name, 1)["violated"] == []
    verdict = run_cached(name, 1, (("protocol.mutant", mutant),))
    assert invariant in verdict["violated"], verdict["violated"]


@pytest.mark.parametrize("mutant,invariant", [
    ("leader_counts_pending_shrink", "fenced_broker_ack"),
    ("quorum_leader_never_resigns", "broker_metadata_stalled"),
])
def test_the_kraft_selftest_bases_story_catches_its_planted_bug(mutant, invariant):
    """The base's scripted story alone breaks the invariant with the bug and holds without
    it. leader_counts_pending_shrink needs the leader to recompute its HW on a duplicate
    append too (`Partition.appendRecordsToLeader`): the producer's retry after its request
    timeout is the only append while the shrink is pending."""
    base = f"selftest/{mutant}"
    assert invariant in run_cached(base, 1)["violated"]
    assert run_cached(base, 1, (("protocol.mutant", ""),))["violated"] == []


def test_a_zookeeper_mode_run_checks_no_kraft_invariant_by_default():
    sc = load_scenario(scenario_path("smoke"))
    assert "metadata_log_safety" not in sc.invariants
    assert "metadata_log_safety" in load_scenario(scenario_path("kraft-smoke")).invariants


def test_an_answer_to_a_metadata_fetch_sent_again_is_not_applied_twice():
    """mix-kraft-failover-storm at seed 2: a broker's metadata Fetch timed out and was sent
    again, and both answers came; the second must not apply the same records again."""
    verdict = run_cached("mix-kraft-failover-storm", 2)
    assert verdict["violated"] == [], verdict["violations"][:2]


def test_a_probe_still_checks_no_invariant_by_default():
    """The KRaft invariants leave a ZooKeeper-mode default list; a probe's empty one stays
    empty (it judges its own checks, not the catalogue)."""
    import glob
    probe = sorted(glob.glob(scenario_path("conformance/*").replace(".toml", "")))[0]
    assert load_scenario(probe).invariants == []


KRAFT_UNIT = """
name = "kraft-unit"
expect = "pass"
[protocol]
profile = "4.1"
[cluster]
brokers = 3
controllers = 3
[[topics]]
name = "t"
"""


@pytest.mark.parametrize("leader,timed_out,then", [
    ("c2", "c1", "c2"),  # a leader learned since (a heartbeat's answer) is kept
    ("c1", "c1", "c2"),  # the leader's own Fetch timed out: the next voter is asked
    (None, "c3", "c1"),  # no leader known: after the one that failed, in turn
])
def test_a_metadata_fetch_that_timed_out_asks_another_voter(leader, timed_out, then):
    """mix-kraft-failover-storm at seed 54: a broker's metadata Fetches to a voter that was
    down timed out, each timeout forgot the leader its heartbeats had found meanwhile, and
    the shared bootstrap rotation brought the next Fetch back to the dead voter, for good.
    `KafkaRaftClient.pollFollowerAsObserver` sends to another, ready voter instead."""
    from tests.kafka import build_cluster
    cluster, trace = build_cluster(KRAFT_UNIT)
    b1 = cluster.world.actors["b1"]
    b1.meta_leader, b1.meta_dst = leader, timed_out
    b1._meta_fetch_timed_out()
    sent = [e for e in trace.events if e["kind"] == "send" and e["msg"] == "QuorumFetch"]
    assert [e["dst"] for e in sent] == [then]


def test_a_quorum_of_one_answers_a_registration_with_its_own_record_and_drops_a_dead_fetch():
    """kraft-broker-bounce-one-controller: b1 bounces at 1.8 s. The controller refuses the new
    incarnation's registration until the old session expires, then answers it with the broker
    epoch of that registration's own record (a quorum of one
    commits inside the append), and the Fetch the dead incarnation had parked is not answered
    to the new one, which applies the log from offset 0."""
    events = _events("kraft-broker-bounce-one-controller")
    registered = [e["offset"] for e in events if e["kind"] == "metadata_append"
                  and e["t"] >= 1_800_000 and e["record"]["kind"] == "RegisterBrokerRecord"]
    answers = [e["broker_epoch"] for e in events if e.get("msg") == "BrokerRegistrationResponse"
               and e["kind"] == "send" and e["t"] >= 1_800_000 and e["error"] == 0]
    refused = [e for e in events if e.get("msg") == "BrokerRegistrationResponse"
               and e["kind"] == "send" and e["t"] >= 1_800_000 and e["error"]]
    # the new incarnation waits for the old one's session (DUPLICATE_BROKER_REGISTRATION)
    assert refused and refused[-1]["t"] < next(e["t"] for e in events if e["kind"] ==
                                               "metadata_append" and e["t"] >= 1_800_000
                                               and e["record"]["kind"] == "RegisterBrokerRecord")
    assert registered and answers[0] == registered[0]
    first_apply = next(e for e in events if e["kind"] == "metadata_apply" and e["node"] == "b1"
                       and e["t"] >= 1_800_000)
    assert first_apply["from_offset"] == 0


def test_a_kraft_controlled_shutdown_moves_leaderships_before_the_broker_stops():
    """The broker asks in its heartbeat; the controller moves its leaderships, then fences it
    and answers ShouldShutDown; the broker stops on that answer, before the fault's own cap."""
    from epochsim.runner import run_scenario
    from sim.kafka.faults import CONTROLLED_SHUTDOWN_US

    result = run_scenario(load_scenario(scenario_path("kraft-controlled-shutdown")), 1,
                          keep_events=True)
    events = result["_events"]
    asked = next(e for e in events if e["kind"] == "send" and e.get("want_shutdown"))
    moved = [e for e in events if e["kind"] == "partition_state" and e["t"] >= asked["t"]
             and e["t"] < asked["t"] + CONTROLLED_SHUTDOWN_US]
    allowed = next(e for e in events if e["kind"] == "send" and e.get("should_shutdown"))
    stopped = next(e for e in events if e["kind"] == "crash" and e["node"] == asked["node"])
    b = int(asked["node"][1:])
    assert moved and all(e["leader"] != b and b not in e["isr"] for e in moved[:3])
    assert moved[0]["t"] < allowed["t"] < stopped["t"] < asked["t"] + CONTROLLED_SHUTDOWN_US
    assert result["violated"] == []


@pytest.mark.parametrize("kind", ["legacy", "fixed"])
def test_a_broker_down_while_its_topic_is_recreated_meets_the_old_log_as_a_stray(kind):
    """KAFKA-14616: b1's first publish after its restart holds the RemoveTopicRecord and the
    new topic's records. It deletes the old topic id's log as a stray either way; on 3.6 it
    has not made the new t-0 by then and never does, on 3.7 it makes it right after."""
    events = _events(f"kafka14616-kraft-recreated-topic-stray-{kind}")
    deleted = next(e for e in events if e["kind"] == "topic_deleted")
    restart = next(e for e in events if e["kind"] == "restart" and e["node"] == "b1")
    stray = [e for e in events if e["kind"] == "log_deleted" and e["node"] == "b1"]
    assert [(e["topic_id"], e.get("reason")) for e in stray] == [(deleted["topic_id"], "stray")]
    assert stray[0]["t"] > restart["t"]
    remade = [e for e in events if e["kind"] == "log_created" and e["node"] == "b1"
              and e["t"] > restart["t"]]
    if kind == "legacy":
        assert remade == []
    else:
        assert remade and remade[0]["topic_id"] != deleted["topic_id"]
        assert remade[0]["seq"] > stray[0]["seq"]


def test_a_kraft_topic_is_deleted_when_its_record_commits_and_no_replica_may_be_all_fenced():
    from epochsim.runner import run_scenario
    text = open(scenario_path("kafka14616-kraft-recreated-topic-stray-fixed")).read()
    scenario = parse_scenario(text.replace('assignment = [[1, 2, 3]]', 'assignment = [[1]]'),
                              "inline.toml")
    events = run_scenario(scenario, 1, keep_events=True)["_events"]
    steps = {e["step"]: e["action"] for e in events if e["kind"] == "fault"}
    outcomes = {steps[e["step"]]: e["outcome"] for e in events if e["kind"] == "fault_outcome"}
    # every broker named is fenced (b1 is down): Kafka refuses the assignment
    assert outcomes == {"create_topic": outcomes["create_topic"]}
    assert outcomes["create_topic"].startswith("INVALID_REPLICA_ASSIGNMENT")
    commit = next(e for e in events if e["kind"] == "metadata_commit" and any(
        r[2]["kind"] == "RemoveTopicRecord" for r in e["records"]))
    deleted = next(e for e in events if e["kind"] == "topic_deleted")
    assert deleted["t"] == commit["t"] and deleted["topic"] == "t"
    gone = {e["node"] for e in events if e["kind"] == "log_deleted" and e["t"] >= commit["t"]}
    assert {"b2", "b3"} <= gone


def test_a_kraft_reassignment_completes_on_the_isr_that_adds_the_new_replica():
    """kraft-reassignment: cancelled while b4 is down, then run again once it is up; the
    leader's AlterPartition that adds b4 completes it, b1 leaves (it led, so b4 is elected)
    and deletes its replica when it applies the record."""
    events = _events("kraft-reassignment")
    states = [e for e in events if e["kind"] == "partition_state" and e["t"] > 3_000_000]
    assert [(e["reason"], e["replicas"]) for e in states] == [
        ("reassign_start", [4, 2, 3, 1]), ("reassign_cancel", [2, 3, 1]),
        ("reassign_start", [4, 2, 3, 1]), ("reassign_complete", [4, 2, 3])]
    done = states[-1]
    assert done["leader"] == 4 and done["isr"] == [2, 3, 4]
    assert done["leader_epoch"] > states[-2]["leader_epoch"]
    gone = [e for e in events if e["kind"] == "log_deleted"]
    assert [(e["node"], e["tp"]) for e in gone] == [("b1", "t-0")] and gone[0]["t"] > done["t"]


def test_a_kraft_reassignment_to_the_same_replicas_in_another_order_completes_at_once():
    """No replica is added or removed, so nothing stays in progress (a search found the
    record called `reassign_start` with nothing to complete it: under_replicated_after_heal)."""
    from epochsim.runner import run_scenario
    text = open(scenario_path("kraft-reassignment")).read()
    text = text[:text.index("[[faults]]")] + (
        '[[faults]]\nat_ms = 4000\naction = "reassign"\ntarget = "t-0"\nreplicas = [3, 2, 1]\n')
    result = run_scenario(parse_scenario(text, "inline.toml"), 1, keep_events=True)
    states = [e for e in result["_events"] if e["kind"] == "partition_state" and e["t"] >= 4e6]
    assert [(e["reason"], e["replicas"]) for e in states] == [("reassign_complete", [3, 2, 1])]
    assert result["violated"] == []


def test_a_restarted_broker_takes_no_answer_to_its_earlier_incarnation_s_metadata_fetch():
    """The self-test base of quorum_leader_never_resigns, its planted bug removed, with what a
    search of the correct model drew: b1's heartbeats to c1 held back 5 s (FIFO, so its next
    metadata Fetch waits behind them), b1 crashes and restarts. c1 answers that Fetch of the
    dead incarnation after the restart; the new b1 has a Fetch of its own in flight, and took
    the answer (records from offset 10 while it expected 0: metadata_applied_in_order). The
    answer now carries the Fetch's correlation id and the new incarnation ignores it. (Since
    Fetches carry the quorum epoch, the new b1 learns a higher epoch from c2, which the split
    left standing for election alone, and the leader c1 answers its Fetches
    UNKNOWN_LEADER_EPOCH, as Kafka's observer would meet it, so it applies nothing more; the
    late answer still reaches it.)"""
    from epochsim.runner import run_scenario
    text = open(scenario_path("selftest/quorum_leader_never_resigns")).read()
    text = text.replace('mutant = "quorum_leader_never_resigns"', 'mutant = ""')
    text = text.replace('expect = "violation:broker_metadata_stalled"', 'expect = "pass"')
    text += ('\n[[faults]]\nat_ms = 21000\naction = "rule"\nrule = "delay"\n'
             'kind = "BrokerHeartbeat"\nsrc = "b1"\ndst = "c1"\ndelay_ms = 5000\ncount = 2\n'
             'duration_ms = 800\n\n[[faults]]\nat_ms = 21900\naction = "crash"\ntarget = "b1"\n'
             '\n[[faults]]\nat_ms = 22000\naction = "restart"\ntarget = "b1"\n')
    result = run_scenario(parse_scenario(text, "inline.toml"), 2925, keep_events=True)
    assert "metadata_applied_in_order" not in result["violated"], result["violations"][:2]
    events = result["_events"]
    # c1 answered the dead incarnation's Fetch (records from its offset) after the restart
    late = {e["mid"] for e in events if e["kind"] == "send" and e["node"] == "c1"
            and e.get("msg") == "QuorumFetchResponse" and e["dst"] == "b1"
            and e["error"] == 0 and e["t"] > 22_000_000}
    assert late & {e["mid"] for e in events if e["kind"] == "deliver" and e["node"] == "b1"}
    applied = [e for e in events if e["kind"] == "metadata_apply"
               and e["node"] == "b1" and e["t"] > 22_000_000]
    assert all(a["from_offset"] == 0 for a in applied[:1])


def test_a_new_quorum_leader_tells_no_high_watermark_until_its_epoch_start_commits():
    """The self-test base of raft_commits_without_majority, its planted bug removed, with what
    a search of the correct model drew: c2 is cut from c1 and c3 while b1 restarts. The new
    leader answered b1's first metadata Fetch with the high watermark it had as a follower,
    behind what c2 had committed, so b1's first publish took t-0 back to an older leader
    epoch (leader_epoch_monotonic). A new leader now answers -1 until its epoch's first
    record commits (`LeaderState.highWatermark` is empty until then)."""
    from epochsim.runner import run_scenario
    text = open(scenario_path("selftest/raft_commits_without_majority")).read()
    text = text.replace('mutant = "raft_commits_without_majority"', 'mutant = ""')
    text = text[:text.index("[[faults]]")] if "[[faults]]" in text else text
    steps = [(1000, "controlled_shutdown", "b1"), (2000, "restart", "b1"),
             (9800, "controlled_shutdown", "b1"), (10500, "restart", "b1")]
    text += "".join(f'\n[[faults]]\nat_ms = {t}\naction = "{a}"\ntarget = "{b}"\n'
                    for t, a, b in steps)
    text += ('\n[[faults]]\nat_ms = 6000\naction = "partition"\ngroups = [["c2"], ["c1", "c3"]]\n'
             '\n[[faults]]\nat_ms = 10000\naction = "heal"\n')
    text = text.replace('expect = "violation:metadata_log_safety"', 'expect = "pass"')
    result = run_scenario(parse_scenario(text, "inline.toml"), 4766, keep_events=True)
    assert "leader_epoch_monotonic" not in result["violated"], result["violations"][:2]
    answers = [e for e in result["_events"] if e["kind"] == "send" and e.get("msg") == "QuorumFetchResponse"
               and e.get("error") == 0]
    assert any(a["high_watermark"] == -1 for a in answers)


