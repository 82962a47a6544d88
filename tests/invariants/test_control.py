"""stop_replica_out_of_order and stray_replica on hand-built traces."""

from __future__ import annotations

import pytest

from tests.invariants.tracebuilder import TraceBuilder

# -- stop_replica_out_of_order ---------------------------------------------------------------


def test_stop_replica_out_of_order_holds_for_in_order_and_fenced_requests():
    tb = TraceBuilder()
    tb.log_created("b3", "t-0")
    tb.replica_state("b3", "t-0", "follower", 1, 1)
    # issued at the epoch b3 has applied: in order
    tb.at(10).stop_replica("b3", "t-0", issued_epoch=1, local_epoch=1, delete=False)
    tb.at(20).replica_state("b3", "t-0", "follower", 1, 3)
    # issued at epoch 2, arriving after LeaderAndIsr epoch 3, but fenced: b3 keeps its replica
    tb.at(30).stop_replica("b3", "t-0", issued_epoch=2, local_epoch=3, result="fenced")
    # a newer StopReplica after the older LeaderAndIsr is the normal order
    tb.at(40).stop_replica("b3", "t-0", issued_epoch=4, local_epoch=3)
    tb.log_deleted("b3", "t-0")
    # LeaderAndIsr of another broker does not concern b3's StopReplica
    tb.at(50).replica_state("b2", "t-0", "leader", 2, 9)
    tb.stop_replica("b3", "t-0", issued_epoch=5, local_epoch=-1, result="not_hosted")
    assert tb.violations("stop_replica_out_of_order") == []


def test_stop_replica_out_of_order_violated_by_a_stale_stop_applied_after_a_newer_lai():
    tb = TraceBuilder()
    tb.log_created("b3", "t-0")
    tb.replica_state("b3", "t-0", "follower", 1, 1)
    newer = tb.at(10).replica_state("b3", "t-0", "follower", 1, 2)
    # issued at epoch 1 (wire epoch -1: StopReplica v2 carries none), applied after epoch 2
    stale = tb.at(20).stop_replica("b3", "t-0", issued_epoch=1, req_epoch=-1, local_epoch=2)
    tb.log_deleted("b3", "t-0")
    assert tb.violations("stop_replica_out_of_order") == [
        ("stop_replica_out_of_order", 20, (newer, stale))]


def test_stop_replica_out_of_order_holds_for_a_stale_duplicate_that_finds_nothing():
    tb = TraceBuilder()
    tb.log_created("b3", "t-0")
    tb.replica_state("b3", "t-0", "follower", 1, 1)
    tb.at(10).stop_replica("b3", "t-0", issued_epoch=1, local_epoch=1)
    tb.log_deleted("b3", "t-0")
    # an older StopReplica (issued at epoch 0), delayed or duplicated by the network
    tb.at(20).stop_replica("b3", "t-0", issued_epoch=0, local_epoch=-1, result="not_hosted")
    assert tb.violations("stop_replica_out_of_order") == []


# -- stray_replica ---------------------------------------------------------------------------

def _stray_trace(settled: bool = True, crash_b3: bool = False, resign: bool = False,
                 request_due: bool = False):
    """t-0 assigned to b1, b2; b3 still hosts a replica at the end."""
    tb = TraceBuilder(brokers=3)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    seqs = {b: tb.log_created(b, "t-0") for b in ("b1", "b2", "b3")}
    tb.at(10)
    seqs["state"] = tb.partition_state("t-0", 1, 1, [1, 2], reason="reassign_complete")
    if crash_b3:
        tb.at(20).add("b3", "crash")
    if resign:
        tb.at(20).add("c1", "controller_resigned", controller_epoch=1, reason="session expired")
    tb.at(100)
    if request_due:
        tb.add("harness", "unsettled", links=[["c1", "b3"]])
    seqs["end"] = tb.end(settled=settled)
    return tb, seqs


