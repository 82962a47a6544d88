"""under_replicated_after_heal on hand-built traces.

With the hand-built header's cluster options (none but the broker count), the quiet time the
invariant waits for is Kafka's defaults: 3 s controller retry + 0.5 s fetch wait + 2 s fetch
timeout + 1 s fetch backoff + 0.5 s fetch wait = 7 s.
"""

from __future__ import annotations

import pytest

from invariants.quiet import recovery_us
from tests.invariants.tracebuilder import TraceBuilder

NAME = "under_replicated_after_heal"
S = 1_000_000


def _shrunk(end_s: float = 20, expand_at: float | None = None, **extra):
    """t-0 on [1, 2, 3]: b3 crashes at 1 s and restarts at 3 s; the ISR shrinks to [1, 2] at
    2 s and, if `expand_at`, grows back. `extra` adds: fault (t, action, params), drop (t, msg,
    reason), unhealed, crash_b3_at_end, resign, settled."""
    tb = TraceBuilder(brokers=3)
    tb.controller()
    seqs = {"state": tb.partition_state("t-0", 1, 0, [1, 2, 3])}
    tb.at(1 * S).add("nemesis", "fault", step=0, action="crash", target="b3", resolved="b3")
    tb.add("b3", "crash")
    seqs["shrink"] = tb.at(2 * S).partition_state("t-0", 1, 1, [1, 2, 3], isr=[1, 2],
                                                  reason="isr_remove_offline")
    tb.at(3 * S).add("nemesis", "fault", step=1, action="restart", target="b3", resolved="b3")
    tb.add("b3", "restart")
    if expand_at is not None:
        tb.at(int(expand_at * S)).partition_state("t-0", 1, 1, [1, 2, 3], reason="alter_partition")
    if "fault" in extra:
        t, action, params = extra["fault"]
        tb.at(int(t * S)).add("nemesis", "fault", step=2, action=action, params=params)
    if "drop" in extra:
        t, msg, reason = extra["drop"]
        tb.at(int(t * S)).add("b1", "drop", mid=99, msg=msg, reason=reason)
    if extra.get("crash_b3_at_end"):
        tb.at(max(tb.t, 4 * S)).add("b3", "crash")
    if extra.get("resign"):
        tb.at(max(tb.t, 4 * S)).add("c1", "controller_resigned", controller_epoch=1, reason="crash")
    tb.at(int(end_s * S))
    if extra.get("unhealed"):
        tb.add("harness", "unhealed", cut_links=2, rules=[])
    seqs["end"] = tb.end(settled=extra.get("settled", True))
    return tb, seqs


def test_recovery_bound_follows_the_cluster_options():
    assert recovery_us({}) == 7 * S
    assert recovery_us({"controller_request_retry_ms": 1000, "replica_fetch_wait_max_ms": 100}) \
        == 1 * S + 2 * 100_000 + 3 * S


def test_under_replicated_after_heal_holds_when_the_isr_grows_back():
    tb, _ = _shrunk(expand_at=3.1)
    assert tb.violations(NAME) == []


@pytest.mark.parametrize("case", [
    "quiet_too_short", "network_unhealed", "alter_partition_lost_on_a_live_link", "replica_down",
    "unsettled", "no_controller", "late_rule_still_in_force"])
def test_under_replicated_after_heal_holds_when_recovery_had_no_chance(case):
    """Not judged: less than 7 s since the last fault; a cut still in force at the end; an
    AlterPartition lost on a live link less than 30 s + 7 s before the end; a replica down; a
    run cut short; no controller; a delay rule that lapses too late."""
    extra = {"network_unhealed": {"unhealed": True},
             "alter_partition_lost_on_a_live_link": {"drop": (4, "AlterPartition", "loss")},
             "replica_down": {"crash_b3_at_end": True},
             "unsettled": {"settled": False},
             "no_controller": {"resign": True},
             "late_rule_still_in_force": {"fault": (4, "rule", {"rule": "delay",
                                                                "duration_ms": 10_000})},
             }.get(case, {})
    end_s = 9.5 if case == "quiet_too_short" else 20
    tb, _ = _shrunk(end_s=end_s, **extra)
    assert tb.violations(NAME) == []
    # and the run says it judged nothing, and why
    why = {"network_unhealed": "the network was not whole", "unsettled": "cut off before its end",
           "no_controller": "no controller was active",
               # its lost AlterPartition's 30 s socket timeout ends past the 20 s run
               "alter_partition_lost_on_a_live_link": "the run ended at 20 s, 21 s before "
                                                      "its quiet time was over",
               }.get(case, "7 s of quiet time")
    judged, note = tb.judged(NAME)
    assert judged == 0 and note.startswith("not judged: ") and why in note, note


