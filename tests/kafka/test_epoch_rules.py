"""The epoch decision tables of the reference, checked directly on the model's pieces."""

from __future__ import annotations

import pytest

from sim.kafka.log import Log
from sim.kafka.messages import Batch
from sim.kafka.partition import Partition
from sim.kafka.profiles import resolve_protocol


def test_end_offset_for_epoch_is_kip279():
    log = Log()
    for epoch, count in ((0, 3), (2, 2), (5, 4)):
        log.append(count, epoch, Batch(f"b{epoch}", "p", count, 0), 0)
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)  # largest epoch <= 1 is 0
    assert log.end_offset_for_epoch(4) == (2, 5)
    assert log.end_offset_for_epoch(5) == (5, 9)  # the latest epoch: the log end offset
    # newer than every cached epoch: UNDEFINED ("The requested epoch is larger than any known
    # epoch", `LeaderEpochFileCache.endOffsetFor`), not the latest epoch's end
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert Log().end_offset_for_epoch(3) == (-1, -1)
    log.truncate_to(3)
    assert log.leo == 3 and log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(2) == (-1, -1)


def test_end_offset_for_an_epoch_older_than_the_cache():
    """A log that began in epoch 2 (an unclean leader's, say) answers epoch 0 with that epoch
    and the start of its first epoch, so the asker truncates there (`endOffsetFor`'s floorEntry
    == null case); a negative epoch is UNDEFINED."""
    log = Log()
    log.truncate_fully_and_start_at(4)
    log.append(3, 2, Batch("b", "p", 3, 0), 0)
    assert log.epochs == [(2, 4)]
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    log.resolves_epoch_conflicts = False  # 2.0 (before KAFKA-7415): UNDEFINED, to the HW
    assert log.end_offset_for_epoch(0) == (-1, -1)


@pytest.mark.parametrize("resolves,cache", [
    (True, [(1, 7)]),             # 2.1+: the conflicting entries go (`truncateAndAppend`)
    (False, [(1, 5), (2, 6)]),    # 2.0: an older epoch is ignored
])
def test_an_epoch_going_backwards_truncates_the_cache_from_2_1(resolves, cache):
    """`LeaderEpochFileCacheTest.shouldEnforceMonotonicallyIncreasingEpochs`: assign (1, 5),
    (2, 6), then (1, 7)."""
    log = Log(resolves)
    for epoch, start in ((1, 5), (2, 6), (1, 7)):
        log.assign_epoch_start(epoch, start)
    assert log.epochs == cache


def test_end_offset_for_epoch_v0_is_kip101():
    """OffsetsForLeaderEpoch v0 (0.11-1.1): the latest epoch's answer is the log end; any
    other is the start of the first later epoch, cached or not; no later epoch, or one older
    than the whole cache, is UNDEFINED (-1)."""
    log = Log()
    for epoch, count in ((1, 3), (2, 2), (5, 4)):
        log.append(count, epoch, Batch(f"b{epoch}", "p", count, 0), 0)
    assert log.end_offset_for_epoch_v0(5) == 9
    assert log.end_offset_for_epoch_v0(1) == 3
    assert log.end_offset_for_epoch_v0(3) == 5  # not cached: the start of epoch 5, unlike KIP-279
    assert log.end_offset_for_epoch_v0(6) == -1
    assert log.end_offset_for_epoch_v0(0) == -1
    assert Log().end_offset_for_epoch_v0(0) == -1


class _Owner:
    def __init__(self):
        self.events = []

    def emit(self, kind, fields):
        self.events.append((kind, fields))


def _metadata(profile="proposed", mutant=""):
    from sim.kafka.client_metadata import ClientMetadata
    owner = _Owner()
    return ClientMetadata(owner, resolve_protocol(profile, mutant=mutant)), owner


def _resp(*parts):
    from sim.kafka.messages import MetadataResponse
    return MetadataResponse(1, (1, 2, 3), tuple(parts))


def test_client_metadata_epoch_rules():
    """ref §3.1: older rejected, equal accepted, topic id change allows lower."""
    meta, owner = _metadata()
    meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    meta.apply_response(_resp(("t-0", 1, 1, 5)), "b3")
    assert meta.current_leader("t-0") == (2, 6) and owner.events[-1][0] == "metadata_rejected"
    meta.apply_response(_resp(("t-0", 1, 3, 6)), "b2")
    assert meta.current_leader("t-0") == (3, 6)
    meta.apply_response(_resp(("t-0", 2, 1, 0)), "b2")
    assert meta.current_leader("t-0") == (1, 0)


