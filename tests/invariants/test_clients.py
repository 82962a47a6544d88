"""client_leader_epoch_regression and leader_hint_misapplied on hand-built traces."""

from __future__ import annotations

from tests.invariants.tracebuilder import TraceBuilder, batch

# -- client_leader_epoch_regression ----------------------------------------------------------


def test_client_leader_epoch_regression_holds_for_rising_epochs_and_recreated_topics():
    tb = TraceBuilder()
    tb.client_epoch("p1", "t-0", 1, 0)
    tb.at(10).client_epoch("p1", "t-0", 2, 2, source="hint", previous_epoch=0)
    tb.client_epoch("p2", "t-0", 1, 0)  # another client keeps its own view
    tb.client_epoch("p1", "u-0", 3, 0)  # another partition
    # the topic was deleted and recreated: a new topic id restarts at a lower epoch
    tb.at(20).client_epoch("p1", "t-0", 3, 0, topic_id=2)
    assert tb.violations("client_leader_epoch_regression") == []


def test_client_leader_epoch_regression_violated_by_going_back_on_one_topic_id():
    tb = TraceBuilder()
    tb.client_epoch("p1", "t-0", 1, 0)
    newer = tb.at(10).client_epoch("p1", "t-0", 1, 2)
    older = tb.at(20).client_epoch("p1", "t-0", 2, 1)
    assert tb.violations("client_leader_epoch_regression") == [
        ("client_leader_epoch_regression", 20, (newer, older))]


def test_client_leader_epoch_regression_forgets_a_crashed_clients_view():
    tb = TraceBuilder()
    tb.client_epoch("p1", "t-0", 2, 1)
    tb.client_epoch("p2", "t-0", 2, 1)
    tb.at(10).add("p1", "crash")
    tb.at(20).add("p1", "restart")
    tb.client_epoch("p1", "t-0", 1, 0)  # a fresh cache may learn an old epoch from a lagging broker
    back = tb.client_epoch("p2", "t-0", 1, 0)  # p2 did not crash: still a regression
    assert [v[2][-1] for v in tb.violations("client_leader_epoch_regression")] == [back]


# -- leader_hint_misapplied ----------------------------------------------------------------------

def test_leader_hint_misapplied_holds_for_newer_hints_naming_known_brokers():
    tb = TraceBuilder(brokers=3)
    tb.client_epoch("p1", "t-0", 1, 1)
    tb.at(10).client_epoch("p1", "t-0", 3, 2, source="hint", previous_epoch=1)
    # metadata responses are not hints: they are not judged here, whatever their epoch
    tb.at(20).client_epoch("p1", "t-0", 1, 2, source="metadata")
    assert tb.violations("leader_hint_misapplied") == []


def test_leader_hint_misapplied_violated_by_a_hint_not_newer_than_the_known_epoch():
    tb = TraceBuilder(brokers=3)
    tb.client_epoch("p1", "t-0", 1, 2)
    bad = tb.at(10).client_epoch("p1", "t-0", 2, 2, source="hint", previous_epoch=2)
    assert tb.violations("leader_hint_misapplied") == [("leader_hint_misapplied", 10, (bad,))]


def test_leader_hint_misapplied_violated_by_a_hint_naming_an_unknown_broker():
    tb = TraceBuilder(brokers=3)
    tb.client_epoch("p1", "t-0", 1, 1)
    bad = tb.at(10).client_epoch("p1", "t-0", 7, 2, source="hint", previous_epoch=1)
    assert tb.violations("leader_hint_misapplied") == [("leader_hint_misapplied", 10, (bad,))]


# -- consumer_skipped_record -----------------------------------------------------------------

def _unclean_move(tb: TraceBuilder) -> None:
    """k1 read p1#0 and p1#1 (offsets 0-7) from b1; b2, which never had them, is elected
    uncleanly in epoch 1 and writes p1#5 and p1#6 at the same offsets, committed."""
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2])
    tb.log_created("b1", "t-0")
    tb.log_created("b2", "t-0")
    tb.at(10).append("b1", "p1", batch("t-0", 0, "p1#0"), batch("t-0", 4, "p1#1"))
    tb.hw("b1", "leader", "t-0", 8)
    tb.consume("k1", "t-0", (0, "p1#0"), (4, "p1#1"))
    tb.at(20).partition_state("t-0", 2, 1, [1, 2], isr=[2], reason="elect_unclean")
    tb.append("b2", "p1", batch("t-0", 0, "p1#5", 1), batch("t-0", 4, "p1#6", 1))
    tb.hw("b2", "leader", "t-0", 8, leader_epoch=1)


