"""`sim.kafka.rules.kraft`: the quorum's votes, high watermark and divergence, the quorum
controller's partition changes, AlterPartition validation, and a KRaft broker's replay."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules import kraft

P41, P35 = resolve_protocol("4.1"), resolve_protocol("3.5")


@pytest.mark.parametrize("last_epoch,last_offset,up_to_date", [
    (3, 10, True),    # same epoch, same end: as up to date
    (4, 1, True),     # a later last epoch wins whatever the offsets
    (3, 9, False),    # same epoch, shorter log
    (2, 50, False),   # an earlier last epoch loses whatever the offsets
])
def test_candidate_log_up_to_date(last_epoch, last_offset, up_to_date):
    assert kraft.candidate_log_up_to_date(last_epoch, last_offset, 3, 10) is up_to_date


@pytest.mark.parametrize("state,voted_for,up_to_date,granted", [
    ("unattached", None, True, True),   # UnattachedState: by the log alone
    ("unattached", None, False, False),
    ("voted", "c2", False, True),       # VotedState: the one it voted for, again
    ("voted", "c3", True, False),       # one vote per epoch
    ("follower", None, True, False),    # FollowerState: it knows this epoch's leader
    ("follower", "c2", True, False),    # even the one it voted for, now that a leader won
    ("candidate", "c1", True, False),   # CandidateState: its vote for itself
    ("leader", "c1", True, False),      # LeaderState
])
def test_grants_vote_by_state(state, voted_for, up_to_date, granted):
    assert kraft.grants_vote(state, voted_for, "c2", up_to_date) is granted


@pytest.mark.parametrize("ends,hw,epoch_start,expected", [
    ([10, 10, 0], 0, 5, 10),   # a majority (leader and one voter) at 10
    ([10, 4, 0], 0, 2, 4),     # the majority's offset, not the leader's
    ([10, 4, 0], 0, 5, 0),     # not past the leader's epoch start: nothing commits yet
    ([10, 4, 3], 6, 2, 6),     # never lower than before
    ([10, 9, 8, 2, 1], 0, 0, 8),  # five voters: the third highest
])
def test_high_watermark(ends, hw, epoch_start, expected):
    assert kraft.high_watermark(ends, hw, epoch_start) == expected


@pytest.mark.parametrize("epochs,last_epoch,fetch_offset,expected", [
    ([1, 1, 2, 2], 2, 4, None),        # on the leader's log
    ([1, 1, 2, 2], 2, 3, None),        # behind, on the log
    ([1, 1, 2, 2], 0, 0, None),        # an empty fetcher
    ([1, 1, 3, 3], 2, 4, (1, 2)),      # the fetcher has epoch 2 the leader never had
    ([1, 1, 2], 2, 5, (2, 3)),         # the fetcher has more of epoch 2 than the leader
])
def test_diverging_end_offset(epochs, last_epoch, fetch_offset, expected):
    assert kraft.diverging_end_offset(epochs, last_epoch, fetch_offset) == expected


def test_partition_change_shrink_bumps_the_leader_epoch_only_before_kafka_15021():
    """b3 fenced: it leaves the ISR; the leader stays. 3.5 bumps the leader epoch, 4.1 not;
    the partition epoch moves either way."""
    args = (1, 4, 7, (1, 2, 3), (1, 2, 3), (1, 2), (1, 2))  # the ISR without b3, as fencing asks
    assert kraft.partition_change(P35, *args) == kraft.PartitionChange(1, 5, 8, (1, 2))
    assert kraft.partition_change(P41, *args) == kraft.PartitionChange(1, 4, 8, (1, 2))


@pytest.mark.parametrize("leader,isr,usable,unclean,expected", [
    (1, (1, 2, 3), (2, 3), False, (2, 5, 8, (2, 3))),         # leader fenced: next in the ISR
    (1, (1,), (2, 3), False, (-1, 5, 8, (1,))),                # last ISR member gone: no leader,
    #                                                            and it stays in the ISR
    (-1, (1,), (1, 2, 3), False, (1, 5, 8, (1,))),             # it comes back: elected again
    (1, (1,), (2, 3), True, (2, 5, 8, (2,))),                  # unclean: any usable replica
    (1, (1, 2, 3), (1, 2, 3), False, None),                    # nothing to change
])
def test_partition_change_elections(leader, isr, usable, unclean, expected):
    """The controller fences a broker by asking for the ISR without it
    (`generateLeaderAndIsrUpdates`), as `_rebalance` does."""
    target = tuple(r for r in isr if r in usable)
    change = kraft.partition_change(P41, leader, 4, 7, isr, (1, 2, 3), usable, target, unclean)
    assert change == (None if expected is None else kraft.PartitionChange(*expected))


@pytest.mark.parametrize("active,lookup,broker,le,pe,isr,error", [
    (False, E.NONE, 1, 4, 7, (1, 2), E.NOT_CONTROLLER),
    (True, E.UNKNOWN_TOPIC_OR_PARTITION, 1, 4, 7, (1, 2), E.UNKNOWN_TOPIC_OR_PARTITION),
    (True, E.UNKNOWN_TOPIC_ID, 1, 4, 7, (1, 2), E.UNKNOWN_TOPIC_ID),  # the lookup's answer
    (True, E.NONE, 2, 4, 7, (1, 2), E.INVALID_REQUEST),
    (True, E.NONE, 2, 5, 7, (1, 2), E.NOT_CONTROLLER),       # a newer epoch comes first
    (True, E.NONE, 1, 4, 8, (1, 2), E.NOT_CONTROLLER),
    (True, E.NONE, 2, 3, 7, (1, 2), E.FENCED_LEADER_EPOCH),  # before the leader check
    (True, E.NONE, 1, 4, 6, (1, 2), E.INVALID_UPDATE_VERSION),
    (True, E.NONE, 2, 4, 6, (1, 2), E.INVALID_REQUEST),      # the leader check before it
    (True, E.NONE, 1, 4, 7, (1, 4), E.INVALID_REQUEST),      # b4 is no replica
    (True, E.NONE, 1, 4, 7, (1, 1), E.INVALID_REQUEST),      # a broker twice
    (True, E.NONE, 1, 4, 7, (2,), E.INVALID_REQUEST),        # the leader left out
    (True, E.NONE, 1, 4, 7, (1, 3), E.INELIGIBLE_REPLICA),   # b3 is fenced (KIP-841)
    (True, E.NONE, 1, 4, 7, (1, 2), E.NONE),
])
def test_alter_partition_error(active, lookup, broker, le, pe, isr, error):
    """`validateAlterPartitionData`'s order at 3.3.0-3.7.0 (replicas 1-3, leader 1 in
    epoch 4, partition epoch 7; brokers 1 and 2 eligible)."""
    assert kraft.alter_partition_error(P41, active, lookup, 1, 4, 7, broker, le, pe, isr,
                                       (1, 2), (1, 2, 3)) == error


# brokers 1-3 registered at epochs 10, 20 and 30 (1 and 2 eligible, 3 fenced)
REGISTERED = {1: 10, 2: 20, 3: 30}


@pytest.mark.parametrize("profile,active,broker,sender_epoch,isr,epochs,error", [
    ("4.1", False, 1, 9, (1, 2), (), E.NOT_CONTROLLER),        # before the broker epoch
    ("4.1", True, 1, 9, (1, 2), (), E.STALE_BROKER_EPOCH),     # an older epoch of the sender
    ("4.1", True, 1, -1, (1, 2), (), E.STALE_BROKER_EPOCH),
    ("4.1", True, 4, 40, (1, 2), (), E.STALE_BROKER_EPOCH),    # b4 is not registered
    ("4.1", True, 2, 21, (1, 2), (), E.STALE_BROKER_EPOCH),    # before the leader check
    ("4.1", True, 1, 10, (1, 2), (10, 20), E.NONE),
    ("4.1", True, 1, 10, (1, 2), (10, 19), E.INELIGIBLE_REPLICA),  # b2's previous incarnation
    ("4.1", True, 1, 10, (1, 2), (10, -1), E.NONE),            # -1 is not checked
    ("4.1", True, 1, 10, (1, 2), (), E.NONE),                  # v2: no epochs carried
    ("4.1", True, 1, 10, (1, 3), (10, 30), E.INELIGIBLE_REPLICA),  # fenced (KIP-841) first
    ("3.4.1", True, 1, 10, (1, 2), (10, 19), E.NONE),          # before KIP-903: not checked
    ("3.3", True, 1, 9, (1, 2), (), E.STALE_BROKER_EPOCH),      # checkBrokerEpoch from 3.3
])
def test_alter_partition_broker_epochs(profile, active, broker, sender_epoch, isr, epochs,
                                       error):
    """`ClusterControlManager.checkBrokerEpoch` on the whole request (3.3.0-3.7.0), then
    KIP-903's `ineligibleReplicasForIsr` "broker epoch mismatch" (3.5.0-3.7.0)."""
    proto = resolve_protocol(profile)
    assert kraft.alter_partition_error(proto, active, E.NONE, 1, 4, 7, broker, 4, 7, isr, (1, 2),
                                       (1, 2, 3), REGISTERED, sender_epoch, epochs) == error


