"""The chain steps towards a violation, and how the corpus weighs a case by them."""

from __future__ import annotations

import os

from epochsim.explore.chains import (
    ADDING_LAGGED,
    CLIENT_AHEAD,
    LAGGING_ELECTED,
    LEADER_AND_ISR_BEHIND,
    LEADER_BEHIND,
    LEADER_LATE,
    REPLICA_LAGGED,
    STAGES,
    STOP_REPLICA_BEHIND,
    STOP_REPLICA_SENT,
    ChainFold,
    leading,
)
from epochsim.explore.coverage import RunFold
from epochsim.explore.novelty import CHAIN, Corpus, SignalFold, features
from epochsim.explore.report import chain_lines
from epochsim.explore.search import explore
from scenarios.schema import load_scenario
from tests.conftest import ROOT


def fold(events) -> set:
    chains = ChainFold()
    for ev in events:
        chains.step(ev)
    return chains.stages


def stop_replica(mid, dst, epoch):
    return {"kind": "send", "mid": mid, "msg": "StopReplica", "node": "c1", "dst": dst,
            "parts": [["t-0", epoch, False]]}


def leader_and_isr(mid, dst, leader, epoch):
    return {"kind": "send", "mid": mid, "msg": "LeaderAndIsr", "node": "c1", "dst": dst,
            "parts": [["t-0", leader, epoch]]}


def test_a_newer_leader_and_isr_sent_behind_an_in_flight_stop_replica():
    behind = [stop_replica(1, "b2", 1), leader_and_isr(2, "b2", 3, 2)]
    assert fold(behind) == {STOP_REPLICA_SENT, STOP_REPLICA_BEHIND}
    # one StopReplica for two partitions: the LeaderAndIsr of either may overtake it
    two = dict(stop_replica(1, "b2", 1), parts=[["t-0", 1, False], ["t-1", 4, True]])
    newer_t1 = dict(leader_and_isr(2, "b2", 3, 5), parts=[["t-1", 3, 5]])
    assert fold([two, newer_t1]) == {STOP_REPLICA_SENT, STOP_REPLICA_BEHIND}
    assert fold([two, dict(newer_t1, parts=[["t-1", 3, 4]])]) == {STOP_REPLICA_SENT}
    # to another broker, at the same epoch, or once the StopReplica arrived: the first step only
    for events in ([stop_replica(1, "b2", 1), leader_and_isr(2, "b3", 3, 2)],
                   [stop_replica(1, "b2", 2), leader_and_isr(2, "b2", 3, 2)],
                   [stop_replica(1, "b2", 1), {"kind": "deliver", "mid": 1, "src": "c1",
                                               "node": "b2"}, leader_and_isr(2, "b2", 3, 2)],
                   [stop_replica(1, "b2", 1), {"kind": "drop", "mid": 1, "dst": "b2"},
                    leader_and_isr(2, "b2", 3, 2)],
                   [stop_replica(1, "b2", 1), {"kind": "crash", "node": "b2"},
                    {"kind": "restart", "node": "b2"}, leader_and_isr(2, "b2", 3, 2)]):
        assert fold(events) == {STOP_REPLICA_SENT}


def at(ev, t_us):
    return dict(ev, t=t_us)


def test_a_newer_leader_and_isr_sent_behind_an_older_one_stuck_in_flight():
    """The step towards `leader_epoch_monotonic`'s violation: an older LeaderAndIsr still in
    flight 20 ms after it was sent (held, delayed or on a cut link) when a newer one goes to
    the same broker, which may then overtake it."""
    stuck = [at(leader_and_isr(1, "b2", 1, 3), 0), at(leader_and_isr(2, "b2", 1, 4), 20_000)]
    assert fold(stuck) == {LEADER_AND_ISR_BEHIND}
    # a moment apart (a reassignment's two), to another broker, at the same epoch, once the
    # older arrived or was lost, or after the broker crashed: not reached
    for events in ([at(leader_and_isr(1, "b2", 1, 3), 0), at(leader_and_isr(2, "b2", 1, 4), 19_999)],
                   [stuck[0], at(leader_and_isr(2, "b3", 1, 4), 20_000)],
                   [stuck[0], at(leader_and_isr(2, "b2", 1, 3), 20_000)],
                   [stuck[0], {"kind": "deliver", "mid": 1, "src": "c1", "node": "b2"}, stuck[1]],
                   [stuck[0], {"kind": "drop", "mid": 1, "dst": "b2"}, stuck[1]],
                   [stuck[0], {"kind": "crash", "node": "b2"}, {"kind": "restart", "node": "b2"},
                    stuck[1]]):
        assert fold(events) == set()
    assert STAGES["leader_epoch_monotonic"] == (LEADER_AND_ISR_BEHIND,)


def written(t_us, isr, replicas, reason, **extra):
    return {"kind": "partition_state", "t": t_us, "tp": "t-0", "leader": 2, "leader_epoch": 2,
            "isr": isr, "replicas": replicas, "reason": reason, **extra}


