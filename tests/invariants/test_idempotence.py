"""duplicate_append, out_of_order_append, spurious_out_of_order_sequence,
unreported_data_loss and idempotence_mode_violated on hand-built traces."""

from __future__ import annotations

import pytest

from tests.invariants.tracebuilder import TraceBuilder, batch

PID = 1001
OUT_OF_ORDER_SEQUENCE = 45


def _leader_b1(tb: TraceBuilder, leader: int = 1) -> None:
    tb.controller()
    tb.partition_state("t-0", leader, 0, [1, 2, 3])
    tb.log_created("b1", "t-0")
    tb.log_created("b2", "t-0")


# -- duplicate_append ----------------------------------------------------------------------------

def test_duplicate_append_holds_for_distinct_batches_and_non_idempotent_duplicates():
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID), batch("t-0", 4, "p1#1", pid=PID))
    # a non-idempotent producer's retry is written twice: counted, not a violation
    tb.at(20).append("b1", "p2", batch("t-0", 8, "p2#0"))
    tb.at(30).append("b1", "p2", batch("t-0", 12, "p2#0"))
    # a duplicate on a replica that is not the final leader is not judged
    tb.replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"), ("t-0", 4, 4, 0, "p1#0"))
    tb.at(100).end()
    violations, metrics = tb.check("duplicate_append")
    assert violations == []
    assert metrics["duplicates_non_idempotent"] == 1


def test_duplicate_append_violated_by_an_idempotent_batch_written_twice():
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID, base_seq=0))
    tb.at(20).append("b1", "p1", batch("t-0", 4, "p1#0", pid=PID, base_seq=0))
    end = tb.at(100).end()
    assert tb.violations("duplicate_append") == [("duplicate_append", 100, (end,))]


# -- out_of_order_append -------------------------------------------------------------------------

def test_out_of_order_append_holds_for_ascending_sequences_resets_and_epoch_bumps():
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID, base_seq=0),
                     batch("t-0", 4, "p1#1", pid=PID, base_seq=4))
    # UNKNOWN_PRODUCER_ID after retention: the producer restarts the partition at sequence 0
    tb.at(20).append("b1", "p1", batch("t-0", 8, "p1#2", pid=PID, base_seq=0))
    # a new producer epoch starts its own sequence space
    tb.at(30).append("b1", "p1", batch("t-0", 12, "p1#3", pid=PID, producer_epoch=1, base_seq=0))
    # non-idempotent batches have no sequence
    tb.append("b1", "p2", batch("t-0", 16, "p2#0"))
    tb.at(100).end()
    assert tb.violations("out_of_order_append") == []


def test_out_of_order_append_violated_when_log_order_is_not_sequence_order():
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#2", pid=PID, base_seq=8))
    tb.at(20).append("b1", "p1", batch("t-0", 4, "p1#1", pid=PID, base_seq=4))
    end = tb.at(100).end()
    assert tb.violations("out_of_order_append") == [("out_of_order_append", 100, (end,))]


# -- spurious_out_of_order_sequence ------------------------------------------------------------

def _acked_then_leader_change(keep_on_new_leader: bool):
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID), batch("t-0", 4, "p1#1", pid=PID))
    tb.replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"))
    if keep_on_new_leader:
        tb.replicate("b2", 1, ("t-0", 4, 4, 0, "p1#1"))
    tb.at(20).ack("p1", "p1#0", "t-0", 0)
    tb.ack("p1", "p1#1", "t-0", 4)
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    return tb


def test_spurious_out_of_order_sequence_holds_when_an_acked_batch_is_really_lost():
    tb = _acked_then_leader_change(keep_on_new_leader=False)
    tb.at(40).produce_failed("p1", "t-0", OUT_OF_ORDER_SEQUENCE, bid="p1#2")
    # other errors are not judged
    tb.produce_failed("p1", "t-0", -1, bid="p1#3")
    assert tb.violations("spurious_out_of_order_sequence") == []


def test_spurious_out_of_order_sequence_violated_when_every_acked_batch_is_intact():
    tb = _acked_then_leader_change(keep_on_new_leader=True)
    bad = tb.at(40).produce_failed("p1", "t-0", OUT_OF_ORDER_SEQUENCE, bid="p1#2")
    assert tb.violations("spurious_out_of_order_sequence") == [
        ("spurious_out_of_order_sequence", 40, (bad,))]


def test_spurious_out_of_order_sequence_judges_only_batches_sent_in_sequence():
    """An OutOfOrderSequence behind an earlier failed batch reports that failure (the client
    surfaces it when the retries run out); one on the expected next batch is judged."""
    tb = _acked_then_leader_change(keep_on_new_leader=True)
    tb.at(40).add("p1", "produce_failed", bid="p1#3", tp="t-0", error=OUT_OF_ORDER_SEQUENCE,
                  error_name="OUT_OF_ORDER_SEQUENCE_NUMBER", in_sequence=False)
    bad = tb.add("p1", "produce_failed", bid="p1#2", tp="t-0", error=OUT_OF_ORDER_SEQUENCE,
                 error_name="OUT_OF_ORDER_SEQUENCE_NUMBER", in_sequence=True)
    assert tb.violations("spurious_out_of_order_sequence") == [
        ("spurious_out_of_order_sequence", 40, (bad,))]


