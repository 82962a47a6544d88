"""`sim.kafka.rules.replication`: min ISR, the high watermark, ISR expansion and shrink, what
a follower's Fetch names, across profiles."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES, newer, resolve_protocol
from sim.kafka.rules import replication as rep

NOW_US = 100_000_000
LAG_MS = 10_000
NEVER = -(1 << 62)


def _f(leo, caught_up_us=NEVER):
    return SimpleNamespace(leo=leo, caught_up_as_of=lambda: caught_up_us)


def _hw(proto, leo, hw, isr, followers, isr_size=None, min_isr=1, eligible=lambda r, f: True):
    """`maybe_increment_leader_hw` for leader 1 of three replicas, at NOW_US, lag LAG_MS."""
    return rep.maybe_increment_leader_hw(
        proto, leo, hw, len(isr) if isr_size is None else isr_size, min_isr, 3, isr, followers,
        NOW_US, LAG_MS, eligible)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_effective_min_isr_counts_at_most_the_replicas_from_3_7(profile):
    proto = PROFILES[profile]
    assert rep.effective_min_isr(proto, 3, 2) == (2 if proto.hw_waits_for_min_isr else 3)
    assert rep.effective_min_isr(proto, 2, 3) == 2


def test_the_hw_is_the_least_log_end_of_the_maximal_isr():
    proto = resolve_protocol("3.7")
    followers = {2: _f(7), 3: _f(9)}
    assert _hw(proto, 10, 5, (1, 2, 3), followers) == 7
    assert _hw(proto, 10, 7, (1, 2, 3), followers) is None
    assert _hw(proto, 10, 8, (1, 2, 3), followers) is None
    assert _hw(proto, 10, 5, (1, 3), followers) == 9
    assert _hw(proto, 10, 5, (1,), followers) == 10


@pytest.mark.parametrize("isr,pending,maximal", [
    ((1, 2), None, (1, 2)),            # nothing in flight: the committed ISR
    ((1, 2), (1, 2, 3), (1, 2, 3)),    # PendingExpandIsr: the new member counts at once
    ((1, 2, 3), (1,), (1, 2, 3)),      # PendingShrinkIsr: only once the controller commits it
])
def test_the_maximal_isr_counts_an_expansion_at_once_and_a_shrink_once_committed(
        isr, pending, maximal):
    assert rep.maximal_isr(isr, pending) == maximal


def test_an_isr_member_whose_log_end_is_unknown_holds_the_hw():
    """A follower not fetched since this broker became leader (log end -1) holds the HW; an
    ISR member the leader tracks no replica for (not assigned) does not count, as Kafka
    iterates `remoteReplicasMap`."""
    proto = resolve_protocol("3.7")
    followers = {2: _f(-1), 3: _f(9)}
    assert _hw(proto, 10, 5, (1, 2, 3), followers) is None
    assert _hw(proto, 10, 5, (1, 3, 4), followers) == 9


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_caught_up_follower_outside_the_isr_holds_the_hw(profile):
    """`maybeIncrementLeaderHW`: a follower caught up within replica.lag.time.max.ms holds the
    HW though outside the ISR; from 3.6 (KAFKA-15021) only while it is ISR-eligible."""
    proto = PROFILES[profile]
    recent = _f(12, caught_up_us=NOW_US - LAG_MS * 1000)
    stale = _f(12, caught_up_us=NOW_US - LAG_MS * 1000 - 1)
    assert _hw(proto, 20, 10, (1,), {2: recent}) == 12
    assert _hw(proto, 20, 10, (1,), {2: stale}) == 20
    ineligible = _hw(proto, 20, 10, (1,), {2: recent}, eligible=lambda r, f: False)
    assert ineligible == (20 if proto.hw_caught_up_eligible_only else 12)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_the_hw_waits_for_min_isr_from_kafka_15583(profile):
    """An ISR of one under min.insync.replicas 2: 3.7+ holds the HW (`isUnderMinIsr`)."""
    proto = PROFILES[profile]
    moved = _hw(proto, 10, 5, (1,), {}, min_isr=2)
    assert moved == (None if proto.hw_waits_for_min_isr else 10)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_isr_expansion(profile):
    proto = PROFILES[profile]
    join = rep.follower_joins_isr
    assert join(proto, False, False, 10, 10, 8, True)
    assert not join(proto, True, False, 10, 10, 8, True)
    assert not join(proto, False, True, 10, 10, 8, True)
    assert not join(proto, False, False, 9, 10, 8, True)
    # caught up to the HW but not to the start of the leader's epoch (KAFKA-7128, 2.1)
    assert join(proto, False, False, 10, 10, 12, True) is (not proto.isr_epoch_start_check)
    # not listed alive by the leader's metadata cache (KIP-841, 3.3)
    assert join(proto, False, False, 10, 10, 8, False) is (not proto.ineligible_replica_check)


@pytest.mark.parametrize("profile,kraft,stored,cached,eligible", [
    ("3.4.1", True, 7, 9, True),    # before KIP-903: no check
    ("3.6", False, 7, 9, True),     # ZooKeeper mode: no check
    ("3.6", True, 9, 9, True),      # the incarnation the cache knows
    ("3.6", True, 7, 9, False),     # a Fetch of an earlier incarnation (KAFKA-14139)
    ("3.6", True, -1, 9, True),     # a Fetch too old to carry the epoch
    ("3.6", True, None, 9, False),  # no Fetch seen yet
    ("3.6", True, 9, None, False),  # the cache holds no live registration
])
def test_isr_broker_epoch_eligible(profile, kraft, stored, cached, eligible):
    assert rep.isr_broker_epoch_eligible(PROFILES[profile], kraft, stored, cached) is eligible


@pytest.mark.parametrize("profile", list(PROFILES))
def test_isr_shrink(profile):
    proto = PROFILES[profile]
    out = rep.is_follower_out_of_sync
    assert out(proto, False, -1, 10, -1, 0, 100)
    assert not out(proto, True, 5, 10, 0, 100_000, 100)
    assert out(proto, True, 5, 10, 0, 100_001, 100)
    # an idle follower at the leader's log end (KAFKA-7152, 2.1)
    assert out(proto, True, 10, 10, 0, 200_000, 100) is (not proto.idle_follower_in_sync)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_what_a_follower_fetch_names(profile):
    proto = PROFILES[profile]
    mode = proto.follower_truncation
    every = rep.fetch_last_fetched_epoch(proto, False, 4)
    first = rep.fetch_last_fetched_epoch(proto, True, 4)
    assert (every, first) == {"high_watermark": (-1, -1), "kip101": (-1, 4), "kip279_leader_change": (-1, 4),
                              "kip279": (-1, 4),
                              "diverging_epoch": (4, 4)}[mode]


@pytest.mark.parametrize("profile", list(PROFILES))
def test_retention_evicts_producer_state_until_2_4(profile):
    proto = PROFILES[profile]
    assert rep.evicts_producer_state_on_retention(proto) is \
        newer("2.4", profile)  # KAFKA-7190
    assert rep.controller_channel_resends(proto)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_follower_fetch_answer_carries_the_hw_read_with_its_records_except_on_1_0_and_1_1(profile):
    """KAFKA-7104 (2.0): the HW read before the Fetch moved the follower's state; 1.0-1.1
    copied the leader's HW after the update into the answer (`updateLeaderReplicaInfo`)."""
    hw = rep.follower_fetch_high_watermark(PROFILES[profile], 5, 8)
    assert hw == (8 if profile in ("1.0", "1.1") else 5)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_which_leader_and_isr_restarts_a_followers_fetcher(profile):
    """`Partition.makeFollower`: a new leader always; a new epoch at the same leader from 2.1
    (KAFKA-7164); an equal epoch that keeps the leader never."""
    proto = PROFILES[profile]
    assert rep.makes_follower(proto, True, False) and rep.makes_follower(proto, True, True)
    assert not rep.makes_follower(proto, False, False)
    before_7164 = newer("2.1", profile)
    assert rep.makes_follower(proto, False, True) is not before_7164


