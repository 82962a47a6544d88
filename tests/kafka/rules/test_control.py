"""`sim.kafka.rules.control`: how a broker judges LeaderAndIsr, StopReplica and UpdateMetadata
(ref §1.4, §1.5), across profiles."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES, resolve_protocol
from sim.kafka.rules import control
from sim.kafka.rules.controller import zk_alter_partition_error
from sim.kafka.store import PState


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_stale_broker_epoch_is_judged_before_a_stale_controller_epoch(profile):
    """KafkaApis checks the broker epoch (KIP-380, 2.2+) before ReplicaManager sees the
    controller epoch; -1 means the controller sent none."""
    proto = PROFILES[profile]
    stale_broker = E.STALE_BROKER_EPOCH if proto.broker_epoch_check else E.STALE_CONTROLLER_EPOCH
    assert control.control_request_error(proto, 9, 10, 4, 5) == stale_broker
    assert control.control_request_error(proto, 10, 10, 4, 5) == E.STALE_CONTROLLER_EPOCH
    assert control.control_request_error(proto, -1, 10, 5, 5) == E.NONE
    newer = E.UNKNOWN_SERVER_ERROR if proto.broker_epoch_check and not \
        proto.newer_broker_epoch_accepted else E.NONE
    assert control.control_request_error(proto, 11, 10, 6, 5) == newer  # a newer one


@pytest.mark.parametrize("profile,newer", [("2.1", E.NONE), ("2.2", E.UNKNOWN_SERVER_ERROR),
                                           ("2.5", E.UNKNOWN_SERVER_ERROR), ("2.6", E.NONE)])
def test_a_newer_broker_epoch_threw_from_2_2_until_kafka_9839(profile, newer):
    """2.2.0-2.5.0's `isBrokerEpochStale` threw IllegalStateException for a newer broker
    epoch (answered UNKNOWN_SERVER_ERROR); 2.5.1/2.6.0 apply the request. Before 2.2 there is
    no broker epoch to compare."""
    assert control.control_request_error(PROFILES[profile], 31, 30, 1, 1) == newer


def _lai(profile, hosted=True, same_topic_id=True, local=5, local_pe=5, epoch=6, pe=6,
         assigned=True):
    return control.leader_and_isr_partition(PROFILES[profile], hosted, same_topic_id, local,
                                            local_pe, epoch, pe, assigned)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_leader_and_isr_applies_only_a_newer_epoch_for_an_assigned_replica(profile):
    assert _lai(profile) == control.BECOME
    assert _lai(profile, epoch=5) == control.STALE
    assert _lai(profile, epoch=4, pe=9) == control.STALE
    assert _lai(profile, assigned=False) == control.NOT_ASSIGNED  # judged for a newer epoch only
    assert _lai(profile, epoch=4, assigned=False) == control.STALE
    assert _lai(profile, same_topic_id=False) == control.OTHER_TOPIC_ID
    assert _lai(profile, hosted=False, same_topic_id=False, local=-1) == control.BECOME


def test_an_isr_change_at_the_same_leader_epoch_is_applied_only_without_the_epoch_bump():
    """KAFKA-15021 (KRaft): a controller-initiated ISR removal keeps the leader epoch and
    bumps the partition epoch, which `makeLeader`/`makeFollower` apply."""
    bumps = resolve_protocol("3.7")
    keeps = resolve_protocol("3.7", {"isr_shrink_bumps_epoch": False})
    args = (True, True, 5, 5, 5, 6, True)
    assert control.leader_and_isr_partition(bumps, *args) == control.STALE
    assert control.leader_and_isr_partition(keeps, *args) == control.BECOME
    assert control.leader_and_isr_partition(keeps, True, True, 5, 6, 5, 6, True) == control.STALE


@pytest.mark.parametrize("profile,req,local,ok", [
    ("2.6", 4, 5, False), ("2.6", 5, 5, False), ("2.6", 6, 5, True),
    ("3.4.0", 5, 5, False), ("3.4.1", 5, 5, True), ("3.4.1", 4, 5, False),
    ("3.7", 5, 5, True), ("proposed", -1, 5, True), ("proposed", -2, 5, True),
    ("2.6", -2, 99, True), ("2.5", -1, 99, True),
])
def test_stop_replica_epoch_rule(profile, req, local, ok):
    """KIP-570: sentinels -1/-2 bypass; older fenced; equal rejected 2.6-3.4.0 and accepted
    from 3.4.1 (KAFKA-13972)."""
    assert control.stop_replica_epoch_allowed(PROFILES[profile], req, local) is ok


@pytest.mark.parametrize("req,local,fence", [(-1, 5, None), (-2, 5, 2**31 - 1), (7, 5, 7),
                                             (4, 5, 5), (4, None, 4), (-2, None, 2**31 - 1)])
def test_delete_fence_epoch(req, local, fence):
    assert control.delete_fence_epoch(req, local) == fence


@pytest.mark.parametrize("prev,topic_id,fence,kept", [
    (None, 1, 4, (1, 4)),
    ((1, 4), 1, 6, (1, 6)),   # a later deletion raises the fence
    ((1, 6), 1, 4, (1, 6)),   # an older StopReplica delivered late must not lower it
    ((1, 6), 2, 0, (2, 0)),   # a new incarnation of the topic starts its own fence
])
def test_kept_delete_fence_only_rises(prev, topic_id, fence, kept):
    assert control.kept_delete_fence(prev, topic_id, fence) == kept


def test_is_stray():
    assert control.is_stray(False, None, (1, 5))
    assert control.is_stray(False, (1, 4), (1, 5))
    assert not control.is_stray(False, (1, 6), (1, 5))  # brought online by a later request
    assert not control.is_stray(True, None, (1, 5))


@pytest.mark.parametrize("profile", list(PROFILES))
def test_update_metadata_is_fenced_by_order_only_with_the_fence(profile):
    proto = PROFILES[profile]
    assert control.update_metadata_part_taken(proto, None, (1, 5))
    assert control.update_metadata_part_taken(proto, (1, 4), (1, 5))
    assert control.update_metadata_part_taken(proto, (1, 6), (1, 5)) is \
        (not proto.update_metadata_fence)


def test_a_metadata_answer_names_no_leader_for_one_the_cache_does_not_list_alive():
    """`MetadataCache.getPartitionMetadata` (2.6.0; `ZkMetadataCache` at 3.4.0): a leader not
    among the cache's live brokers is answered as NO_LEADER_ID with LEADER_NOT_AVAILABLE."""
    assert control.metadata_answer_leader(2, (1, 2, 3)) == 2
    assert control.metadata_answer_leader(2, (1, 3)) == E.NO_LEADER
    assert control.metadata_answer_leader(E.NO_LEADER, (1, 2)) == E.NO_LEADER


