"""`sim.kafka.rules.epochs`: the CurrentLeaderEpoch checks (ref §1.1), across profiles."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES, newer
from sim.kafka.rules import epochs


@pytest.mark.parametrize("local,remote,expected", [
    (5, -1, E.NONE), (5, 4, E.FENCED_LEADER_EPOCH), (5, 5, E.NONE),
    (5, 6, E.UNKNOWN_LEADER_EPOCH), (-1, 0, E.UNKNOWN_LEADER_EPOCH), (0, -2, E.NONE),
])
def test_check_current_leader_epoch(local, remote, expected):
    """`Partition.checkCurrentLeaderEpoch`: absent skips; local > remote fenced; local <
    remote unknown."""
    assert epochs.check_current_leader_epoch(local, remote) == expected


@pytest.mark.parametrize("remote,is_leader,expected", [
    (4, False, E.FENCED_LEADER_EPOCH), (6, False, E.UNKNOWN_LEADER_EPOCH),
    (5, False, E.NOT_LEADER_OR_FOLLOWER), (-1, False, E.NOT_LEADER_OR_FOLLOWER),
    (5, True, E.NONE), (4, True, E.FENCED_LEADER_EPOCH),
])
def test_get_local_log_checks_the_epoch_before_leadership(remote, is_leader, expected):
    assert epochs.get_local_log(5, is_leader, remote, True) == expected


def test_get_local_log_without_the_check_or_the_leader_requirement():
    assert epochs.get_local_log(5, False, 4, True, check_epoch=False) == E.NOT_LEADER_OR_FOLLOWER
    assert epochs.get_local_log(5, False, 4, False, check_epoch=False) == E.NONE
    assert epochs.get_local_log(5, False, 5, False) == E.NONE


@pytest.mark.parametrize("profile", list(PROFILES))
def test_produce_checks_its_epoch_only_under_kip_359(profile):
    """A stale leader (local epoch 5) gets a Produce from a client that knows epoch 6: only
    the never-shipped KIP-359 answers UNKNOWN_LEADER_EPOCH; every release appends."""
    proto = PROFILES[profile]
    expected = E.UNKNOWN_LEADER_EPOCH if proto.produce_epoch_check else E.NONE
    assert epochs.produce_local_log(proto, 5, True, 6) == expected


@pytest.mark.parametrize("profile", list(PROFILES))
def test_fetch_checks_its_epoch_from_kip_320(profile):
    """A follower's Fetch naming epoch 4 to a leader at 5: FENCED_LEADER_EPOCH from 2.1
    (KIP-320); before, the field does not exist and the leader serves it."""
    proto = PROFILES[profile]
    expected = E.FENCED_LEADER_EPOCH if proto.fetch_epoch_check else E.NONE
    assert epochs.fetch_local_log(proto, 5, True, 4) == expected
    assert proto.fetch_epoch_check is not newer("2.1", profile)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_consumer_with_client_metadata_may_read_from_a_follower_from_kip_392(profile):
    """`ReplicaManager.fetchMessages` (2.4.0, KAFKA-8443 and KAFKA-9004): a follower's Fetch
    and a consumer's without ClientMetadata need the leader; a consumer's Fetch v11+ does not."""
    proto = PROFILES[profile]
    kip_392 = not newer("2.4", profile)
    assert proto.follower_fetch is kip_392
    assert epochs.fetch_only_from_leader(proto, 2, True)
    assert epochs.fetch_only_from_leader(proto, -1, False)
    assert epochs.fetch_only_from_leader(proto, -1, True) is not kip_392
    # a follower at epoch 5 (PartitionTest.testLeaderEpochValidationOnFollower, 3.7.0)
    reads = epochs.fetch_local_log(proto, 5, False, 5, False)
    assert reads == E.NONE and epochs.fetch_local_log(proto, 5, False, 5) == E.NOT_LEADER_OR_FOLLOWER