@pytest.mark.parametrize(("error", "request_epoch", "current_epoch", "stops"), [
    ("FENCED_LEADER_EPOCH", 4, 4, True),    # the leader moved on: wait for the LeaderAndIsr
    ("FENCED_LEADER_EPOCH", 4, 5, False),   # sent before this follower's epoch changed: retry
    ("UNKNOWN_LEADER_EPOCH", 4, 4, False),  # the leader lags: back off and retry
    ("NOT_LEADER_OR_FOLLOWER", 4, 4, False),
])
def test_a_fenced_fetch_stops_fetching_the_partition(error, request_epoch, current_epoch, stops):
    """`AbstractFetcherThread.onPartitionFenced` (2.4.0, 3.7.0; AbstractFetcherThreadTest
    .testFencedFetch): the partition is marked failed and leaves the fetcher."""
    proto = PROFILES["2.4"]
    assert rep.fenced_fetch_stops_fetching(proto, getattr(E, error), request_epoch,
                                           current_epoch) is stops


def test_a_refused_alter_partition_stays_pending_from_2_7():
    """`Partition.handleAlterPartitionError`/`handleAlterPartitionUpdate` (2.7.0, 3.7.0); before,
    a refused ZooKeeper write left nothing pending (`Partition.updateIsr` at 2.6.0)."""
    new, old = resolve_protocol("3.7"), resolve_protocol("2.6")
    answer = rep.alter_partition_answer
    for proto in (new, old):  # an answer at the leader's epoch commits, a newer version too
        assert answer(proto, E.NONE, 5, 5, 2, 1) == "commit"
        assert answer(proto, E.NONE, 5, 5, 1, 1) == "commit"
    assert answer(new, E.NONE, 4, 5, 2, 1) == "pending"  # another leader epoch: ignored
    assert answer(new, E.NONE, 5, 5, 1, 2) == "pending"  # an older partition epoch: ignored
    assert answer(old, E.NONE, 4, 5, 2, 1) == "reset"
    assert answer(old, E.NONE, 5, 5, 1, 2) == "commit"
    for error in (E.INVALID_UPDATE_VERSION, E.FENCED_LEADER_EPOCH, E.UNKNOWN_TOPIC_OR_PARTITION,
                  E.INVALID_REQUEST, E.NEW_LEADER_ELECTED, E.UNKNOWN_TOPIC_ID):
        assert answer(new, error, 5, 5, 1, 1) == "pending", error
        assert answer(old, error, 5, 5, 1, 1) == "reset", error
    assert answer(new, E.INELIGIBLE_REPLICA, 5, 5, 1, 1) == "reset"
    assert answer(new, E.NOT_CONTROLLER, 5, 5, 1, 1) == "retry"
    assert answer(old, E.NOT_CONTROLLER, 5, 5, 1, 1) == "reset"
    assert newer("2.7", "2.6") and resolve_protocol("2.7").isr_change_stays_pending