def test_stray_replica_holds_when_every_live_broker_hosts_its_assignment():
    tb = TraceBuilder(brokers=3)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2])
    tb.partition_state("u-0", 2, 0, [2, 3], topic_id=2)
    for b in ("b1", "b2", "b3"):
        tb.log_created(b, "t-0")
    tb.log_created("b2", "u-0")
    tb.log_created("b3", "u-0")
    tb.at(10).stop_replica("b3", "t-0", issued_epoch=0, local_epoch=0)
    tb.log_deleted("b3", "t-0")
    # a deleted topic whose replicas are all gone leaves nothing behind
    tb.add("c1", "topic_deleted", topic="u", topic_id=2)
    tb.log_deleted("b2", "u-0", topic_id=2)
    tb.log_deleted("b3", "u-0", topic_id=2)
    tb.at(100).end()
    assert tb.violations("stray_replica") == []


@pytest.mark.parametrize("case", ["crashed", "unsettled", "no_controller"])
def test_stray_replica_holds_when_the_end_state_is_not_judged(case):
    """A crashed broker is not judged, nor a run that did not settle or has no controller."""
    tb, _ = _stray_trace(settled=case != "unsettled", crash_b3=case == "crashed",
                         resign=case == "no_controller")
    assert tb.violations("stray_replica") == []


def test_stray_replica_violated_by_a_replica_left_on_an_unassigned_broker():
    tb, s = _stray_trace()
    assert tb.violations("stray_replica") == [
        ("stray_replica", 100, (s["b3"], s["state"], s["end"]))]


def test_stray_replica_violated_by_a_missing_assigned_replica():
    tb = TraceBuilder(brokers=3)
    tb.controller()
    state = tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.log_created("b1", "t-0")
    tb.log_created("b2", "t-0")
    end = tb.at(100).end()
    assert tb.violations("stray_replica") == [("stray_replica", 100, (state, end))]


def test_stray_replica_violated_by_a_replica_of_a_deleted_topic():
    tb = TraceBuilder(brokers=3)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2])
    tb.log_created("b1", "t-0")
    left = tb.log_created("b2", "t-0")
    tb.at(10).add("c1", "topic_deleted", topic="t", topic_id=1)
    tb.log_deleted("b1", "t-0")
    end = tb.at(100).end()
    assert tb.violations("stray_replica") == [("stray_replica", 100, (left, end))]


def test_stray_replica_violated_by_a_replica_of_the_old_topic_id():
    tb = TraceBuilder(brokers=3)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    for b in ("b1", "b2", "b3"):
        tb.log_created(b, "t-0")
    tb.at(10).add("c1", "topic_deleted", topic="t", topic_id=1)
    tb.log_deleted("b1", "t-0")
    tb.log_deleted("b2", "t-0")
    # b3 missed the deletion; LeaderAndIsr for the new id fails with INCONSISTENT_TOPIC_ID
    tb.at(20).partition_state("t-0", 1, 0, [1, 2, 3], topic_id=2, reason="create_topic")
    tb.log_created("b1", "t-0", topic_id=2)
    tb.log_created("b2", "t-0", topic_id=2)
    tb.at(100).end()
    assert [v[0] for v in tb.violations("stray_replica")] == ["stray_replica"]


def test_stray_replica_holds_while_a_controller_request_is_still_on_its_way():
    """An `unsettled` end (a controller request still due) is not judged for stray replicas."""
    tb, _ = _stray_trace(request_due=True)
    assert tb.violations("stray_replica") == []


def test_stray_replica_waits_for_stop_replicas_queued_behind_a_delayed_leader_and_isr():
    """Found by a self-test search of the correct model: a control request (UpdateMetadata)
    delayed 5 s is due at the very end, and the StopReplicas the reassignment sent wait behind
    it on the in-order links. The harness marks the end `unsettled` and stray_replica does not judge it."""
    import os

    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario

    path = os.path.join(os.path.dirname(__file__), "stray_behind_delayed_leader_and_isr.toml")
    result = run_scenario(load_scenario(path), 1, keep_events=True)
    unsettled = [e for e in result["_events"] if e["kind"] == "unsettled"]
    assert unsettled and ["c1", "b2"] in unsettled[0]["links"]
    assert "stray_replica" not in result["violated"]


