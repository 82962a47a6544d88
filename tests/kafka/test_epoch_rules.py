"""The epoch decision tables of the reference, checked directly on the model's pieces."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.log import Log
from sim.kafka.messages import Batch, PartitionState
from sim.kafka.partition import Partition
from sim.kafka.profiles import resolve_protocol


def _partition(epoch: int, leader: int = 1, me: int = 1) -> Partition:
    p = Partition("t-0", 1, Log(), me)
    st = PartitionState("t-0", 1, leader, epoch, epoch, (1, 2, 3), (1, 2, 3))
    (p.make_leader(st, 0) if leader == me else p.make_follower(st))
    return p


@pytest.mark.parametrize("remote,expected", [(-1, E.NONE), (4, E.FENCED_LEADER_EPOCH),
                                             (5, E.NONE), (6, E.UNKNOWN_LEADER_EPOCH)])
def test_check_current_leader_epoch(remote, expected):
    """ref §1.1: absent skips; local > remote fenced; local < remote unknown."""
    assert _partition(5).check_current_leader_epoch(remote) == expected


def test_epoch_check_comes_before_leadership():
    follower = _partition(5, leader=2)
    assert follower.local_log_error(4, True) == E.FENCED_LEADER_EPOCH
    assert follower.local_log_error(6, True) == E.UNKNOWN_LEADER_EPOCH
    assert follower.local_log_error(5, True) == E.NOT_LEADER_OR_FOLLOWER
    assert follower.local_log_error(-1, True) == E.NOT_LEADER_OR_FOLLOWER


class _StopReplicaJudge:
    """Just enough of a Broker to call its StopReplica epoch rule."""

    def __init__(self, profile, mutant=""):
        self.protocol = resolve_protocol(profile, mutant=mutant)

    from sim.kafka.broker import Broker
    allowed = Broker._stop_replica_allowed


@pytest.mark.parametrize("profile,req,cur,ok", [
    ("2.6", 4, 5, False), ("2.6", 5, 5, False), ("2.6", 6, 5, True),
    ("3.4.0", 5, 5, False), ("3.4.1", 5, 5, True), ("3.4.1", 4, 5, False),
    ("proposed", -1, 5, True), ("proposed", -2, 5, True), ("2.6", -2, 99, True),
])
def test_stop_replica_rule(profile, req, cur, ok):
    """ref §1.5: sentinels -1/-2 bypass; older fenced; equal depends on the version."""
    assert _StopReplicaJudge(profile).allowed(req, cur) is ok


def test_stop_replica_mutants():
    assert _StopReplicaJudge("proposed", "no_stop_replica_epoch_check").allowed(1, 5) is True
    assert _StopReplicaJudge("3.4.1", "stop_replica_equal_epoch_flipped").allowed(5, 5) is False


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
    log.assign_epoch_start(2, 4)
    log.append(3, 2, Batch("b", "p", 3, 0), 0)
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(-1) == (-1, -1)


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
    assert meta.leader("t-0") == (2, 6) and owner.events[-1][0] == "metadata_rejected"
    meta.apply_response(_resp(("t-0", 1, 3, 6)), "b2")
    assert meta.leader("t-0") == (3, 6)
    meta.apply_response(_resp(("t-0", 2, 1, 0)), "b2")
    assert meta.leader("t-0") == (1, 0)


@pytest.mark.parametrize("profile,accepted", [("2.6", False), ("3.4.0", True)])
def test_a_recreated_topics_lower_epoch_needs_a_topic_id_aware_client(profile, accepted):
    """ref §4 row 10: before KAFKA-12257/13488 a client rejects the recreated topic's epoch 0
    forever; from 3.x the new topic id lets it through."""
    meta, owner = _metadata(profile)
    meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    meta.apply_response(_resp(("t-0", 2, 1, 0)), "b2")
    assert (meta.leader("t-0") == (1, 0)) is accepted
    assert (owner.events[-1][0] == "metadata_rejected") is not accepted


def test_stale_metadata_accepted_before_kafka_7738_and_by_mutant():
    for profile, mutant in (("1.0", ""), ("proposed", "client_accepts_stale_metadata")):
        meta, _ = _metadata(profile, mutant)
        meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
        meta.apply_response(_resp(("t-0", 1, 1, 5)), "b3")
        assert meta.leader("t-0") == (1, 5)


def test_hint_rule():
    """ref §3.3.2: strictly newer epoch and a known node only."""
    meta, _ = _metadata()
    meta.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    assert not meta.apply_hint("t-0", 3, 6, (), "b2")
    assert not meta.apply_hint("t-0", 9, 7, (), "b2")
    assert not meta.apply_hint("t-0", -1, 7, (), "b2")
    assert meta.apply_hint("t-0", 3, 7, (), "b2") and meta.leader("t-0") == (3, 7)
    assert meta.apply_hint("t-0", 9, 8, (9,), "b2")
    equal, _ = _metadata(mutant="hint_accepts_equal_epoch")
    equal.apply_response(_resp(("t-0", 1, 2, 6)), "b1")
    assert equal.apply_hint("t-0", 3, 6, (), "b2")


# -- control requests on the broker (ref §1.4 broker steps 1-2) ------------------------------
_ONE_TOPIC = 'expect = "pass"\n[[topics]]\nname = "t"\n'


def _broker_replies(body, broker_epoch=10, controller_epoch=5):
    from types import SimpleNamespace

    from tests.kafka import build_cluster
    cluster, _ = build_cluster(_ONE_TOPIC)
    broker = cluster.brokers[1]
    broker.broker_epoch, broker.controller_epoch = broker_epoch, controller_epoch
    replies = []
    broker._reply = lambda msg, kind, resp: replies.append(resp)
    broker.on_leader_and_isr(SimpleNamespace(src="c1", kind="LeaderAndIsr", body=body))
    return broker, replies


def test_a_stale_broker_epoch_is_judged_before_a_stale_controller_epoch():
    from sim.kafka.messages import LeaderAndIsr
    _, replies = _broker_replies(LeaderAndIsr("c1", 4, 9, 1, ()))
    assert [r.error for r in replies] == [E.STALE_BROKER_EPOCH]
    _, replies = _broker_replies(LeaderAndIsr("c1", 4, 10, 1, ()))
    assert [r.error for r in replies] == [E.STALE_CONTROLLER_EPOCH]


def test_leader_and_isr_for_a_replica_not_assigned_here_is_judged_by_epoch_first():
    from sim.kafka.messages import LeaderAndIsr
    stale = PartitionState("t-0", 1, 2, -1, 0, (2, 3), (2, 3))  # not newer than unhosted (-1)
    newer = PartitionState("t-0", 1, 2, 3, 3, (2, 3), (2, 3))
    broker, replies = _broker_replies(LeaderAndIsr("c1", 5, 10, 1, (newer,)))
    assert replies[0].partition_errors == (("t-0", E.UNKNOWN_TOPIC_OR_PARTITION),)
    assert "t-0" not in broker.partitions
    broker, replies = _broker_replies(LeaderAndIsr("c1", 5, 10, 1, (stale,)))
    assert replies[0].partition_errors == (("t-0", E.STALE_CONTROLLER_EPOCH),)


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
