"""single_leader_per_epoch, leader_epoch_monotonic, stale_leader_append on hand-built traces."""

from __future__ import annotations

from tests.invariants.tracebuilder import TraceBuilder, batch

# -- single_leader_per_epoch -------------------------------------------------------------------

def test_single_leader_per_epoch_holds_across_moves_repeats_and_recreated_topics():
    tb = TraceBuilder()
    tb.replica_state("b1", "t-0", "leader", 1, 0)
    tb.replica_state("b2", "t-0", "follower", 1, 0)
    tb.at(10).replica_state("b2", "t-0", "leader", 2, 1)
    tb.replica_state("b1", "t-0", "follower", 2, 1)
    # the same broker re-announcing its own leadership is no second leader
    tb.at(20).replica_state("b2", "t-0", "leader", 2, 1)
    # a recreated topic (new topic id) starts again at epoch 0 with another leader
    tb.at(30).replica_state("b3", "t-0", "leader", 3, 0, topic_id=2)
    assert tb.violations("single_leader_per_epoch") == []


def test_single_leader_per_epoch_violated_by_two_leaders_at_one_epoch():
    tb = TraceBuilder()
    tb.replica_state("b1", "t-0", "leader", 1, 0)
    first = tb.at(10).replica_state("b1", "t-0", "leader", 1, 1)
    tb.replica_state("b2", "t-0", "follower", 1, 1)
    second = tb.at(20).replica_state("b2", "t-0", "leader", 2, 1)
    assert tb.violations("single_leader_per_epoch") == [
        ("single_leader_per_epoch", 20, (first, second))]


# -- leader_epoch_monotonic --------------------------------------------------------------------

def test_leader_epoch_monotonic_holds_when_epochs_rise_or_the_replica_is_reborn():
    tb = TraceBuilder()
    tb.log_created("b1", "t-0")
    tb.replica_state("b1", "t-0", "leader", 1, 0)
    tb.at(10).replica_state("b1", "t-0", "follower", 2, 2)
    tb.replica_state("b1", "t-0", "follower", 2, 2)  # equal is not lower
    # deleted and created again: the new replica may start at a lower epoch
    tb.at(20).log_deleted("b1", "t-0")
    tb.log_created("b1", "t-0")
    tb.replica_state("b1", "t-0", "follower", 3, 1)
    # another topic id under the same name is another partition
    tb.at(30).replica_state("b1", "t-0", "leader", 1, 0, topic_id=2)
    assert tb.violations("leader_epoch_monotonic") == []


def test_leader_epoch_monotonic_violated_when_a_broker_goes_back():
    tb = TraceBuilder()
    tb.log_created("b1", "t-0")
    tb.replica_state("b1", "t-0", "leader", 1, 0)
    newer = tb.at(10).replica_state("b1", "t-0", "follower", 2, 2)
    older = tb.at(20).replica_state("b1", "t-0", "leader", 1, 1)
    assert tb.violations("leader_epoch_monotonic") == [
        ("leader_epoch_monotonic", 20, (newer, older))]


# -- stale_leader_append -----------------------------------------------------------------------

def test_stale_leader_append_holds_when_the_sender_knew_no_newer_epoch():
    tb = TraceBuilder()
    tb.append("b1", "p1", batch("t-0", 0, "p1#0", leader_epoch=2, sender_epoch=2))
    # a sender that lags the leader is the normal case, not a stale leader
    tb.at(10).append("b1", "p1", batch("t-0", 4, "p1#1", leader_epoch=2, sender_epoch=1))
    assert tb.violations("stale_leader_append") == []


def test_stale_leader_append_violated_when_the_sender_knew_a_newer_epoch():
    tb = TraceBuilder()
    tb.append("b1", "p1", batch("t-0", 0, "p1#0", leader_epoch=0))
    bad = tb.at(10).append("b1", "p1", batch("t-0", 4, "p1#1", leader_epoch=0, sender_epoch=2),
                           acks=1)
    assert tb.violations("stale_leader_append") == [("stale_leader_append", 10, (bad,))]


def test_stale_leader_append_ignores_an_epoch_of_a_deleted_incarnation():
    """The producer knew epoch 3 of topic id 1; the topic was deleted and recreated (id 2), and
    its new leader appends at epoch 0: no stale leader (the model writes `sender_topic_id`
    only when it differs from the partition's topic id)."""
    tb = TraceBuilder()
    recreated = batch("t-0", 0, "p1#0", leader_epoch=0, sender_epoch=3)
    recreated.update(topic_id=2, sender_topic_id=1)
    tb.append("b1", "p1", recreated)
    assert tb.violations("stale_leader_append") == []
    same = batch("t-0", 4, "p1#1", leader_epoch=0, sender_epoch=3)
    same.update(topic_id=2)  # ... but an epoch of the same incarnation still counts
    bad = tb.at(10).append("b1", "p1", same)
    assert tb.violations("stale_leader_append") == [("stale_leader_append", 10, (bad,))]
