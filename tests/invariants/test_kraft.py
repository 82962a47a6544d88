"""metadata_log_safety and metadata_applied_in_order on hand-built traces."""

from __future__ import annotations

from tests.invariants.tracebuilder import TraceBuilder

REG = {"kind": "RegisterBrokerRecord", "broker": 1, "fenced": True}
LC2 = {"kind": "LeaderChange", "leader": "c2"}
LC3 = {"kind": "LeaderChange", "leader": "c3"}


def _leader(tb, node, epoch, end_offset, hw=0):
    return tb.add(node, "quorum_leader", epoch=epoch, end_offset=end_offset, high_watermark=hw)


def _commit(tb, node, epoch, hw, *records):
    return tb.add(node, "metadata_commit", epoch=epoch, high_watermark=hw,
                  records=[list(r) for r in records])


def _apply(tb, node, start, end, expected):
    return tb.add(node, "metadata_apply", from_offset=start, to_offset=end,
                  expected_offset=expected, records=["LeaderChange"] * (end - start))


# -- metadata_log_safety -------------------------------------------------------------------------

def test_metadata_log_safety_holds_across_a_failover_that_keeps_the_committed_records():
    tb = TraceBuilder()
    _leader(tb, "c2", 1, 0)
    _commit(tb, "c2", 1, 2, (0, 1, LC2), (1, 1, REG))
    # the next leader holds both and commits them again with its own first record
    _leader(tb.at(10), "c3", 2, 3)
    _commit(tb, "c3", 2, 4, (0, 1, LC2), (1, 1, REG), (3, 2, LC3))
    assert tb.violations("metadata_log_safety") == []


def test_metadata_log_safety_violated_by_two_leaders_in_one_epoch():
    tb = TraceBuilder()
    first = _leader(tb, "c2", 1, 0)
    second = _leader(tb.at(5), "c3", 1, 0)
    assert tb.violations("metadata_log_safety") == [("metadata_log_safety", 5, (first, second))]


def test_metadata_log_safety_violated_when_a_committed_record_changes():
    tb = TraceBuilder()
    _leader(tb, "c2", 1, 0)
    first = _commit(tb, "c2", 1, 2, (0, 1, LC2), (1, 1, REG))
    short = _leader(tb.at(10), "c3", 2, 1)
    changed = _commit(tb, "c3", 2, 2, (1, 2, LC3))
    assert tb.violations("metadata_log_safety") == [
        ("metadata_log_safety", 10, (first, short)),  # elected without a committed record
        ("metadata_log_safety", 10, (first, changed))]


# -- metadata_applied_in_order --------------------------------------------------------------------

def test_metadata_applied_in_order_holds_in_order_and_again_from_zero_after_a_restart():
    tb = TraceBuilder()
    _commit(tb, "c2", 1, 3, (0, 1, LC2), (1, 1, REG), (2, 1, REG))
    _apply(tb, "b1", 0, 1, 0)
    _apply(tb, "b1", 1, 3, 1)
    tb.add("b1", "crash")
    tb.add("b1", "restart")
    _apply(tb, "b1", 0, 3, 0)
    assert tb.violations("metadata_applied_in_order") == []


def test_metadata_applied_in_order_violated_by_a_gap():
    tb = TraceBuilder()
    _commit(tb, "c2", 1, 5, (0, 1, LC2))
    before = _apply(tb, "b1", 0, 2, 0)
    gap = _apply(tb.at(7), "b1", 3, 5, 2)
    assert tb.violations("metadata_applied_in_order") == [
        ("metadata_applied_in_order", 7, (before, gap))]


def test_metadata_applied_in_order_violated_by_an_uncommitted_record():
    tb = TraceBuilder()
    _commit(tb, "c2", 1, 1, (0, 1, LC2))
    early = _apply(tb.at(3), "b1", 0, 2, 0)
    assert tb.violations("metadata_applied_in_order") == [
        ("metadata_applied_in_order", 3, (early,))]


def test_the_metadata_lag_metrics_read_each_brokers_wait_from_commit_to_apply():
    from invariants.registry import check_events
    tb = TraceBuilder()
    _commit(tb.at(1000), "c2", 1, 2, (0, 1, LC2), (1, 1, REG))
    _apply(tb.at(3000), "b1", 0, 2, 0)
    _apply(tb.at(501000), "b2", 0, 1, 0)
    metrics = check_events(tb.header, tb.events, ["metadata_applied_in_order"])[1]
    assert metrics["metadata_high_watermark"] == 2
    assert metrics["metadata_lag"] == {"b1": {"applied_offset": 2, "p50_ms": 2.0, "max_ms": 2.0},
                                       "b2": {"applied_offset": 1, "p50_ms": 500.0,
                                              "max_ms": 500.0}}


def test_a_zookeeper_run_has_no_metadata_lag_metrics():
    from invariants.registry import check_events
    tb = TraceBuilder()
    tb.replica_state("b1", "t-0", "leader", 1, 0)
    assert "metadata_lag" not in check_events(tb.header, tb.events, ["single_leader_per_epoch"])[1]