def _zk_answer(profile: str, leader_epoch: int, partition_epoch: int, isr=(1, 2),
               ineligible: bool = False):
    current = PState(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=4,
                     partition_epoch=7)
    return zk_alter_partition_error(resolve_protocol(profile), 1, leader_epoch,
                                    partition_epoch, isr, current, ineligible)


@pytest.mark.parametrize("profile", ["2.7", "3.2"])
def test_a_zk_controller_before_kafka_14154_fences_only_a_lower_epoch_and_writes_at_the_version(
        profile):
    """`processAlterIsr`/`processAlterPartition` at 2.7.0-3.2.0."""
    assert _zk_answer(profile, 3, 7) == (E.FENCED_LEADER_EPOCH, False)
    assert _zk_answer(profile, 4, 9, (1, 2, 3)) == (E.NONE, True)  # equalsIgnoreZk
    assert _zk_answer(profile, 4, 9) == (E.INVALID_UPDATE_VERSION, False)  # the ZK write
    assert _zk_answer(profile, 4, 6) == (E.INVALID_UPDATE_VERSION, False)
    assert _zk_answer(profile, 4, 7, ineligible=True) == (E.NONE, False)  # no KIP-841 yet


@pytest.mark.parametrize("profile", ["3.3", "3.7"])
def test_a_zk_controller_from_kafka_14154_sends_a_leader_ahead_of_it_to_the_new_controller(
        profile):
    """`processAlterPartition` at 3.3.0 and 3.7.0."""
    assert _zk_answer(profile, 4, 9) == (E.NOT_CONTROLLER, False)
    assert _zk_answer(profile, 5, 7) == (E.NOT_CONTROLLER, False)
    assert _zk_answer(profile, 4, 9, (1, 2, 3)) == (E.NOT_CONTROLLER, False)
    assert _zk_answer(profile, 3, 7) == (E.FENCED_LEADER_EPOCH, False)
    assert _zk_answer(profile, 4, 6, (1, 2, 3)) == (E.NONE, True)
    assert _zk_answer(profile, 4, 6) == (E.INVALID_UPDATE_VERSION, False)
    assert _zk_answer(profile, 4, 7, ineligible=True) == (E.INELIGIBLE_REPLICA, False)
    assert _zk_answer(profile, 4, 7) == (E.NONE, False)