def test_consumer_skipped_record_holds_when_a_validated_position_reads_the_new_log():
    tb = TraceBuilder()
    _unclean_move(tb)
    tb.at(30).validate_position("k1", "t-0", 8, 0, "truncate")  # KIP-320: back to offset 0
    tb.consume("k1", "t-0", (0, "p1#5"), (4, "p1#6"))
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == []


def test_consumer_skipped_record_holds_for_a_consumer_yet_to_validate():
    """Its position (8) is past the new log's batches, but it has read none of that log."""
    tb = TraceBuilder()
    _unclean_move(tb)
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == []


def test_consumer_skipped_record_violated_by_going_on_from_the_old_position():
    tb = TraceBuilder()
    _unclean_move(tb)
    tb.at(30).append("b2", "p1", batch("t-0", 8, "p1#7", 1))
    tb.hw("b2", "leader", "t-0", 12, leader_epoch=1)
    moved = tb.consume("k1", "t-0", (8, "p1#7"))  # no validation: on from offset 8
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == [("consumer_skipped_record", 40, (moved,))]


def _reset(tb: TraceBuilder, node: str, tp: str, position: int) -> int:
    return tb.add(node, "reset_position", tp=tp, broker=2, leader_epoch=1, timestamp=-2,
                  error=0, offset=position, offset_epoch=1, action="reset", position=position)


def _committed(batches: int) -> TraceBuilder:
    """b1 leads t-0 and has committed `batches` batches p1#0.. of 4 records each."""
    tb = TraceBuilder()
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2])
    tb.log_created("b1", "t-0")
    tb.at(10).append("b1", "p1", *(batch("t-0", 4 * i, f"p1#{i}") for i in range(batches)))
    tb.hw("b1", "leader", "t-0", 4 * batches)
    return tb


def test_consumer_skipped_record_holds_below_the_offset_a_reset_gave():
    """Found by the self-test on the correct model: k1 reset to offset 0, read nothing, was
    reset again to offset 8 (the log start its leader then gave) and read on from there; the
    final log, which an unclean election put back, holds batches below 8 it never had reason
    to read."""
    tb = _committed(3)
    _reset(tb, "k1", "t-0", 0)  # nothing read from there: the next reset starts a new run
    _reset(tb, "k1", "t-0", 8)
    tb.consume("k1", "t-0", (8, "p1#2"))
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == []


def test_consumer_skipped_record_violated_above_the_offset_a_reset_gave():
    """A reset at offset 0 excuses nothing: skipping p1#1 is still a skip."""
    tb = _committed(3)
    _reset(tb, "k1", "t-0", 0)
    tb.consume("k1", "t-0", (0, "p1#0"))
    skipped = tb.consume("k1", "t-0", (8, "p1#2"))
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == [("consumer_skipped_record", 40, (skipped,))]


def test_consumer_skipped_record_violated_by_a_skip_before_a_later_reset():
    """A run judged on its own: the skip of p1#1 in the first run stands though a later reset
    moves the consumer past it."""
    tb = _committed(4)
    _reset(tb, "k1", "t-0", 0)
    tb.consume("k1", "t-0", (0, "p1#0"))
    skipped = tb.consume("k1", "t-0", (8, "p1#2"))
    _reset(tb, "k1", "t-0", 12)
    tb.consume("k1", "t-0", (12, "p1#3"))
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == [("consumer_skipped_record", 40, (skipped,))]


def test_consumer_skipped_record_judges_a_latest_consumer_from_where_its_reset_put_it():
    """`auto_offset_reset = "latest"` (Kafka's default) starts past records the consumer
    never means to read: its first reset, to the HW, starts the run judged; a skip after it is
    still a skip."""
    tb = _committed(4)
    tb.header["options"]["consumers"] = [{"name": "k1", "auto_offset_reset": "latest"}]
    tb.add("k1", "reset_position", tp="t-0", broker=1, leader_epoch=0, timestamp=-1, error=0,
           offset=4, offset_epoch=0, action="reset", position=4)
    tb.consume("k1", "t-0", (4, "p1#1"))
    skipped = tb.consume("k1", "t-0", (12, "p1#3"))
    tb.at(40).end()
    assert tb.violations("consumer_skipped_record") == [("consumer_skipped_record", 40, (skipped,))]