def test_stray_replica_waits_for_a_request_a_hold_rule_keeps_for_good():
    """Found by a self-test search of the correct model: a restarted b3 still hosts a replica a
    reassignment dropped while it was down, and the empty full LeaderAndIsr that would delete
    it is kept by a hold rule whose release kind is never sent to b3. The harness marks the end
    `unsettled` and stray_replica does not judge it."""
    import os

    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario

    path = os.path.join(os.path.dirname(__file__), "stray_full_leader_and_isr_held.toml")
    result = run_scenario(load_scenario(path), 22622, keep_events=True)
    unsettled = [e for e in result["_events"] if e["kind"] == "unsettled"]
    assert unsettled and ["c1", "b3"] in unsettled[0]["links"]
    assert "stray_replica" not in result["violated"]


@pytest.mark.parametrize("reach,slowed,note", [
    ([["b1", False, False], ["b2", True, False], ["b3", True, False]], False,
     "judged 2 live brokers (not b1: cut from the quorum leader or slowed)"),
    ([["b1", True, True], ["b2", True, False], ["b3", True, False]], False,
     "judged 2 live brokers (not b1: cut from the quorum leader or slowed)"),
    ([["b1", True, False], ["b2", True, False], ["b3", True, False]], True,
     "not judged: a delay or reorder rule was still in force at the end (KRaft)"),
])
def test_stray_replica_leaves_out_a_kraft_broker_that_cannot_learn_the_metadata_log(
        reach, slowed, note):
    """KRaft: b1, restarted, cannot fetch the metadata log, so it never learns of its replica
    of t-0; it is not judged (a search of the correct model found it judged and failed)."""
    tb = TraceBuilder(brokers=3)
    tb.controller()
    tb.partition_state("t-0", 2, 0, [1, 2, 3])
    tb.log_created("b2", "t-0")
    tb.log_created("b3", "t-0")
    tb.at(100).add("harness", "metadata_reach", leader="c1", epoch=1, brokers=reach,
                   slowed=slowed)
    tb.end()
    from invariants.registry import check_events
    notes: dict = {}
    assert check_events(tb.header, tb.events, ["stray_replica"], notes=notes)[0] == []
    assert notes["stray_replica"] == note
    # the same trace judges b1, and fails it, when it reaches the leader
    tb2 = TraceBuilder(brokers=3)
    tb2.controller()
    state = tb2.partition_state("t-0", 2, 0, [1, 2, 3])
    tb2.log_created("b2", "t-0")
    tb2.log_created("b3", "t-0")
    tb2.at(100).add("harness", "metadata_reach", leader="c1", epoch=1,
                    brokers=[[b, True, False] for b in ("b1", "b2", "b3")], slowed=False)
    end = tb2.end()
    assert tb2.violations("stray_replica") == [("stray_replica", 100, (state, end))]


@pytest.mark.parametrize("kraft,judged", [(True, False), (False, True)])
def test_stray_replica_does_not_judge_a_kraft_run_with_a_link_cut_at_the_end(kraft, judged):
    """Found by a self-test search of the correct model: a voter cut from the others to the
    end keeps standing for election, a restarted broker learns its rising epoch, and the
    leader refuses that broker's Fetches, so it never hears that its replica was moved. A
    KRaft run with a link still cut at the end is not judged; a ZooKeeper-mode one is."""
    tb, s = _stray_trace()
    tb.events.pop()  # the end, added again after the harness's own events
    tb.add("harness", "unhealed", cut_links=[["c1", "c2"]], rules=[])
    if kraft:
        tb.add("harness", "metadata_reach", leader="c3", epoch=3,
               brokers=[[b, True, False] for b in ("b1", "b2", "b3")], slowed=False)
    end = tb.end()
    expected = [("stray_replica", 100, (s["b3"], s["state"], end))] if judged else []
    assert tb.violations("stray_replica") == expected