def test_spurious_out_of_order_sequence_violated_when_the_batch_fell_to_retention():
    """Retention is not data loss, so OutOfOrderSequence after it is spurious (KIP-360)."""
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID), batch("t-0", 4, "p1#1", pid=PID))
    tb.at(20).ack("p1", "p1#0", "t-0", 0)
    tb.at(30).log_start("b1", "t-0", 4)
    bad = tb.at(40).produce_failed("p1", "t-0", OUT_OF_ORDER_SEQUENCE, bid="p1#2")
    assert tb.violations("spurious_out_of_order_sequence") == [
        ("spurious_out_of_order_sequence", 40, (bad,))]


# -- unreported_data_loss -------------------------------------------------------------------------

def _lost_ack(pid: int | None = PID, went_on: bool = True):
    """p1#1 (offsets 4-7) was acknowledged, then b2, which lacks it, became the leader; with
    `went_on`, p1 then wrote p1#2 there (offsets 4-7) and had it acknowledged."""
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=pid), batch("t-0", 4, "p1#1", pid=pid))
    tb.replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"))
    tb.at(20).ack("p1", "p1#0", "t-0", 0, acks=1)
    lost = tb.ack("p1", "p1#1", "t-0", 4, acks=1)
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    if went_on:
        tb.at(35).append("b2", "p1", batch("t-0", 4, "p1#2", leader_epoch=1, pid=pid))
        tb.ack("p1", "p1#2", "t-0", 4, acks=1)
    return tb, lost


def test_unreported_data_loss_holds_when_the_loss_is_reported_or_not_idempotent():
    tb, _ = _lost_ack()
    tb.at(40).produce_failed("p1", "t-0", OUT_OF_ORDER_SEQUENCE, bid="p1#2")
    tb.at(100).end()
    assert tb.violations("unreported_data_loss") == []

    tb, _ = _lost_ack(pid=None)  # acks=1 without idempotence may lose silently: a metric
    tb.at(100).end()
    violations, metrics = tb.check("unreported_data_loss")
    assert violations == []
    assert metrics["acks1_lost"] == 1


def test_unreported_data_loss_violated_by_a_silent_idempotent_loss():
    tb, lost = _lost_ack()
    tb.at(100).end()
    assert tb.violations("unreported_data_loss") == [("unreported_data_loss", 100, (lost,))]


def test_unreported_data_loss_waits_for_the_producer_to_write_on():
    """A run that ends before the producer wrote to the partition again gave it no chance to
    meet the loss: nothing is judged (a self-test finding: the explorer ended runs there)."""
    tb, _lost = _lost_ack(went_on=False)
    tb.at(100).end()
    assert tb.violations("unreported_data_loss") == []


def _lost_ack_then_restart(restart: bool):
    """p1#1 is lost as in `_lost_ack`; with `restart` the producer's process restarted before
    it wrote p1#2 there, under the new id InitProducerId gave the new session."""
    tb, lost = _lost_ack(went_on=False)
    if restart:
        tb.at(31).add("p1", "crash")
        tb.at(32).add("p1", "restart")
    tb.at(35).append("b2", "p1", batch("t-0", 4, "p1#2", leader_epoch=1, pid=PID + 1))
    tb.ack("p1", "p1#2", "t-0", 4, acks=1)
    tb.at(100).end()
    return tb, lost


def test_unreported_data_loss_holds_a_producer_to_its_own_session_only():
    """A restarted producer process is a new KafkaProducer with a new producer id: it never
    promised to report what the old session lost ("idempotence for messages sent within a
    single session", KafkaProducer javadoc at 3.7.0), while the same session writing on under
    a new id is still judged."""
    tb, _lost = _lost_ack_then_restart(restart=True)
    assert tb.violations("unreported_data_loss") == []
    tb, lost = _lost_ack_then_restart(restart=False)
    assert tb.violations("unreported_data_loss") == [("unreported_data_loss", 100, (lost,))]


def test_an_unrelated_failure_does_not_report_a_loss():
    tb, lost = _lost_ack()
    tb.at(40).produce_failed("p1", "t-0", -1, bid="p1#2")  # a delivery timeout of another batch
    tb.at(100).end()
    assert tb.violations("unreported_data_loss") == [("unreported_data_loss", 100, (lost,))]