@pytest.mark.parametrize("profile,request_id,held_id,partition_known,error", [
    ("3.3", 7, 7, True, E.NONE),
    ("3.3", 7, 7, False, E.UNKNOWN_TOPIC_OR_PARTITION),  # the topic lacks the partition
    ("3.3", 7, 8, True, E.UNKNOWN_TOPIC_ID),  # the topic was recreated under another id
    ("3.3", 7, None, False, E.UNKNOWN_TOPIC_ID),  # no such topic
    ("3.3", 0, None, False, E.UNKNOWN_TOPIC_OR_PARTITION),  # v0-v1 name the topic
    ("3.2", 7, 8, True, E.NONE),  # before KIP-841's v2 the name is what counts
    ("3.2", 7, None, False, E.UNKNOWN_TOPIC_OR_PARTITION),
])
def test_an_alter_partition_names_its_topic_by_id_from_3_3(profile, request_id, held_id,
                                                         partition_known, error):
    """`ReplicationControlManager.alterPartition` (`requestVersion > 1 ? UNKNOWN_TOPIC_ID`) and
    `KafkaController.processAlterPartition` (`topicName(topicId)`), 3.3.0-3.7.0."""
    assert rep.alter_partition_topic_error(resolve_protocol(profile), request_id, held_id,
                                           partition_known) == error


def test_a_stale_broker_epoch_answer_is_sent_again_later():
    """`AlterPartitionManager` (2.7.0, 3.7.0): STALE_BROKER_EPOCH refuses the whole request;
    the change stays queued and goes again 50 ms later, with the broker epoch of that time."""
    assert rep.alter_partition_request_retried(E.STALE_BROKER_EPOCH)
    for error in (E.NONE, E.NOT_CONTROLLER, E.INVALID_UPDATE_VERSION, E.INELIGIBLE_REPLICA):
        assert not rep.alter_partition_request_retried(error), error
    assert rep.ALTER_PARTITION_RETRY_MS == 50


