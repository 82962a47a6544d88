"""`sim.kafka.rules.producer_state`: the broker's idempotent append check (ref §2.2, §2.4),
across profiles."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.idempotence import ProducerEntry
from sim.kafka.messages import Batch
from sim.kafka.profiles import PROFILES, resolve_protocol
from sim.kafka.rules.producer_state import (
    MAX_SEQUENCE,
    check_producer_append,
    increment_sequence,
    last_sequence,
)


def _entry(epoch=0, batches=((0, 4, 100, 104), (5, 9, 105, 109))):
    entry = ProducerEntry(epoch)
    entry.batches = list(batches)
    return entry


def _batch(seq, count=5, epoch=0, pid=7):
    return Batch("b", "p", count, 0, pid=pid, producer_epoch=epoch, base_seq=seq)


@pytest.mark.parametrize("profile", [p for p in PROFILES if p != "0.10.2"])
def test_the_next_sequence_is_taken_and_a_cached_duplicate_answered_with_its_offset(profile):
    proto = PROFILES[profile]
    assert check_producer_append(proto, _entry(), _batch(10)) == (E.NONE, None)
    assert check_producer_append(proto, _entry(), _batch(5)) == (E.NONE, 105)
    assert check_producer_append(proto, _entry(), _batch(15)) == (E.OUT_OF_ORDER_SEQUENCE_NUMBER, None)
    assert check_producer_append(proto, _entry(epoch=1), _batch(10)) == \
        (E.INVALID_PRODUCER_EPOCH, None)
    assert check_producer_append(proto, None, _batch(0)) == (E.NONE, None)
    assert check_producer_append(proto, _entry(), _batch(3, pid=-1)) == (E.NONE, None)


@pytest.mark.parametrize("profile,answer", [
    ("0.11", E.OUT_OF_ORDER_SEQUENCE_NUMBER), ("1.0", E.UNKNOWN_PRODUCER_ID),
    ("2.4", E.UNKNOWN_PRODUCER_ID), ("2.5", E.NONE), ("3.7", E.NONE)])
def test_an_unknown_producer_past_sequence_zero_by_version(profile, answer):
    assert check_producer_append(resolve_protocol(profile), None, _batch(10)) == (answer, None)


def test_a_new_epoch_starts_at_sequence_zero():
    proto = resolve_protocol("3.7")
    assert check_producer_append(proto, _entry(), _batch(0, epoch=1)) == (E.NONE, None)
    assert check_producer_append(proto, _entry(), _batch(5, epoch=1)) == \
        (E.OUT_OF_ORDER_SEQUENCE_NUMBER, None)


@pytest.mark.parametrize("profile,answer", [("1.0", E.DUPLICATE_SEQUENCE_NUMBER),
                                            ("2.4", E.OUT_OF_ORDER_SEQUENCE_NUMBER)])
def test_a_batch_older_than_the_cache(profile, answer):
    entry = _entry(batches=((20, 24, 120, 124),))
    assert check_producer_append(resolve_protocol(profile), entry, _batch(0)) == (answer, None)


@pytest.mark.parametrize("profile,taken", [("2.4", False), ("2.5", True)])
def test_a_known_producer_with_no_batch_cached_takes_any_sequence_from_kip_360(profile, taken):
    err, _ = check_producer_append(resolve_protocol(profile), _entry(batches=()), _batch(40))
    assert (err == E.NONE) is taken


def test_sequences_wrap_past_integer_max_value():
    """`DefaultRecordBatch.incrementSequence`: past Integer.MAX_VALUE the sequence goes on at 0,
    and the broker takes 0 after MAX_VALUE (`ProducerStateEntry` / `inSequence`)."""
    top = MAX_SEQUENCE
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(top, 1) == 0 and increment_sequence(top - 1, 3) == 1
    wrapped = _batch(top - 1, count=3)
    assert last_sequence(wrapped) == 0
    entry = _entry(batches=((top - 4, top, 100, 104),))
    for profile in ("1.0", "2.4", "3.7"):
        proto = resolve_protocol(profile)
        assert check_producer_append(proto, entry, _batch(0)) == (E.NONE, None)
        # 1.0.0 compares numerically with the first cached sequence, wrap or not
        gap = E.DUPLICATE_SEQUENCE_NUMBER if profile == "1.0" else E.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert check_producer_append(proto, entry, _batch(1)) == (gap, None)