def test_stale_isr_epochs_names_the_mismatched_members():
    assert kraft.stale_isr_epochs(P41, (1, 2, 3), (10, 21, 31), REGISTERED) == (2, 3)
    assert kraft.stale_isr_epochs(P41, (1, 2, 3), (10, -1, 30), REGISTERED) == ()
    assert kraft.stale_isr_epochs(resolve_protocol("3.4.1"), (1, 2), (10, 21), REGISTERED) == ()


@pytest.mark.parametrize("local,incoming,takes", [
    ((-1, -1), (0, 0), True),    # a new replica
    ((4, 7), (4, 7), True),      # an equal partition epoch is taken (KAFKA-13790)
    ((4, 7), (4, 8), True),      # an ISR change
    ((4, 7), (5, 8), True),      # a new leader epoch
    ((4, 7), (4, 6), False),     # an older partition epoch
])
def test_broker_takes_partition(local, incoming, takes):
    assert kraft.broker_takes_partition(*local, *incoming) is takes


F, U, CS, NOW = kraft.FENCED, kraft.UNFENCED, kraft.CONTROLLED_SHUTDOWN, kraft.SHUTDOWN_NOW


@pytest.mark.parametrize("current,shutdown,caught_up,leads,offset,lowest,state", [
    (F, False, True, False, -1, 0, U),      # caught up with its registration: unfenced
    (F, False, False, False, -1, 0, F),
    (F, True, False, True, -1, 0, NOW),     # a fenced broker may stop at once
    (U, False, True, True, -1, 0, U),
    (U, True, True, True, -1, 0, CS),       # it leads a partition: controlled shutdown
    (U, True, True, False, -1, -1, NOW),    # leads nothing: at once, whatever the others applied
    (CS, True, True, True, 5, 9, CS),       # leaderships still to move
    (CS, True, True, False, 5, 4, CS),      # an active broker has not applied offset 5 yet
    (CS, True, True, False, 5, 5, NOW),
])
def test_next_broker_state(current, shutdown, caught_up, leads, offset, lowest, state):
    """`BrokerHeartbeatManager.calculateNextBrokerState` (3.3.0-3.8.0; the arms of
    BrokerHeartbeatManagerTest.testCalculateNextBrokerState)."""
    assert kraft.next_broker_state(current, shutdown, caught_up, leads, offset, lowest) == state


