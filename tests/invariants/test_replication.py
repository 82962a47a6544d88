"""acked_write_lost, log_divergence, high_watermark_monotonic on hand-built traces."""

from __future__ import annotations

from sim.kafka import vocab
from tests.invariants.tracebuilder import TraceBuilder, batch

# -- acked_write_lost ------------------------------------------------------------------------


def _two_acked_batches(acks="all"):
    """b1 leads t-0 and holds p1#0 (offsets 0-3) and p1#1 (4-7), both acknowledged;
    b2 replicated only p1#0."""
    tb = TraceBuilder()
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.log_created("b1", "t-0")
    tb.log_created("b2", "t-0")
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0"), batch("t-0", 4, "p1#1"))
    tb.replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"))
    acked = [tb.at(20).ack("p1", "p1#0", "t-0", 0, acks=acks),
             tb.ack("p1", "p1#1", "t-0", 4, acks=acks)]
    return tb, acked


def test_acked_write_lost_holds_when_acked_batches_survive_or_fell_to_retention():
    tb, _ = _two_acked_batches()
    # retention moves the log start past p1#0: removed, not lost
    tb.at(30).log_start("b1", "t-0", 4)
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == []


def test_an_ack_without_offset_of_a_batch_retention_removed_is_not_a_loss():
    """A retry answered DUPLICATE_SEQUENCE_NUMBER is acked without an offset; the batch sits
    where the leader appended it, and retention removing it from there loses nothing."""
    tb = TraceBuilder()
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.log_created("b1", "t-0")
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0"))
    tb.at(20).log_start("b1", "t-0", 4)
    tb.at(30).ack("p1", "p1#0", "t-0", -1)
    never = tb.ack("p1", "p1#9", "t-0", -1)  # acked without offset, never appended anywhere
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (never,))]


def test_acked_write_lost_holds_for_acks_1_losses_which_are_a_metric():
    tb, _ = _two_acked_batches(acks=1)
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(100).end()
    violations, metrics = tb.check("acked_write_lost")
    assert violations == []
    assert metrics["acks1_lost"] == 1


def test_acked_write_lost_violated_when_the_new_leader_lacks_an_acked_batch():
    tb, acked = _two_acked_batches()
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (acked[1],))]


def test_acked_write_lost_violated_by_truncation_of_the_leader_log():
    tb, acked = _two_acked_batches()
    tb.at(30).truncate("b1", "t-0", 0)
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [
        ("acked_write_lost", 100, (acked[0],)), ("acked_write_lost", 100, (acked[1],))]


def test_acked_write_lost_judges_a_down_leader_by_the_clean_election_to_come():
    """The leader b1 lost its log and is down at the end, its failure not yet acted on: the
    next clean election picks b2, the first live ISR member, so only what b2 lacks is lost;
    with b2 and b3 down too, b1 leads again when back, and its own log is judged."""
    for others_down, lost in ((False, [1]), (True, [0, 1])):
        tb, acked = _two_acked_batches()
        tb.at(30).truncate("b1", "t-0", 0)
        tb.add("b1", "crash")
        if others_down:
            tb.add("b2", "crash")
            tb.add("b3", "crash")
        tb.at(100).end()
        assert tb.violations("acked_write_lost") == [
            ("acked_write_lost", 100, (acked[i],)) for i in lost], others_down


def test_acked_write_lost_judges_a_restarted_leader_by_the_clean_election_to_come():
    """The leader b1 lost its log, crashed and restarted, and the controller has written no
    state since (a KRaft broker back within its session, not yet fenced): the election its
    fencing brings picks b2, so only what b2 lacks is lost. Once a state is written after the
    restart (the failure acted on, b1 leading again), b1's own log is judged."""
    for acted_on, lost in ((False, [1]), (True, [0, 1])):
        tb, acked = _two_acked_batches()
        tb.at(30).truncate("b1", "t-0", 0)
        tb.add("b1", "crash")
        tb.add("b1", "restart")
        if acted_on:
            tb.at(40).partition_state("t-0", 1, 1, [1, 2, 3])
        tb.at(100).end()
        assert tb.violations("acked_write_lost") == [
            ("acked_write_lost", 100, (acked[i],)) for i in lost], acted_on


def _power_cut(tb: TraceBuilder, node: str, to_offset: int) -> int:
    return tb.add(node, "truncate", tp="t-0", topic_id=1, to_offset=to_offset,
                  reason="power_loss")