def test_under_replicated_after_heal_says_what_it_judged():
    tb, _ = _shrunk(expand_at=3.1)
    assert tb.judged(NAME) == (1, "judged 1 partition")


@pytest.mark.parametrize("drop", [("Fetch", "loss"), ("AlterPartition", "dst_down"),
                                  ("AlterPartition", "connection_reset"),
                                  ("AlterPartitionResponse", "connection_reset")])
def test_under_replicated_after_heal_violated_despite_losses_that_retry_soon(drop):
    """A lost Fetch is retried within the bound, an AlterPartition lost to a controller that
    died is sent to the next one, and one lost (or its answer lost) to a connection reset is
    sent again at once, since the broker hears of the reset: none holds the judgement off."""
    tb, s = _shrunk(drop=(4, *drop))
    assert tb.violations(NAME) == [(NAME, 20 * S, (s["shrink"], s["end"]))]


def test_under_replicated_after_heal_violated_by_an_isr_that_never_grows_back():
    tb, s = _shrunk(end_s=10.5)  # 7.5 s after the restart at 3 s
    found = tb.check(NAME)[0]
    assert [(v.invariant, v.t_us, v.seqs) for v in found] == [(NAME, 10.5 * S, (s["shrink"], s["end"]))]
    assert "ISR [1, 2] short of replicas [1, 2, 3], since 2 s" in found[0].message


def test_a_kraft_broker_restarted_after_a_crash_is_waited_for_while_its_old_session_lives():
    """In KRaft mode b3's restart at 3 s may not register until its previous incarnation's
    session (9 s) lapses after its crash at 1 s (DUPLICATE_BROKER_REGISTRATION): the clock
    starts at 10 s, so 10.5 s is not judged, 17.5 s is; ZooKeeper mode judges at 10.5 s."""
    for end_s, violated in ((10.5, False), (17.5, True)):
        tb, s = _shrunk(end_s=end_s)
        tb.header["options"]["cluster"].update(mode="kraft", broker_session_timeout_ms=9000)
        assert bool(tb.violations(NAME)) is violated, end_s


@pytest.mark.parametrize("registered_first", [False, True])
def test_a_kraft_controller_election_gives_an_unregistered_restart_a_fresh_old_session(
        registered_first):
    """A controller that becomes active at 5 s gives every registered broker a fresh session
    (`ClusterControlManager.activate`): b3, restarted at 3 s after its crash at 1 s, may then
    not register before 14 s, so the clock starts there and 17.5 s is not judged; had b3's
    new incarnation registered before the election, 17.5 s is judged."""
    tb = TraceBuilder(brokers=3)
    tb.header["options"]["cluster"].update(mode="kraft", broker_session_timeout_ms=9000)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.at(1 * S).add("nemesis", "fault", step=0, action="crash", target="b3", resolved="b3")
    tb.add("b3", "crash")
    tb.at(2 * S).partition_state("t-0", 1, 1, [1, 2, 3], isr=[1, 2], reason="isr_remove_offline")
    tb.at(3 * S).add("nemesis", "fault", step=1, action="restart", target="b3", resolved="b3")
    tb.add("b3", "restart")
    if registered_first:
        tb.at(4 * S).add("c1", "metadata_append", offset=9, epoch=1,
                         record={"kind": "RegisterBrokerRecord", "broker": 3, "fenced": True})
    tb.at(5 * S).add("c1", "controller_elected", controller_epoch=2)
    tb.at(int(17.5 * S))
    tb.end(settled=True)
    assert bool(tb.violations(NAME)) is registered_first