def test_not_controller_is_taken_back_by_the_channel_from_2_7():
    """`BrokerToControllerRequestThread` (2.7.0) / `NodeToControllerRequestThread` (3.7.0):
    NOT_CONTROLLER puts the request back at the head of the queue for the next controller;
    `AlterPartitionManager` never sees it. Before 2.7 no channel: the leader wrote the ISR."""
    new, old = resolve_protocol("2.7"), resolve_protocol("2.6")
    assert rep.alter_partition_requeued(new, E.NOT_CONTROLLER)
    assert not rep.alter_partition_requeued(old, E.NOT_CONTROLLER)
    for error in (E.NONE, E.STALE_BROKER_EPOCH, E.FENCED_LEADER_EPOCH, E.INELIGIBLE_REPLICA):
        assert not rep.alter_partition_requeued(new, error), error


def test_alter_partition_carries_isr_epochs_from_kip903():
    """`Partition.addBrokerEpochToIsr` (3.5.0-3.7.0): the leader's own epoch, a follower's
    from its last Fetch, -1 for one with none; nothing before 3.5 or in ZooKeeper mode."""
    epochs = rep.alter_partition_isr_epochs
    fetched = {2: 20, 3: None}
    p35, p34 = resolve_protocol("3.5"), resolve_protocol("3.4.1")
    assert epochs(p35, True, (1, 2, 3), 1, 10, fetched) == (10, 20, -1)
    assert epochs(p35, True, (1, 4), 1, 10, fetched) == (10, -1)  # never fetched at all
    assert epochs(p35, False, (1, 2), 1, 10, fetched) == ()  # ZooKeeper mode
    assert epochs(p34, True, (1, 2), 1, 10, fetched) == ()


def test_an_epoch_answer_from_before_an_epoch_change_is_dropped_from_2_2():
    """`AbstractFetcherThread.truncateToEpochEndOffsets` (KAFKA-7786: 2.1.1, 2.2.0); 2.1.0
    checked only that the partition was still fetched."""
    stale = rep.epoch_answer_stale
    p22, p21 = resolve_protocol("2.2"), resolve_protocol("2.1")
    assert stale(p22, "kip279", 4, 5)
    assert not stale(p22, "kip279", 5, 5)
    assert not stale(p21, "kip279", 4, 5)
    assert not stale(p22, "diverging_epoch", 4, 5)  # no OffsetsForLeaderEpoch asked


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_log_with_no_epoch_truncates_to_its_hw_unasked_from_2_1(profile):
    """KAFKA-6859 (2.1.0) and KAFKA-7897 (2.1.1, 2.2.0): a truncating partition with no latest
    epoch is not asked about; 2.0.0 sent OffsetsForLeaderEpoch for epoch -1. A log with an
    epoch is asked about in every release, and below IBP 0.11 every follower truncates to its
    HW anyway."""
    proto, unasked = PROFILES[profile], rep.truncates_to_hw_unasked
    from_6859 = not newer("2.1", profile)
    for mode in ("kip101", "kip279_leader_change", "kip279", "diverging_epoch"):
        assert unasked(proto, mode, -1) is from_6859
        assert not unasked(proto, mode, 0)
    assert not unasked(proto, "high_watermark", -1)


def test_one_alter_partition_in_flight_per_partition_from_2_7():
    """`AlterPartitionManager.submit`'s `putIfAbsent` (2.7.0, 3.7.0); before, the leader's own
    ZooKeeper write."""
    assert rep.one_alter_partition_per_partition(resolve_protocol("2.7"))
    assert not rep.one_alter_partition_per_partition(resolve_protocol("2.6"))


@pytest.mark.parametrize("profile,sent", [("2.6", -1), ("2.7", 12), ("3.7", 12)])
def test_an_alter_partition_carries_the_broker_epoch_from_kip_497(profile, sent):
    """2.7's AlterPartitionManager stamps the broker epoch; before, the leader wrote the ISR
    to ZooKeeper itself and the model's stand-in request carries -1."""
    assert rep.alter_partition_broker_epoch(resolve_protocol(profile), 12) == sent


@pytest.mark.parametrize("req_epoch,live_epoch,stale", [
    (12, 12, False),
    (11, 12, True),     # an older registration of the sender
    (12, None, True),   # not a live broker the controller knows
    (-1, None, False),  # a pre-2.7 leader's own ZooKeeper write: nothing to check
])
def test_a_zk_controller_refuses_an_alter_partition_from_a_stale_registration(
        req_epoch, live_epoch, stale):
    assert rep.zk_alter_partition_epoch_stale(req_epoch, live_epoch) is stale