def test_a_power_loss_excuses_a_lost_batch_only_when_every_replica_lost_power():
    """b1 and b2 hold t-0; both lose power, b1 its p1#1, and b1 leads again without it: no
    replica kept its whole log, so the loss is the configuration's (a metric)."""
    tb, _ = _two_acked_batches()
    _power_cut(tb.at(30), "b1", 4)
    _power_cut(tb, "b2", 4)
    tb.at(40).partition_state("t-0", 1, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(100).end()
    violations, metrics = tb.check("acked_write_lost")
    assert violations == [] and metrics["acked_lost_to_power_loss"] == 1


def test_a_power_loss_of_one_replica_does_not_excuse_electing_it():
    """Only b1 loses power (and p1#1 with it); b2 never did, so a controller that elects b1
    without p1#1 lost the batch by its election (KIP-966's case)."""
    tb, acked = _two_acked_batches()
    tb.replicate("b2", 1, ("t-0", 4, 4, 0, "p1#1"))
    _power_cut(tb.at(30), "b1", 4)
    tb.at(40).partition_state("t-0", 1, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (acked[1],))]
    assert tb.check("acked_write_lost")[1]["acked_lost_to_power_loss"] == 1


def test_a_power_loss_excuses_a_batch_no_other_replica_held():
    """Only b1 held p1#1 (b2 was down or out of the ISR when it was acknowledged) and b1's
    power loss took it: no election could have kept it, so the loss is the configuration's,
    though b2 never lost power (explore found this on kip101-power-loss-divergence-fixed)."""
    tb, _ = _two_acked_batches()
    _power_cut(tb.at(30), "b1", 4)
    tb.at(40).partition_state("t-0", 1, 1, [1], reason="elect:broker_failure")
    tb.at(100).end()
    violations, metrics = tb.check("acked_write_lost")
    assert violations == [] and metrics["acked_lost_to_power_loss"] == 1


def test_a_power_loss_excuses_a_batch_every_holder_lost_to_power():
    """b2 held p1#1 when b1's power loss took it, and lost it to its own power loss later."""
    tb, _ = _two_acked_batches()
    tb.replicate("b2", 1, ("t-0", 4, 4, 0, "p1#1"))
    _power_cut(tb.at(30), "b1", 4)
    _power_cut(tb.at(35), "b2", 4)
    tb.at(40).partition_state("t-0", 1, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == []


def test_acked_write_lost_holds_when_the_topic_was_deleted_and_recreated():
    tb, _ = _two_acked_batches()
    tb.at(30).add("c1", "topic_deleted", topic="t", topic_id=1)
    tb.log_deleted("b1", "t-0")
    tb.log_deleted("b2", "t-0")
    tb.at(40).partition_state("t-0", 1, 0, [1, 2, 3], topic_id=2, reason="create_topic")
    tb.log_created("b1", "t-0", topic_id=2)
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == []


# -- log_divergence ------------------------------------------------------------------------------

def _leader_and_follower():
    tb = TraceBuilder()
    tb.log_created("b1", "t-0")
    tb.log_created("b2", "t-0")
    tb.append("b1", "p1", batch("t-0", 0, "p1#0"), batch("t-0", 4, "p1#1"))
    return tb


def test_log_divergence_holds_for_divergent_records_above_the_high_watermark():
    tb = _leader_and_follower()
    tb.at(10).replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"), ("t-0", 4, 4, 0, "zz#9"))
    tb.hw("b1", "leader", "t-0", 4)
    tb.hw("b2", "follower", "t-0", 4)  # zz#9 at offset 4 is above both HWs
    # the follower truncates the divergent tail and catches up: HWs agree on every batch
    tb.at(20).truncate("b2", "t-0", 4)
    tb.replicate("b2", 1, ("t-0", 4, 4, 0, "p1#1"))
    tb.hw("b1", "leader", "t-0", 8)
    tb.hw("b2", "follower", "t-0", 8)
    assert tb.violations("log_divergence") == []


def test_log_divergence_violated_by_different_batches_below_both_high_watermarks():
    tb = _leader_and_follower()
    tb.at(10).replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"), ("t-0", 4, 4, 0, "zz#9"))
    first = tb.hw("b1", "leader", "t-0", 8)
    second = tb.at(20).hw("b2", "follower", "t-0", 8)
    assert tb.violations("log_divergence") == [("log_divergence", 20, (first, second))]


# -- high_watermark_monotonic --------------------------------------------------------------------

def test_high_watermark_monotonic_holds_when_a_new_epoch_starts_lower():
    tb = TraceBuilder()
    tb.hw("b1", "leader", "t-0", 8, leader_epoch=0)
    tb.at(10).hw("b1", "follower", "t-0", 4, leader_epoch=1)  # followers are not judged
    tb.hw("b2", "leader", "t-0", 4, leader_epoch=1)  # another leader, another epoch
    tb.at(20).hw("b1", "leader", "t-0", 6, leader_epoch=2)  # b1 leads again, from lower
    tb.hw("b1", "leader", "t-0", 6, leader_epoch=2)
    tb.hw("b1", "leader", "t-0", 0, leader_epoch=0, topic_id=2)  # a recreated topic
    assert tb.violations("high_watermark_monotonic") == []


def test_high_watermark_monotonic_holds_when_a_restarted_broker_leads_the_same_epoch_again():
    """A power loss and a restart that no controller saw: b1 is handed epoch 1 again and
    leads on from its checkpointed HW (found by explore)."""
    tb = TraceBuilder()
    tb.hw("b1", "leader", "t-0", 8, leader_epoch=1)
    tb.at(10).add("b1", "crash")
    tb.at(20).add("b1", "restart")
    tb.hw("b1", "recovered", "t-0", 3, leader_epoch=1)
    tb.at(30).hw("b1", "leader", "t-0", 4, leader_epoch=1)
    assert tb.violations("high_watermark_monotonic") == []


def test_high_watermark_monotonic_violated_by_a_leader_lowering_its_hw():
    tb = TraceBuilder()
    tb.hw("b1", "leader", "t-0", 4, leader_epoch=1)
    high = tb.at(10).hw("b1", "leader", "t-0", 8, leader_epoch=1)
    low = tb.at(20).hw("b1", "leader", "t-0", 6, leader_epoch=1)
    assert tb.violations("high_watermark_monotonic") == [
        ("high_watermark_monotonic", 20, (high, low))]


# -- an admin's unclean election (KIP-460) -----------------------------------------------------

def _b2_elected(tb: TraceBuilder, reason: str, isr_before=(1,)) -> None:
    """The ISR shrinks to `isr_before`, b1 fails, and b2 is elected with `reason`."""
    tb.at(25).partition_state("t-0", 1, 1, [1, 2, 3], isr=list(isr_before), reason="isr_shrink")
    tb.at(30).partition_state("t-0", 2, 2, [1, 2, 3], isr=[2], reason=reason)


def test_an_admin_unclean_election_excuses_the_batches_acknowledged_before_it():
    tb, _ = _two_acked_batches()
    _b2_elected(tb, vocab.ADMIN_UNCLEAN_ELECTION)
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == []


def test_an_unclean_election_no_admin_asked_for_is_not_excused():
    """The planted bug's shape: the same loss by an election the controller made itself."""
    tb, acked = _two_acked_batches()
    _b2_elected(tb, "elect:broker_failure")
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (acked[1],))]