def test_a_replica_a_reassignment_adds_that_stays_out_of_the_isr():
    """`stray_replica`'s step (KAFKA-13972): a cancel finds the added replica still out of
    the ISR only if it has not caught up; ZooKeeper mode names old and new replicas together
    at `reassign_start`, KRaft names the added ones (`adding`)."""
    start = [written(0, [1, 2], [1, 2], "controller_failover"),
             written(1_000, [1, 2], [3, 1, 2], "reassign_start")]
    tick = {"kind": "crash", "node": "b9", "t": 101_000}  # any later event
    assert fold(start + [tick]) == {ADDING_LAGGED}
    assert fold(start + [dict(tick, t=100_999)]) == set()
    caught_up = written(50_000, [1, 2, 3], [3, 1, 2], "alter_partition")
    assert fold(start + [caught_up, tick]) == set()
    cancelled = written(50_000, [1, 2], [1, 2], "reassign_cancel")
    assert fold(start + [cancelled, tick]) == set()
    kraft = [written(1_000, [1, 2], [1, 2, 3], "reassign_start", adding=[3])]
    assert fold(kraft + [tick]) == {ADDING_LAGGED}
    assert STAGES["stray_replica"] == (ADDING_LAGGED,)


def state(tp_leader, epoch, isr, reason):
    return {"kind": "partition_state", "tp": "t-0", "leader": tp_leader, "leader_epoch": epoch,
            "isr": isr, "replicas": [1, 2, 3], "reason": reason}


def applied(node, role, epoch):
    return {"kind": "replica_state", "node": node, "tp": "t-0", "role": role,
            "leader_epoch": epoch}


def election_steps(events) -> set:
    """The steps of `single_leader_per_epoch`'s chain among those the events reach."""
    return fold(events) & set(STAGES["single_leader_per_epoch"])


def test_an_election_naming_an_in_sync_replica_that_missed_the_leaders_epoch():
    start = [state(1, 0, [1, 2, 3], "controller_failover"), applied("b1", "leader", 0),
             applied("b2", "follower", 0), applied("b3", "follower", 0),
             state(1, 1, [1, 2], "controlled_shutdown"), applied("b1", "leader", 1)]
    # b2 never applied epoch 1, at which b1 led, and is elected
    assert election_steps(start + [state(2, 1, [2], "elect:controlled_shutdown")]) == {
        REPLICA_LAGGED, LAGGING_ELECTED}
    # b2 caught up before: nothing
    assert election_steps(start + [applied("b2", "follower", 1),
                         state(2, 2, [2], "elect:controlled_shutdown")]) == set()
    # a lagging replica out of the ISR, or down, is not one an election could name
    assert election_steps(start[:-2] + [state(1, 1, [1, 3], "isr_remove_offline"),
                              applied("b1", "leader", 1), applied("b3", "follower", 1),
                              state(3, 2, [3], "elect:controlled_shutdown")]) == set()
    assert election_steps(start + [{"kind": "crash", "node": "b2"},
                         state(1, 2, [1, 2], "isr_remove_offline")]) == set()
    # the broker that led at the epoch is not behind it, whatever it applied since
    assert election_steps(start + [{"kind": "crash", "node": "b1"}, {"kind": "restart", "node": "b1"},
                         applied("b2", "follower", 1),
                         state(1, 2, [1, 2], "elect:preferred")]) == set()


def depth(stages, invariant: str) -> int:
    return leading(stages, STAGES.get(invariant, ()))


def test_depth_counts_the_leading_steps_of_the_chain():
    assert depth({STOP_REPLICA_SENT, STOP_REPLICA_BEHIND}, "stop_replica_out_of_order") == 2
    assert depth({STOP_REPLICA_BEHIND}, "stop_replica_out_of_order") == 0
    assert depth({LAGGING_ELECTED, REPLICA_LAGGED}, "single_leader_per_epoch") == 2
    assert depth({STOP_REPLICA_SENT}, "duplicate_append") == 0
    assert depth({LEADER_AND_ISR_BEHIND}, "leader_epoch_monotonic") == 1
    assert all(steps for steps in STAGES.values())


def test_only_the_targets_chain_becomes_features_and_deeper_weighs_more():
    chains = ChainFold()
    for ev in [stop_replica(1, "b2", 1), leader_and_isr(2, "b2", 3, 2)]:
        chains.step(ev)
    target = STAGES["stop_replica_out_of_order"]
    assert features(RunFold(), SignalFold(), chains, target) == {
        f"chain {STOP_REPLICA_SENT}", f"chain {STOP_REPLICA_BEHIND}"}
    assert features(RunFold(), SignalFold(), chains, STAGES["single_leader_per_epoch"]) == set()
    corpus = Corpus((), target)
    corpus.add("none", frozenset({"x", "w"}), 1, 1)
    corpus.add("one", frozenset({"x", "y", f"chain {STOP_REPLICA_SENT}"}), 2, 1)
    corpus.add("two", frozenset({"x", "z", f"chain {STOP_REPLICA_SENT}",
                                 f"chain {STOP_REPLICA_BEHIND}"}), 3, 1)
    none, one, two = corpus.weights()
    assert (none, one, two) == (1.0, 1.0 + CHAIN, 1.0 + 2 * CHAIN)


