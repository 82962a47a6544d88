"""`sim.kafka.rules.offsets`: how a broker answers ListOffsets for its earliest and latest
offsets (`Partition.fetchOffsetForTimestamp` at 2.1.0, 2.2.0, 2.6.0 and 3.7.0), across
profiles; the timestamp lookups are tests/kafka/rules/test_offsets_by_timestamp.py."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES, newer
from sim.kafka.rules import offsets as O

# a leader at epoch 5 whose log runs 10..40 with its HW at 30; its epoch started at 25, and
# its leader-epoch cache starts with epoch 2 at offset 8
LEADER = O.LogView(leader_epoch=5, is_leader=True, log_start_offset=10, log_end_offset=40,
                   high_watermark=30, epoch_start_offset=25, first_cached_epoch=(2, 8))
FOLLOWER = LEADER._replace(is_leader=False, epoch_start_offset=-1)
CONSUMER, FOLLOWER_ID = O.CONSUMER_REPLICA_ID, 3


class _Got(NamedTuple):
    error: int
    offset: int
    leader_epoch: int


def _ask(profile, replica_id=CONSUMER, ts=O.LATEST_TIMESTAMP, epoch=5, view=LEADER):
    """The answer without its timestamp, which the earliest and latest offsets leave -1."""
    answer = O.fetch_offset_for_timestamp(PROFILES[profile], replica_id, ts, epoch, view)
    assert answer.timestamp == -1
    return _Got(*answer[:3])


def _names_epoch(profile) -> bool:
    """ListOffsets v4+ (KIP-320, 2.1) has room for a leader epoch; 2.2 fills it (KAFKA-7568)."""
    proto = PROFILES[profile]
    return proto.fetch_epoch_check and proto.list_offsets_answers_epoch


@pytest.mark.parametrize("profile", list(PROFILES))
def test_latest_is_the_hw_for_a_consumer_and_the_log_end_for_a_broker(profile):
    epoch = 5 if _names_epoch(profile) else -1
    assert _ask(profile) == (E.NONE, 30, epoch)
    assert _ask(profile, FOLLOWER_ID) == (E.NONE, 40, epoch)
    assert _ask(profile, O.DEBUGGING_REPLICA_ID) == (E.NONE, 40, epoch)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_earliest_is_the_log_start_with_the_first_cached_epoch_at_or_below_it(profile):
    with_epoch = _names_epoch(profile)
    assert _ask(profile, ts=O.EARLIEST_TIMESTAMP) == (E.NONE, 10, 2 if with_epoch else -1)
    # the first cached epoch starts above the log start (a format upgrade): no epoch named
    later = LEADER._replace(first_cached_epoch=(2, 12))
    assert _ask(profile, ts=O.EARLIEST_TIMESTAMP, view=later) == (E.NONE, 10, -1)
    empty = LEADER._replace(first_cached_epoch=None)
    assert _ask(profile, ts=O.EARLIEST_TIMESTAMP, view=empty) == (E.NONE, 10, -1)


@pytest.mark.parametrize("profile", list(PROFILES))
@pytest.mark.parametrize("epoch,fenced", [(4, E.FENCED_LEADER_EPOCH), (6, E.UNKNOWN_LEADER_EPOCH),
                                          (-1, E.NONE)])
def test_the_current_leader_epoch_is_checked_from_kip_320(profile, epoch, fenced):
    """ListOffsets v4 (2.1): a consumer that knows an older epoch is fenced, one that knows a
    newer one is ahead of this broker; -1 (an older client) skips the check. Before KIP-320
    the field does not exist and the leader answers."""
    expected = fenced if PROFILES[profile].fetch_epoch_check else E.NONE
    for ts in (O.LATEST_TIMESTAMP, O.EARLIEST_TIMESTAMP):
        assert _ask(profile, ts=ts, epoch=epoch).error == expected


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_follower_answers_not_leader_unless_asked_with_the_debugging_id(profile):
    """`fetchOnlyFromLeader = replicaId != DEBUGGING_REPLICA_ID`; the epoch check comes
    first, so a stale epoch on a follower is fenced rather than redirected."""
    proto = PROFILES[profile]
    assert _ask(profile, view=FOLLOWER) == (E.NOT_LEADER_OR_FOLLOWER, -1, -1)
    assert _ask(profile, FOLLOWER_ID, view=FOLLOWER).error == E.NOT_LEADER_OR_FOLLOWER
    assert _ask(profile, O.DEBUGGING_REPLICA_ID, view=FOLLOWER).offset == 40
    stale = E.FENCED_LEADER_EPOCH if proto.fetch_epoch_check else E.NOT_LEADER_OR_FOLLOWER
    assert _ask(profile, epoch=4, view=FOLLOWER).error == stale


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_new_leader_whose_hw_lags_its_epoch_start_refuses_a_consumers_latest(profile):
    """KIP-207 (2.2): HW 30 below the epoch's start 35 is OFFSET_NOT_AVAILABLE for a
    consumer's LATEST; before it the lagging HW is answered. A broker's LATEST and anyone's
    EARLIEST are answered either way."""
    lagging = LEADER._replace(epoch_start_offset=35)
    proto = PROFILES[profile]
    expected = (E.OFFSET_NOT_AVAILABLE, -1, -1) if proto.list_offsets_hw_lag_error else \
        (E.NONE, 30, 5 if _names_epoch(profile) else -1)
    assert _ask(profile, view=lagging) == expected
    assert _ask(profile, FOLLOWER_ID, view=lagging).offset == 40
    assert _ask(profile, ts=O.EARLIEST_TIMESTAMP, view=lagging).offset == 10
    # caught up (the HW reached the epoch's start): answered
    assert _ask(profile, view=LEADER._replace(epoch_start_offset=30)).offset == 30
    assert proto.list_offsets_hw_lag_error is not newer("2.2", profile)  # KIP-207


def test_2_1_answers_no_leader_epoch():
    """KAFKA-7568 (2.2.0): `handleListOffsetRequestV1AndAbove` at 2.1.0 answers v4 with
    `Optional.empty()` for the epoch, whatever it found; from 2.2 the found offset's."""
    assert _ask("2.1")[2] == -1 and _ask("2.1", ts=O.EARLIEST_TIMESTAMP)[2] == -1
    assert _ask("2.2")[2] == 5 and _ask("2.2", ts=O.EARLIEST_TIMESTAMP)[2] == 2


def test_the_reset_policy_names_its_timestamp():
    assert O.reset_timestamp("earliest") == O.EARLIEST_TIMESTAMP == -2
    assert O.reset_timestamp("latest") == O.LATEST_TIMESTAMP == -1