# -- fenced_broker_ack ----------------------------------------------------------------------------

FENCE_B1 = {"kind": "BrokerRegistrationChangeRecord", "broker": 1, "broker_epoch": 1,
            "fenced": True}
UNFENCE_B1 = {**FENCE_B1, "fenced": False}


def _fenced_leader_acks(followers_hold: tuple, errs=(), unfenced: bool = False) -> tuple:
    """b1 led t-0 and still believes it does: the controller fenced it and moved the
    leadership to b2 (ISR [2, 3]); b1 appended an acks=all batch, the followers in
    `followers_hold` fetched it, and b1 answered the Produce. Returns (builder, witnesses)."""
    from tests.invariants.tracebuilder import batch
    tb = TraceBuilder()
    for node in ("b1", "b2", "b3"):
        tb.log_created(node, "t-0")
    fence = _commit(tb.at(10), "c2", 1, 5, (4, 1, FENCE_B1))
    moved = tb.partition_state("t-0", 2, 1, [1, 2, 3], isr=[2, 3])
    if unfenced:
        _commit(tb.at(15), "c2", 1, 6, (5, 1, UNFENCE_B1))
    append = tb.at(20).append("b1", "p1", batch("t-0", 0, "p1#1"))
    for node in followers_hold:
        tb.replicate(node, 1, ("t-0", 0, 4, 0, "p1#1"))
    answer = tb.at(30).add("b1", "send", mid=9, dst="p1", msg="ProduceResponse", corr=1,
                           errs=[list(e) for e in errs])
    return tb, (fence, moved, append, answer)


def test_fenced_broker_ack_holds_for_a_late_ack_the_new_isr_already_has():
    """The followers fetched the batch before they applied the new leadership: b1's answer,
    after the removal committed, acknowledges nothing the ISR lacks (Kafka does this)."""
    tb, _ = _fenced_leader_acks(("b2", "b3"))
    assert tb.violations("fenced_broker_ack") == []


def test_fenced_broker_ack_violated_by_an_ack_the_new_isr_lacks():
    tb, witnesses = _fenced_leader_acks(("b3",))
    assert tb.violations("fenced_broker_ack") == [("fenced_broker_ack", 30, witnesses)]
    assert "b2 of that ISR lack" in tb.check("fenced_broker_ack")[0][0].message


def test_fenced_broker_ack_judges_neither_an_error_nor_an_unfenced_broker():
    errored, _ = _fenced_leader_acks((), errs=(("t-0", 7),))
    assert errored.violations("fenced_broker_ack") == []
    unfenced, _ = _fenced_leader_acks((), unfenced=True)
    assert unfenced.violations("fenced_broker_ack") == []


def test_fenced_broker_ack_is_not_judged_with_unclean_election():
    tb, _ = _fenced_leader_acks(())
    tb.header["options"]["cluster"]["unclean_leader_election"] = True
    assert tb.violations("fenced_broker_ack") == []


def test_fenced_broker_ack_is_judged_where_the_controller_ignores_the_unclean_option():
    """Before 3.9 a KRaft controller never reads unclean.leader.election.enable
    (`kraft_unclean_election_config` off), so the option does not excuse a fenced ack."""
    tb, _ = _fenced_leader_acks(())
    tb.header["options"]["cluster"]["unclean_leader_election"] = True
    tb.header["options"].setdefault("protocol", {})["kraft_unclean_election_config"] = False
    assert tb.violations("fenced_broker_ack") != []


# -- broker_metadata_stalled ------------------------------------------------------------------------

# -- demoted_leader_append ---------------------------------------------------------------------

def _demoted(image_epoch: int, mode: str = "kraft", crash: bool = False) -> tuple:
    """b1 leads t-0 at epoch 0 and publishes a metadata image giving t-0 to b2 at
    `image_epoch`, then appends a batch at epoch 0 (after a crash and restart, if `crash`).
    Returns (builder, the image's seq, the append's seq)."""
    from tests.invariants.tracebuilder import batch
    tb = TraceBuilder()
    tb.header["options"]["cluster"]["mode"] = mode
    tb.add("b1", "metadata", controller_epoch=1, changes=[["t-0", 1, 0]], alive=[1, 2, 3])
    image = tb.at(10).add("b1", "metadata", controller_epoch=1,
                          changes=[["t-0", 2, image_epoch]], alive=[1, 2, 3])
    if crash:
        tb.at(15).add("b1", "crash")
    append = tb.at(20).append("b1", "p1", batch("t-0", 0, "p1#1"), acks=1)
    return tb, image, append


def test_demoted_leader_append_holds_while_the_image_has_the_same_epoch():
    assert _demoted(0)[0].violations("demoted_leader_append") == []


def test_demoted_leader_append_violated_by_an_append_below_the_images_epoch():
    tb, image, append = _demoted(1)
    assert tb.violations("demoted_leader_append") == [("demoted_leader_append", 20,
                                                       (image, append))]
    assert "its own metadata image has b2 leading at epoch 1" in \
        tb.check("demoted_leader_append")[0][0].message