def test_an_admin_unclean_request_that_elected_an_isr_member_excuses_nothing():
    tb, acked = _two_acked_batches()
    _b2_elected(tb, vocab.ADMIN_UNCLEAN_ELECTION, isr_before=(1, 2))
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (acked[1],))]


def test_a_batch_acknowledged_after_the_admin_unclean_election_is_judged():
    tb, _ = _two_acked_batches()
    _b2_elected(tb, vocab.ADMIN_UNCLEAN_ELECTION)
    tb.at(40).append("b2", "p1", batch("t-0", 4, "p1#2"))
    late = tb.at(50).ack("p1", "p1#3", "t-0", 8)  # acknowledged, then lost by the leader
    tb.at(100).end()
    assert tb.violations("acked_write_lost") == [("acked_write_lost", 100, (late,))]


def _diverged_after_election(reason: str) -> tuple[TraceBuilder, int]:
    """b1 commits p1#0 and p1#1 (HW 8); b2 holds only p1#0, is elected with `reason`, appends
    zz#9 at offset 4 and moves its HW past it."""
    tb = _leader_and_follower()
    tb.at(10).replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"))
    first = tb.hw("b1", "leader", "t-0", 8)
    tb.partition_state("t-0", 1, 0, [1, 2], isr=[1], reason="isr_shrink")
    tb.at(30).partition_state("t-0", 2, 1, [1, 2], isr=[2], reason=reason)
    tb.append("b2", "p2", batch("t-0", 4, "zz#9", leader_epoch=1))
    return tb, first


def test_log_divergence_gives_up_the_history_an_admin_unclean_election_gave_up():
    tb, _ = _diverged_after_election(vocab.ADMIN_UNCLEAN_ELECTION)
    tb.at(40).hw("b2", "leader", "t-0", 8)
    assert tb.violations("log_divergence") == []


def test_log_divergence_still_catches_the_fork_of_an_election_no_admin_asked_for():
    tb, first = _diverged_after_election("elect:broker_failure")
    second = tb.at(40).hw("b2", "leader", "t-0", 8)
    assert tb.violations("log_divergence") == [("log_divergence", 40, (first, second))]
