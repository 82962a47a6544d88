"""`sim.kafka.rules.offsets`: ListOffsets by timestamp, MAX_TIMESTAMP and EARLIEST_LOCAL
(`Partition.fetchOffsetForTimestamp`, `UnifiedLog.fetchOffsetByTimestamp` at 2.2.0, 3.0.0,
3.7.0 and 3.8.0), across profiles."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.messages import Batch
from sim.kafka.profiles import PROFILES, newer
from sim.kafka.rules import offsets as O


def _entry(base: int, count: int, epoch: int, ts_ms: int) -> tuple:
    return (base, count, epoch, Batch(f"b{base}", "p", count, ts_ms * 1000))


# a leader at epoch 7 whose log holds offsets 0..9 in four batches: epoch 3 at 100 ms (0-1),
# epoch 3 at 300 ms (2-4), epoch 5 at 200 ms (5-7), epoch 5 at 300 ms again (8-9); the log
# starts at 1, the HW is 8 and the leader's own epoch starts at the log end (10)
ENTRIES = (_entry(0, 2, 3, 100), _entry(2, 3, 3, 300), _entry(5, 3, 5, 200), _entry(8, 2, 5, 300))
LEADER = O.LogView(leader_epoch=7, is_leader=True, log_start_offset=1, log_end_offset=10,
                   high_watermark=8, epoch_start_offset=10, first_cached_epoch=(3, 0),
                   latest_cached_epoch=7, entries=ENTRIES)
CAUGHT_UP = LEADER._replace(high_watermark=10)
BROKER, CONSUMER = 2, O.CONSUMER_REPLICA_ID


def _ask(profile, ts, replica_id=BROKER, view=CAUGHT_UP):
    return O.fetch_offset_for_timestamp(PROFILES[profile], replica_id, ts, -1, view)


def test_a_timestamp_finds_the_first_record_at_or_after_it_from_the_log_start():
    """`FileRecords.searchForTimestamp`: the first batch whose max timestamp reaches the
    target, its first record at or above the log start, with the batch's epoch and timestamp."""
    assert _ask("3.7", 0) == (E.NONE, 1, 3, 100)  # offset 0 is below the log start
    assert _ask("3.7", 150) == (E.NONE, 2, 3, 300)
    assert _ask("3.7", 300) == (E.NONE, 2, 3, 300)
    assert _ask("2.6", 200) == (E.NONE, 2, 3, 300)  # not the later batch of exactly 200 ms
    assert _ask("3.7", 301) == (E.NONE, -1, -1, -1)  # none so late: UNKNOWN_OFFSET, no error


def test_a_found_offset_must_be_below_what_the_requester_may_read():
    """Partition's filter `offset < lastFetchableOffset`: the HW for a consumer, the log end
    for a replica. Beyond it, OFFSET_NOT_AVAILABLE while the HW lags the leader's epoch start
    (KIP-207, 2.2), else no offset."""
    assert _ask("3.7", 300, CONSUMER) == (E.NONE, 2, 3, 300)
    # HW 2: the record at 2 is not committed yet; the HW (2) lags the epoch start (10)
    low = LEADER._replace(high_watermark=2)
    assert _ask("3.7", 300, CONSUMER, low).error == E.OFFSET_NOT_AVAILABLE
    assert _ask("2.1", 300, CONSUMER, low) == (E.NONE, -1, -1, -1)
    assert _ask("3.7", 300, BROKER, low) == (E.NONE, 2, 3, 300)
    assert _ask("3.7", 150, CONSUMER, low._replace(epoch_start_offset=2)) == (E.NONE, -1, -1, -1)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_max_timestamp_by_release(profile):
    """KIP-734 (3.0): the first batch of the largest timestamp (2-4, 300 ms, not 8-9). 3.0 -
    3.6 name its first record and the cache's latest epoch; 3.7.0 its last offset (LogValidator
    after e905ef1edfb) and the latest epoch; 3.8.0 its first record and its own epoch
    (KAFKA-16310). Before 3.0 no client sends -3: a broker searches it as a timestamp."""
    mode = PROFILES[profile].list_offsets_max_timestamp
    expected = {"first_record": (E.NONE, 2, 7, 300), "last_offset": (E.NONE, 4, 7, 300),
                "batch_epoch": (E.NONE, 2, 3, 300)}.get(mode)
    got = _ask(profile, O.MAX_TIMESTAMP)
    if expected is None:
        assert newer("3.0", profile) and got.offset == 1  # the first record past the log start
    else:
        assert got == expected
    assert (mode == "last_offset") == (profile == "3.7")


def test_max_timestamp_is_bounded_and_empty_logs_have_none():
    at_4 = LEADER._replace(high_watermark=4, epoch_start_offset=4)  # the HW does not lag
    assert _ask("3.7", O.MAX_TIMESTAMP, CONSUMER, at_4) == (E.NONE, -1, -1, -1)  # 4 is not below it
    assert _ask("3.8", O.MAX_TIMESTAMP, CONSUMER, at_4).offset == 2
    assert _ask("3.7", O.MAX_TIMESTAMP, CONSUMER, LEADER._replace(high_watermark=4)).error \
        == E.OFFSET_NOT_AVAILABLE  # the HW lags the epoch start (10)
    assert _ask("3.7", O.MAX_TIMESTAMP, view=CAUGHT_UP._replace(entries=())) \
        == (E.NONE, -1, -1, -1)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_earliest_local_is_the_log_start_from_kip_405(profile):
    """Without tiered storage -4 is EARLIEST (`!remoteLogEnabled()`, 3.5+), unbounded by the
    HW; before 3.5 it is searched as a timestamp."""
    proto = PROFILES[profile]
    got = _ask(profile, O.EARLIEST_LOCAL_TIMESTAMP, CONSUMER, LEADER._replace(high_watermark=1))
    if proto.list_offsets_earliest_local:
        assert got == (E.NONE, 1, 3, -1) and not newer("3.5", profile)
    else:
        assert got.offset == -1  # the first record (1) is not below the HW (1)


def test_epochs_are_left_out_before_kafka_7568():
    assert _ask("2.1", 150) == (E.NONE, 2, -1, 300)
    assert _ask("2.0", 150) == (E.NONE, 2, -1, 300)
    assert _ask("2.2", 150) == (E.NONE, 2, 3, 300)


def test_a_batch_timestamp_is_its_creation_in_ms():
    assert Batch("b", "p", 1, 2_500_999).max_timestamp == 2_500