def test_a_broker_publishes_only_the_committed_head_of_its_metadata_log():
    tail = ((7, 2, "a"), (8, 2, "b"), (9, 3, "c"))
    assert [kraft.publishable_metadata(tail, hw) for hw in (7, 8, 9, 12)] == [0, 1, 2, 3]


@pytest.mark.parametrize("profile,heard,resigns", [
    ("3.6", 1, False),  # before KAFKA-15489: a leader never resigns
    ("3.7", 1, True),   # check-quorum: heard from itself only, of 3
    ("3.7", 2, False),  # a majority of 3
])
def test_raft_resigns(profile, heard, resigns):
    assert kraft.raft_resigns(resolve_protocol(profile), heard, 2) is resigns


def test_stray_logs_are_the_logs_the_image_does_not_place_here():
    from sim.kafka.messages import PartitionState
    parts = {"t-0": PartitionState("t-0", 2, 2, 0, 0, (2, 3), (1, 2, 3)),
             "u-0": PartitionState("u-0", 5, 2, 0, 0, (2, 3), (2, 3))}
    held = {"t-0": 1,   # the topic was deleted and created again: another topic id
            "u-0": 5,   # reassigned away from broker 1
            "v-0": 7}   # the topic is gone
    assert kraft.stray_logs(1, held, parts) == ["t-0", "u-0", "v-0"]
    assert kraft.stray_logs(1, {"t-0": 2}, parts) == []