def test_under_replicated_after_heal_violated_by_a_reassignment_left_pending():
    tb = TraceBuilder(brokers=4)
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.at(1 * S).add("nemesis", "fault", step=0, action="reassign", target="t-0",
                     params={"replicas": [1, 2, 4]})
    start = tb.partition_state("t-0", 1, 1, [1, 2, 4, 3], isr=[1, 2, 3], reason="reassign_start")
    end = tb.at(9 * S).end()
    found = tb.check(NAME)[0]
    assert [(v.t_us, v.seqs) for v in found] == [(9 * S, (start, end))]
    assert "reassignment pending" in found[0].message


def test_under_replicated_after_heal_holds_once_the_reassignment_completes_or_is_cancelled():
    for reason in ("reassign_complete", "reassign_cancel"):
        tb = TraceBuilder(brokers=4)
        tb.controller()
        tb.partition_state("t-0", 1, 0, [1, 2, 3])
        tb.at(1 * S).partition_state("t-0", 1, 1, [1, 2, 4, 3], isr=[1, 2, 3],
                                     reason="reassign_start")
        tb.at(2 * S).partition_state("t-0", 1, 2, [1, 2, 3], reason=reason)
        tb.at(20 * S).end()
        assert tb.violations(NAME) == [], reason


def test_under_replicated_after_heal_violated_by_a_leaderless_partition_of_live_replicas():
    tb = TraceBuilder(brokers=3)
    tb.controller()
    offline = tb.partition_state("t-0", -1, 1, [1, 2], isr=[2], reason="elect")
    end = tb.at(8 * S).end()
    found = tb.check(NAME)[0]
    assert [(v.t_us, v.seqs) for v in found] == [(8 * S, (offline, end))]
    assert "has no leader" in found[0].message


# -- produce_stalled_after_heal ----------------------------------------------------------------
STALLED = "produce_stalled_after_heal"


def _expiring(created_s: float, error: int = -1, end_s: float = 30, **extra):
    """t-0 on [1, 2, 3], its leader moved at 1 s; p1 (request timeout 1 s) creates batch
    p1#1 at `created_s` and p1#2 a second later, and both fail with `error` 2 s after their
    creation. The judging bound is 7 s + 1 s + 1 s = 9 s after the move."""
    tb = TraceBuilder(brokers=3)
    tb.header["options"]["producers"] = [{"name": "p1", "request_timeout_ms": 1000}]
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.at(1 * S).add("nemesis", "fault", step=0, action="move_leader", target="t-0")
    tb.partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:move_leader")
    if extra.get("crash_b3"):
        tb.add("b3", "crash")
    seqs = {}
    for i in (1, 2):
        created = int((created_s + i - 1) * S)
        tb.at(created)
        seqs[f"batch{i}"] = tb.add("p1", "batch", bid=f"p1#{i}", tp="t-0", count=10,
                                   created_us=created)
    for i in (1, 2):
        tb.at(int((created_s + i + 1) * S))
        seqs[f"failed{i}"] = tb.add("p1", "produce_failed", bid=f"p1#{i}", tp="t-0", error=error)
    tb.at(int(end_s * S))
    if extra.get("unhealed"):
        tb.add("harness", "unhealed", cut_links=0, rules=[3])
    tb.end()
    return tb, seqs


def test_produce_stalled_after_heal_holds_for_batches_that_expired_soon_after_the_faults():
    tb, _ = _expiring(created_s=8.5)  # created 7.5 and 8.5 s after the move: within the bound
    assert tb.violations(STALLED) == []
    judged, note = tb.judged(STALLED)
    assert judged == 0 and "no producer created a batch" in note and "(from 10 s)" in note, note


def test_produce_stalled_after_heal_judges_only_batches_that_could_expire_by_the_end():
    """A batch created after the bound counts once its delivery timeout fits before the end."""
    tb, _ = _expiring(created_s=12, error=19)  # NOT_ENOUGH_REPLICAS: not an expiry
    assert tb.judged(STALLED)[0] == 0  # default delivery timeout 120 s > the 30 s run
    tb.header["options"]["producers"][0]["delivery_timeout_ms"] = 10_000
    assert tb.judged(STALLED) == (1, "judged 1 producer-partition")