def test_explore_reports_how_far_along_the_targets_chain_its_runs_got():
    scenario = load_scenario(os.path.join(ROOT, "scenarios", "selftest",
                                          "no_stop_replica_epoch_check.toml"))
    result = explore(scenario, 6, 3, "stop_replica_out_of_order")
    assert [step for step, _runs in result.chain] == list(STAGES["stop_replica_out_of_order"])
    # a later step is never reached by more runs than the one before it
    assert result.chain[0][1] >= result.chain[1][1] >= 0 and result.chain[0][1] <= 6
    lines = chain_lines(result.chain, "stop_replica_out_of_order")
    assert lines[1] == f"    1. {STOP_REPLICA_SENT}: {result.chain[0][1]} runs"
    assert explore(scenario, 2, 3, "duplicate_append").chain == []
    assert chain_lines([], "duplicate_append") == []


def _kip359(applied_at_us: int | None) -> set:
    """b1 leads t-0 at epoch 0; the controller names it at epoch 1 at 1 s (an ISR change);
    b1 applies epoch 1 at `applied_at_us` (None: not before a client learns it at 1.2 s)."""
    events = [{"kind": "replica_state", "node": "b1", "tp": "t-0", "role": "leader",
               "leader_epoch": 0, "t": 0},
              {"kind": "partition_state", "node": "c1", "tp": "t-0", "leader": 1,
               "leader_epoch": 1, "isr": [1, 2], "reason": "isr_shrink", "t": 1_000_000}]
    if applied_at_us is not None:
        events.append({"kind": "replica_state", "node": "b1", "tp": "t-0", "role": "leader",
                       "leader_epoch": 1, "t": applied_at_us})
    events += [{"kind": "hw", "node": "b2", "tp": "t-0", "t": 1_150_000},
               {"kind": "client_epoch", "node": "p1", "tp": "t-0", "leader": 1,
                "leader_epoch": 1, "t": 1_200_000}]
    return fold(events)


def test_kip359_s_chain_a_client_ahead_of_a_leader_that_lags_its_own_epoch():
    assert STAGES["stale_leader_append"] == (LEADER_BEHIND, LEADER_LATE, CLIENT_AHEAD)
    assert _kip359(None) == {LEADER_BEHIND, LEADER_LATE, CLIENT_AHEAD}
    assert _kip359(1_001_000) == {LEADER_BEHIND}  # applied at once: no window
    assert _kip359(1_180_000) == {LEADER_BEHIND, LEADER_LATE}  # late, but before the client


def leads(events, stages) -> list:
    chains = ChainFold(stages)
    for ev in events:
        chains.step(ev)
    return [(s.at_us, s.action, s.target, s.params) for s in chains.leads]


def test_a_lagging_in_sync_replica_leads_to_a_leadership_move_to_it():
    """The lead of `single_leader_per_epoch`'s first step: move the leadership to the replica
    that lagged, from the moment the epoch it lags was written; recorded only when asked."""
    start = [at(state(1, 0, [1, 2, 3], "controller_failover"), 0), at(applied("b1", "leader", 0), 1),
             at(applied("b2", "follower", 0), 1), at(applied("b3", "follower", 0), 1),
             at(state(1, 1, [1, 2], "controlled_shutdown"), 500_000),
             at(applied("b1", "leader", 1), 501_000),
             at(state(1, 1, [1, 2], "alter_partition"), 600_000)]
    asked = STAGES["single_leader_per_epoch"]
    assert leads(start, asked) == [(500_000, "move_leader", "t-0", {"to": "b2"})]
    assert leads(start, STAGES["stray_replica"]) == []
    assert leads(start, ()) == []
    # a replica restarted since the epoch's write lags only until the controller reads the
    # restart (which takes it out of the ISR): no step, no lead
    bounced = start[:-1] + [at({"kind": "crash", "node": "b2"}, 550_000),
                            at({"kind": "restart", "node": "b2"}, 560_000), start[-1]]
    assert leads(bounced, asked) == [] and REPLICA_LAGGED not in fold(bounced)


def test_an_added_replica_out_of_the_isr_leads_to_cancelling_the_reassignment_once():
    start = [written(0, [1, 2], [1, 2], "controller_failover"),
             written(1_000, [1, 2], [3, 1, 2], "reassign_start")]
    ticks = [{"kind": "crash", "node": "b9", "t": t} for t in (101_000, 150_000, 200_000)]
    asked = STAGES["stray_replica"]
    assert leads(start + ticks, asked) == [(101_000, "cancel_reassignment", "t-0", {})]
    # caught up and out again (a new reassignment): a lead of its own
    again = [written(300_000, [1, 2, 3], [3, 1, 2], "alter_partition"),
             written(400_000, [1, 2], [1, 2], "reassign_complete"),
             written(500_000, [1, 2], [3, 1, 2], "reassign_start"),
             {"kind": "crash", "node": "b9", "t": 700_000}]
    assert leads(start + ticks + again, asked) == [(101_000, "cancel_reassignment", "t-0", {}),
                                                  (700_000, "cancel_reassignment", "t-0", {})]