@pytest.mark.parametrize("profile,first,before", [
    ("3.6", True, True),    # KAFKA-14616: replicas made, then strays deleted
    ("3.7", True, False),   # strays deleted first
    ("3.6", False, False),  # only the first publish after a start looks for strays
])
def test_replica_made_before_strays_go(profile, first, before):
    assert kraft.replica_made_before_strays_go(resolve_protocol(profile), first) is before


def test_reassignment_target_lists_the_target_then_the_removed_replicas():
    assert kraft.reassignment_target((1, 2, 3), (4, 2, 3)) == ((4, 2, 3, 1), (4,), (1,))
    assert kraft.reassignment_target((1, 2), (1, 2)) == ((1, 2), (), ())


@pytest.mark.parametrize("isr,done", [
    ((1, 2, 3), None),                       # 4 has not caught up
    ((1, 2, 3, 4), ((4, 2, 3), (2, 3, 4))),  # it has: 1 leaves replicas and ISR
    ((1, 4), ((4, 2, 3), (4,))),
])
def test_completed_reassignment(isr, done):
    assert kraft.completed_reassignment((4, 2, 3, 1), (4,), (1,), isr) == done


def test_a_reverted_reassignment_keeps_the_original_replicas_in_the_merged_order():
    assert kraft.reverted_reassignment((4, 2, 3, 1), (4,), (1, 2, 4)) == ((2, 3, 1), (1, 2), False)
    # every ISR member was being added: the first original replica, uncleanly
    assert kraft.reverted_reassignment((4, 5, 1), (4, 5), (4, 5)) == ((1,), (1,), True)


def test_an_assignment_change_that_completes_moves_a_removed_leader_and_bumps_the_epoch():
    change = kraft.assignment_change(P41, 1, 3, 7, (1, 2, 3), (4, 2, 3, 1), (1, 2, 3, 4),
                                     (1, 2, 3, 4), (4, 2, 3, 1), (4,), (1,))
    assert change == kraft.AssignmentChange(4, 4, 8, (2, 3, 4), (4, 2, 3), (), ())


def test_an_assignment_change_that_only_adds_keeps_the_leader_epoch():
    change = kraft.assignment_change(P41, 1, 3, 7, (1, 2, 3), (1, 2, 3), (1, 2, 3, 4),
                                     (1, 2, 3), (4, 1, 2, 3), (4,), ())
    assert change == kraft.AssignmentChange(1, 3, 8, (1, 2, 3), (4, 1, 2, 3), (4,), ())
    # nothing asked that the partition does not have: no record
    assert kraft.assignment_change(P41, 1, 3, 7, (1, 2, 3), (1, 2, 3), (1, 2, 3), (1, 2, 3),
                                   (1, 2, 3), (), ()) is None


@pytest.mark.parametrize("profile,epoch", [("3.5", 4), ("3.6", 3)])
def test_a_leader_s_own_isr_shrink_bumps_the_leader_epoch_only_before_kafka_15021(profile, epoch):
    """`alterPartition` builds its change with `PartitionChangeBuilder`, whose
    `triggerLeaderEpochBumpIfNeeded` (3.5.0) bumps on any ISR that drops a member."""
    change = kraft.assignment_change(resolve_protocol(profile), 1, 3, 7, (1, 2, 3), (1, 2, 3),
                                     (1, 2, 3), (1, 2), (1, 2, 3), (), ())
    assert (change.leader, change.leader_epoch, change.isr) == (1, epoch, (1, 2))


def test_an_assignment_change_that_changes_nothing_of_a_running_reassignment_writes_no_record():
    """`_rebalance` asks for every partition on every change of the usable brokers: a partition
    still being reassigned, its ISR and leader as they were, gets no record (a record once
    moved its partition epoch for nothing)."""
    assert kraft.assignment_change(P41, 1, 3, 7, (1, 2, 3), (4, 2, 3, 1), (1, 2, 3), (1, 2, 3),
                                   (4, 2, 3, 1), (4,), (1,), moving=((4,), (1,))) is None