@pytest.mark.parametrize("extra", [{"crash_b3": True}, {"unhealed": True}, {"error": 19}])
def test_produce_stalled_after_heal_holds_when_a_replica_is_down_the_network_is_cut_or_the_batch_failed_otherwise(extra):
    error = extra.pop("error", -1)
    tb, _ = _expiring(created_s=12, error=error, **extra)
    assert tb.violations(STALLED) == []


def test_produce_stalled_after_heal_holds_for_acks_all_on_fewer_replicas_than_min_isr():
    """A partition reassigned down to fewer replicas than min.insync.replicas answers an
    acks=all producer NOT_ENOUGH_REPLICAS for good: its batches expire, as Kafka's would (found
    by a search of mix-client-liveness, which reassigned t-0 to [1] with min ISR 2)."""
    tb, _ = _expiring(created_s=12)
    tb.header["options"]["producers"][0]["acks"] = "all"
    tb.header["options"]["cluster"]["min_insync_replicas"] = 4  # t-0 has 3 replicas
    assert tb.violations(STALLED) == [] and tb.judged(STALLED)[0] == 0
    tb.header["options"]["producers"][0]["acks"] = 1  # acks=1 needs only the leader
    assert [v[0] for v in tb.violations(STALLED)] == [STALLED]


def test_produce_stalled_after_heal_violated_by_a_batch_expiring_long_after_the_heal():
    tb, s = _expiring(created_s=12)
    found = tb.check(STALLED)[0]
    # one violation per producer and partition: its first expired batch
    assert [(v.invariant, v.t_us, v.seqs) for v in found] == [
        (STALLED, 14 * S, (s["batch1"], s["failed1"]))]
    assert "p1's batch p1#1 for t-0, created at 12 s, expired unacknowledged" in found[0].message


# -- consume_stalled_after_heal -----------------------------------------------------------------
CONSUMED = "consume_stalled_after_heal"


def _reading(position: int, end_s: float = 12, **extra):
    """t-0 on [1, 2, 3], its leader moved at 1 s; k1 (fetch wait 100 ms) reads t; the leader's
    HW reaches 50 at 2 s and 80 at 9 s. k1 ends at `position`. The cutoff is the end - 2.1 s;
    the quiet time (7 s) has passed by then if the end is at least 10.1 s."""
    tb = TraceBuilder(brokers=3)
    tb.header["options"]["consumers"] = [{"name": "k1", "topic": "t", "fetch_max_wait_ms": 100}]
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.at(1 * S).add("nemesis", "fault", step=0, action="move_leader", target="t-0")
    tb.partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:move_leader")
    seqs = {"hw50": tb.at(2 * S).hw("b2", "leader", "t-0", 50, leader_epoch=1)}
    seqs["hw80"] = tb.at(9 * S).hw("b2", "leader", "t-0", 80, leader_epoch=1)
    seqs["consume"] = tb.at(int(9.5 * S)).add("k1", "consume", tp="t-0", offset=0,
                                              next_offset=position, batches=1, count=position,
                                              leader_epoch=1, end_to_end_us=[1], read=[[0, "p1#0"]])
    if "drop" in extra:
        drop = extra["drop"] if isinstance(extra["drop"], tuple) else (extra["drop"],)
        msg, reason, dst = drop + ("loss", None)[len(drop) - 1:]
        fields = {"dst": dst} if dst else {}  # hand-built drops may leave out `dst`
        tb.add("b2", "drop", mid=7, msg=msg, reason=reason, **fields)
    if extra.get("crash_b3"):
        tb.add("b3", "crash")
    tb.at(int(end_s * S))
    seqs["end"] = tb.end()
    return tb, seqs


def test_consume_stalled_after_heal_holds_for_a_consumer_that_caught_up():
    tb, _ = _reading(position=80)
    assert tb.violations(CONSUMED) == []