@pytest.mark.parametrize("protocol, judged", [
    ({"client_retries_out_of_order": False, "unknown_producer": "unknown_producer_id"}, True),
    ({"client_retries_out_of_order": False, "unknown_producer": "out_of_order"}, True),
    # a KIP-360 client retries a pre-2.5 broker's UNKNOWN_PRODUCER_ID whatever the log start
    # offset (`canRetry` at 2.5.0): the loss the broker reported goes unreported
    ({"client_retries_out_of_order": True, "unknown_producer": "unknown_producer_id"}, True),
    # a 2.5+ broker takes an unknown producer's next sequence as a fresh start: no error to give
    ({"client_retries_out_of_order": False, "unknown_producer": "accept"}, False),
    ({"client_retries_out_of_order": True, "unknown_producer": "accept"}, False),
])
def test_unreported_data_loss_is_judged_where_the_broker_signals_a_loss(protocol, judged):
    tb, lost = _lost_ack()
    tb.at(100).end()
    tb.header["options"]["protocol"] = protocol
    assert [v[2] for v in tb.violations("unreported_data_loss")] == ([(lost,)] if judged else [])


SIGNALS = {"unknown_producer": "unknown_producer_id"}
ACCEPTS = {"unknown_producer": "accept"}


@pytest.mark.parametrize("run, b2, judged", [
    (ACCEPTS, SIGNALS, True),  # the run's profile accepts, but b2, the new leader, signals
    (SIGNALS, ACCEPTS, False),  # b2 alone accepts an unknown producer: it had nothing to say
])
def test_unreported_data_loss_judges_each_broker_by_its_own_profile(run, b2, judged):
    """Per-node versions: the header's `nodes` gives b2 its own switches."""
    tb, lost = _lost_ack()
    tb.at(100).end()
    tb.header["options"]["protocol"] = {**run, "nodes": {"b2": {"profile": "x", **b2}}}
    assert [v[2] for v in tb.violations("unreported_data_loss")] == ([(lost,)] if judged else [])


def test_unreported_data_loss_follows_an_upgrade_event():
    """b2 is upgraded to a profile that accepts unknown producers before it appends p1#2."""
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.header["options"]["protocol"] = dict(SIGNALS)
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID), batch("t-0", 4, "p1#1", pid=PID))
    tb.replicate("b2", 1, ("t-0", 0, 4, 0, "p1#0"))
    tb.at(20).ack("p1", "p1#0", "t-0", 0, acks=1)
    tb.ack("p1", "p1#1", "t-0", 4, acks=1)
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.add("b2", "upgrade", profile="2.5", protocol=dict(ACCEPTS))
    tb.at(35).append("b2", "p1", batch("t-0", 4, "p1#2", leader_epoch=1, pid=PID))
    tb.ack("p1", "p1#2", "t-0", 4, acks=1)
    tb.at(100).end()
    assert tb.violations("unreported_data_loss") == []


def test_unreported_data_loss_violated_when_the_only_error_predates_the_loss():
    tb = TraceBuilder()
    _leader_b1(tb)
    tb.at(5).produce_failed("p1", "t-0", -1, bid="p1#x")  # DELIVERY_TIMEOUT of an older batch
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID))
    tb.at(20).ack("p1", "p1#0", "t-0", 0, acks=1)
    tb.at(30).partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:broker_failure")
    tb.at(35).append("b2", "p1", batch("t-0", 0, "p1#1", leader_epoch=1, pid=PID))
    tb.ack("p1", "p1#1", "t-0", 0, acks=1)
    tb.at(100).end()
    assert [v[0] for v in tb.violations("unreported_data_loss")] == ["unreported_data_loss"]


# -- idempotence_mode_violated --------------------------------------------------------------------

def test_idempotence_mode_violated_holds_when_each_mode_behaves():
    tb = TraceBuilder()
    tb.client_config("p1", "required")
    tb.client_config("p2", "requested")
    tb.client_config("p3", "off")
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0", pid=PID))
    # required refuses an old-format topic with a clear error: that is its contract
    tb.add("p1", "produce_failed", bid=None, tp="old-0", error=-2,
           error_name="IDEMPOTENCE_UNSUPPORTED_FORMAT", mode="required", message_format=1)
    # requested writes to an old-format topic without idempotence
    tb.append("b1", "p2", batch("old-0", 0, "p2#0"))
    tb.append("b1", "p3", batch("t-0", 4, "p3#0"))
    assert tb.violations("idempotence_mode_violated") == []


def test_idempotence_mode_violated_by_a_required_producer_writing_without_a_pid():
    tb = TraceBuilder()
    tb.client_config("p1", "required")
    bad = tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0"))
    assert tb.violations("idempotence_mode_violated") == [("idempotence_mode_violated", 10, (bad,))]


def test_idempotence_mode_violated_by_a_requested_producer_failing_on_the_format():
    tb = TraceBuilder()
    tb.client_config("p2", "requested")
    bad = tb.at(10).add("p2", "produce_failed", bid=None, tp="old-0", error=-2,
                        error_name="IDEMPOTENCE_UNSUPPORTED_FORMAT", mode="requested",
                        message_format=1)
    assert tb.violations("idempotence_mode_violated") == [("idempotence_mode_violated", 10, (bad,))]