@pytest.mark.parametrize("registered,same,valid,refused", [
    (False, False, False, False),   # a first registration
    (True, True, True, False),      # the same process again (its answer was lost)
    (True, False, True, True),      # a restarted process while the old session is valid
    (True, False, False, False),    # ... once it expired (or the old one was fenced)
])
def test_a_restarted_broker_is_refused_while_its_old_session_is_valid(registered, same, valid,
                                                                       refused):
    assert kraft.duplicate_registration(registered, same, valid) is refused


@pytest.mark.parametrize("profile,fetcher_hw,leader_hw,now", [
    ("4.1", 5, 7, True),  # the fetcher knows less than the leader: answered at once
    ("4.1", 7, 7, False),  # it knows as much: parked
    ("4.1", None, 7, False),  # a Fetch without the field (Long.MAX_VALUE) parks
    ("4.1", -1, -1, False),  # a new leader's unknown high watermark
    ("4.0", 5, 7, False),  # before KIP-1166 a Fetch with no records always parks
    ("3.7", 5, 7, False),
])
def test_quorum_fetch_answered_now(profile, fetcher_hw, leader_hw, now):
    proto = resolve_protocol(profile)
    assert kraft.quorum_fetch_answered_now(proto, fetcher_hw, leader_hw) is now


@pytest.mark.parametrize("profile,answers", [("3.3", False), ("3.7", False), ("4.0", False),
                                             ("4.1", True)])
def test_hw_move_answers_parked(profile, answers):
    assert kraft.hw_move_answers_parked(resolve_protocol(profile)) is answers


@pytest.mark.parametrize("request_epoch,is_leader,error", [
    (4, True, E.FENCED_LEADER_EPOCH),      # an older epoch than the voter's
    (6, True, E.UNKNOWN_LEADER_EPOCH),     # a newer one: the receiver does not take it
    (5, False, E.NOT_LEADER_OR_FOLLOWER),  # its own epoch, but it does not lead
    (5, True, E.NONE),
])
def test_leader_only_error(request_epoch, is_leader, error):
    assert kraft.leader_only_error(request_epoch, 5, is_leader) == error


def test_election_backoff_is_binary_exponential_up_to_the_max():
    """`binaryExponentialElectionBackoffMs` (3.7.0): 100 ms times a draw below 2^retries,
    at most quorum.election.backoff.max.ms."""
    bounds = []
    top = lambda n: bounds.append(n) or n - 1  # noqa: E731 (the largest draw)
    assert kraft.election_backoff_ms(1, top, 1000) == 100   # a draw below 2
    assert kraft.election_backoff_ms(3, top, 1000) == 700   # below 8
    assert kraft.election_backoff_ms(5, top, 1000) == 1000  # 3100 capped
    assert kraft.election_backoff_ms(40, top, 10**9) == 100 * ((2 << 20) - 1)  # exponent capped
    assert bounds == [2, 8, 32, 2 << 20]
    assert kraft.election_backoff_ms(4, lambda n: 0, 1000) == 0


@pytest.mark.parametrize("granted,unrecorded,majority,rejected", [
    (1, 1, 2, False), (1, 0, 2, True), (2, 0, 2, False), (1, 1, 3, True), (2, 2, 3, False),
])
def test_vote_rejected_once_no_majority_is_left(granted, unrecorded, majority, rejected):
    assert kraft.vote_rejected(granted, unrecorded, majority) is rejected


@pytest.mark.parametrize("candidate_epoch,last_epoch,last_offset,epoch,error", [
    (6, 3, 10, 5, E.NONE),
    (6, 3, -5, 5, E.INVALID_REQUEST),   # a negative end offset
    (6, -1, 0, 5, E.INVALID_REQUEST),   # a negative last epoch
    (6, 6, 0, 5, E.INVALID_REQUEST),    # a last epoch not below the candidate's
    (4, 5, 0, 5, E.INVALID_REQUEST),    # validated before the epoch is fenced
    (4, 3, 0, 5, E.FENCED_LEADER_EPOCH),
])
def test_vote_request_error(candidate_epoch, last_epoch, last_offset, epoch, error):
    """`handleVoteRequest` (3.7.0; KafkaRaftClientTest.testInvalidVoteRequest)."""
    assert kraft.vote_request_error(candidate_epoch, last_epoch, last_offset, epoch) == error