@pytest.mark.parametrize("case", ["quiet_too_short", "answer_lost", "replica_down"])
def test_consume_stalled_after_heal_holds_when_the_consumer_had_no_chance(case):
    """Not judged: the quiet time had not passed by the cutoff; a FetchResponse lost on a live
    link (the consumer waits out its 30 s request timeout); a replica down."""
    extra = {"answer_lost": {"drop": "FetchResponse"},
             "replica_down": {"crash_b3": True}}
    tb, _ = _reading(position=50, end_s=10 if case == "quiet_too_short" else 12,
                     **extra.get(case, {}))
    assert tb.violations(CONSUMED) == []
    judged, note = tb.judged(CONSUMED)
    # a lost answer's 30 s request timeout ends past the run: the note says by how much
    why = "no consumer had committed records" if "lost" not in case else "before its quiet time"
    assert judged == 0 and note.startswith("not judged: ") and why in note, note


@pytest.mark.parametrize("reason", ["connection_closed", "connection_reset", "dst_down"])
def test_consume_stalled_after_heal_judges_past_a_loss_whose_connection_closed(reason):
    """An answer lost with its connection (a broker crash, heard at once or once a cut link
    heals; a reset) costs the consumer no request timeout: it hears of the close and asks
    again, so the run is judged, and a consumer left behind breaks the rule."""
    tb, _ = _reading(position=50, end_s=12, drop=("FetchResponse", reason, "k1"))
    assert [v[0] for v in tb.violations(CONSUMED)] == [CONSUMED]


def test_consume_stalled_after_heal_waits_out_the_consumers_own_request_timeout():
    """A lost answer holds the judgement off for the consumer's request_timeout_ms: 30 s by
    default (not judged in a 20 s run), 1 s when the scenario sets it so."""
    tb, _ = _reading(position=50, end_s=20, drop="FetchResponse")
    assert tb.violations(CONSUMED) == [] and "30 s request timeout" in tb.judged(CONSUMED)[1]
    tb.header["options"]["consumers"][0]["request_timeout_ms"] = 1000
    assert [v[0] for v in tb.violations(CONSUMED)] == [CONSUMED]


def test_consume_stalled_after_heal_says_when_there_is_no_consumer():
    bare = TraceBuilder(brokers=3)
    bare.controller()
    bare.at(20 * S).end()
    assert bare.judged(CONSUMED) == (0, "not judged: the scenario has no consumers")


def test_consume_stalled_after_heal_violated_by_a_consumer_left_behind():
    tb, s = _reading(position=50)
    found = tb.check(CONSUMED)[0]
    assert [(v.invariant, v.t_us, v.seqs) for v in found] == [
        (CONSUMED, 12 * S, (s["hw80"], s["consume"], s["end"]))]
    assert "k1 ends at offset 50 of t-0 although its leader had committed up to 80 by 9.9 s" \
        in found[0].message


@pytest.mark.parametrize("drop", ["Fetch", ("FetchResponse", "loss", "b3")])
def test_consume_stalled_after_heal_violated_despite_a_lost_follower_fetch(drop):
    """A follower's Fetch (sent by a broker), or the answer on its way to one, lost on a live
    link is retried within the quiet time: it does not hold the judgement off."""
    tb, _ = _reading(position=50, drop=drop)
    assert [v.invariant for v in tb.check(CONSUMED)[0]] == [CONSUMED]


def test_a_note_never_quotes_a_time_past_the_end_of_the_run():
    """A run that ends before the quiet time is over is told by how much, not 'from 8 s'
    in a run that ended at 5 s."""
    tb = TraceBuilder(brokers=3)
    tb.header["options"]["consumers"] = [{"name": "k1", "topic": "t", "fetch_max_wait_ms": 100}]
    tb.controller()
    tb.partition_state("t-0", 1, 0, [1, 2, 3])
    tb.at(1 * S).add("nemesis", "fault", step=0, action="move_leader", target="t-0")
    tb.partition_state("t-0", 2, 1, [1, 2, 3], reason="elect:move_leader")
    tb.at(5 * S).end()
    judged, note = tb.judged(CONSUMED)  # its quiet time was to end at 1 s + 7 s
    assert judged == 0 and "the run ended at 5 s, 3 s before its quiet time" in note, note
    assert "8 s" not in note, note
    assert tb.judged(NAME)[1].endswith("(after 1 s) by the end")  # a time the run reached