def test_demoted_leader_append_forgets_a_crashed_brokers_image_and_judges_kraft_only():
    assert _demoted(1, crash=True)[0].violations("demoted_leader_append") == []
    assert _demoted(1, mode="zk")[0].violations("demoted_leader_append") == []


# -- isr_answer_before_commit ------------------------------------------------------------------

def _isr_answer(commit_first: bool, same_isr: bool = False) -> tuple:
    """c1 has committed t-0 with ISR [1, 2]; b1 asks for [1, 2, 3] (or [1, 2] if `same_isr`),
    and c1 answers NONE, after committing the new state if `commit_first`. Returns (builder,
    the request's seq, the answer's seq)."""
    tb = TraceBuilder()
    state = dict(tp="t-0", topic_id=1, leader=1, leader_epoch=0, replicas=[1, 2, 3],
                 reason="PartitionChangeRecord", controller_epoch=1)
    tb.add("c1", "partition_state", partition_epoch=1, isr=[1, 2], **state)
    isr = [1, 2] if same_isr else [1, 2, 3]
    request = tb.at(10).add("c1", "alter_partition", tp="t-0", leader_epoch=0,
                            partition_epoch=1, isr=isr, error=0, **{"from": 1})
    if commit_first:
        tb.at(30).add("c1", "partition_state", partition_epoch=2, isr=isr, **state)
    answer = tb.at(40).add("c1", "send", mid=7, dst="b1", msg="AlterPartitionResponse",
                           tp="t-0", error=0)
    return tb, request, answer


def test_isr_answer_before_commit_holds_when_the_state_commits_first_or_is_unchanged():
    assert _isr_answer(commit_first=True)[0].violations("isr_answer_before_commit") == []
    assert _isr_answer(False, same_isr=True)[0].violations("isr_answer_before_commit") == []


def test_isr_answer_before_commit_violated_by_an_answer_ahead_of_its_commit():
    tb, request, answer = _isr_answer(commit_first=False)
    assert tb.violations("isr_answer_before_commit") == [("isr_answer_before_commit", 40,
                                                          (request, answer))]
    assert "last committed ISR is [1, 2]" in tb.check("isr_answer_before_commit")[0][0].message


def _stalled_trace(b1_applied: int, fault_at: int = 1_000_000, reach_b2: bool = False,
                   rules: list | None = None, slowed: bool = False):
    """c3 leads epoch 3 from t=0 and commits up to offset 14 by 10 s; b1 reaches it, b2 (which
    applied only 5) does not, unless `reach_b2`; the run ends at 30 s."""
    tb = TraceBuilder()
    tb.header["options"]["cluster"].update(mode="kraft", controllers=3)
    _leader(tb, "c3", 3, 9)
    tb.at(fault_at).add("nemesis", "fault", step=0, action="split_quorum", params={})
    _commit(tb.at(max(fault_at, 10_000_000)), "c3", 3, 14, (13, 3, REG))
    _apply(tb, "b1", 9, b1_applied, 9) if b1_applied > 9 else None
    _apply(tb, "b2", 0, 5, 0)
    tb.at(30_000_000)
    if rules is not None:
        tb.add("harness", "unhealed", cut_links=2, rules=rules)
    reach = tb.add("harness", "metadata_reach", leader="c3", epoch=3,
                   brokers=[["b1", True, False], ["b2", reach_b2, False]], slowed=slowed)
    tb.end()
    return tb, reach


def _stalled_note(tb) -> str:
    from invariants.registry import check_events
    notes: dict = {}
    check_events(tb.header, tb.events, ["broker_metadata_stalled"], notes=notes)
    return notes["broker_metadata_stalled"]


def test_broker_metadata_stalled_holds_when_each_reaching_broker_caught_up():
    tb, _ = _stalled_trace(b1_applied=14)  # b2 lags, but it cannot reach the leader
    assert tb.violations("broker_metadata_stalled") == []
    assert _stalled_note(tb) == "judged 1 broker"


def test_broker_metadata_stalled_violated_by_a_broker_that_reaches_the_leader_and_lags():
    tb, reach = _stalled_trace(b1_applied=9, reach_b2=True)
    found = tb.violations("broker_metadata_stalled")
    assert [(v[0], v[1]) for v in found] == [("broker_metadata_stalled", 30_000_000)] * 2
    assert all(reach in v[2] for v in found)


def test_broker_metadata_stalled_not_judged_without_quiet_time_or_with_rules_in_force():
    late, _ = _stalled_trace(b1_applied=9, fault_at=25_000_000)  # quiet for 5 s only
    assert late.violations("broker_metadata_stalled") == []
    assert "less than" in _stalled_note(late)
    for tb in (_stalled_trace(b1_applied=9, rules=[0])[0],
               _stalled_trace(b1_applied=9, slowed=True)[0]):
        assert tb.violations("broker_metadata_stalled") == []
        assert "rule" in _stalled_note(tb)