@pytest.mark.parametrize("profile,accepted", [("2.6", False), ("3.4.0", True)])
def test_a_recreated_topics_lower_epoch_needs_a_topic_id_aware_client(profile, accepted):
    """ref §4 row 10: before KAFKA-12257/13488 a client rejects the recreated topic's epoch 0
    forever; from 3.x the new topic id lets it through."""
    meta, owner = _metadata(profile)
    meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    meta.apply_response(_resp(("t-0", 2, 1, 0)), "b2")
    assert (meta.current_leader("t-0") == (1, 0)) is accepted
    assert (owner.events[-1][0] == "metadata_rejected") is not accepted


def test_stale_metadata_accepted_before_kafka_7738_and_by_mutant():
    for profile, mutant in (("1.0", ""), ("proposed", "client_accepts_stale_metadata")):
        meta, _ = _metadata(profile, mutant)
        meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
        meta.apply_response(_resp(("t-0", 1, 1, 5)), "b3")
        assert meta.current_leader("t-0") == (1, 5)


def test_hint_rule():
    """ref §3.3.2: strictly newer epoch and a known node only."""
    meta, _ = _metadata()
    meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    assert not meta.apply_hint("t-0", 3, 6, (), "b2")
    assert not meta.apply_hint("t-0", 9, 7, (), "b2")
    assert not meta.apply_hint("t-0", -1, 7, (), "b2")
    assert meta.apply_hint("t-0", 3, 7, (), "b2") and meta.current_leader("t-0") == (3, 7)
    assert meta.apply_hint("t-0", 9, 8, (9,), "b2")
    equal, _ = _metadata(mutant="hint_accepts_equal_epoch")
    equal.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    assert equal.apply_hint("t-0", 3, 6, (), "b2")


def test_a_new_leader_caches_its_epoch_at_election_only_from_kafka_7415():
    """KAFKA-7415 (2.1): `makeLeader` writes (new epoch, log end) into the cache. Before, the
    epoch entered it with the first batch, so a 1.0 leader that has not written in epoch 2
    answers a follower's epoch 1, which it never had, with UNDEFINED_EPOCH_OFFSET (the
    follower truncates to its HW) rather than with the start of epoch 2."""
    from types import SimpleNamespace
    for cache_epoch, answer in ((True, 4), (False, -1)):
        log = Log()
        log.append(4, 0, Batch("b0", "p", 4, 0), 0)
        p = Partition("t-0", 1, log, 1)
        state = SimpleNamespace(partition_epoch=2, leader_epoch=2, replicas=(1, 2), isr=(1, 2))
        assert p.make_leader(state, 0, cache_epoch)
        assert log.end_offset_for_epoch_v0(1) == answer, cache_epoch
        log.append(2, 2, Batch("b1", "p", 2, 0), 0)  # the first batch of epoch 2 caches it
        assert log.end_offset_for_epoch_v0(1) == 4 and log.epochs == [(0, 0), (2, 4)]


def test_the_epoch_cache_is_trimmed_when_the_log_start_moves():
    """`LeaderEpochFileCache.truncateFromStart` (`clearAndFlushEarliest` in 0.11-2.0), called on
    retention and DeleteRecords: entries at or below the new log start go and the last of them
    restarts there, so OffsetsForLeaderEpoch never names an offset below the log start."""
    log = Log()
    for epoch, count in ((0, 5), (2, 4), (5, 3)):
        log.append(count, epoch, Batch(f"b{epoch}", "p", count, 0), 0)
    log.hw = log.leo
    assert log.end_offset_for_epoch(0) == (0, 5) and log.end_offset_for_epoch(1) == (0, 5)
    log.advance_start(7)  # inside epoch 2's batch, which stays
    assert log.log_start_offset == 7 and log.epochs == [(2, 7), (5, 9)]
    assert log.end_offset_for_epoch(0) == (0, 7)  # older than the cache: its first start
    assert log.end_offset_for_epoch(2) == (2, 9)
    assert log.end_offset_for_epoch_v0(1) == -1
    log.advance_start(9)  # exactly where epoch 5 starts
    assert log.epochs == [(5, 9)]
