"""`sim.kafka.rules.kraft_sessions`: a registration's RegisterBrokerRecord by release
(KAFKA-16757, KAFKA-16952), the heartbeat manager's session offset, staleness and next check,
and an expired heartbeat (KAFKA-15019)."""

from __future__ import annotations

import pytest

from sim.kafka.metadata_image import BrokerRegistration
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules import kraft_sessions as S

UNFENCED_IN_SHUTDOWN = BrokerRegistration(5, False, True, 1, 5)


@pytest.mark.parametrize("profile,existing,same,record", [
    ("3.7", None, False, (12, True, False)),                  # a first registration
    ("3.9", UNFENCED_IN_SHUTDOWN, False, (12, True, False)),  # a new incarnation
    ("3.7", UNFENCED_IN_SHUTDOWN, True, (12, True, False)),   # 3.3-3.7: as a new one
    ("3.8", UNFENCED_IN_SHUTDOWN, True, (12, False, True)),   # KAFKA-16757: state kept
    ("3.9", UNFENCED_IN_SHUTDOWN, True, (5, False, True)),    # KAFKA-16952: epoch kept too
    ("4.1", UNFENCED_IN_SHUTDOWN, True, (5, False, True)),
])
def test_registration_record_by_release(profile, existing, same, record):
    assert tuple(S.registration_record(resolve_protocol(profile), existing, same, 12)) == record


@pytest.mark.parametrize("session_fenced,fenced,offset", [
    (None, True, -1),   # a new session
    (True, True, -1),   # the state stays: the offset is dropped
    (False, True, 40),  # the state changes: the offset is kept
    (False, False, -1),
])
def test_registered_session_offset(session_fenced, fenced, offset):
    assert S.registered_session_offset(session_fenced, fenced, 40) == offset


def test_a_session_is_valid_up_to_its_timeout_inclusive():
    assert S.session_valid(100, 1000, 1100)
    assert not S.session_valid(100, 1000, 1101)


def test_next_check_is_when_the_oldest_contact_goes_stale():
    assert S.next_check_us([], 1000) is None
    assert S.next_check_us([300, 100, 200], 1000) == 1101


def test_one_stale_broker_looks_only_at_the_head_of_the_list():
    order = [(100, 3), (200, 1)]
    assert S.one_stale_broker(order, 1000, 1100) is None
    assert S.one_stale_broker(order, 1000, 1101) == 3
    assert S.one_stale_broker([], 1000, 5000) is None


@pytest.mark.parametrize("profile,registered,epoch,renews", [
    ("3.5", 7, 7, False),   # before KAFKA-15019 an expired heartbeat does nothing
    ("3.6", 7, 7, True),
    ("3.7", 7, 6, False),   # `checkBrokerEpoch` fails: nothing
    ("3.7", None, 7, False),
])
def test_expired_heartbeat_renews(profile, registered, epoch, renews):
    assert S.expired_heartbeat_renews(resolve_protocol(profile), registered, epoch) is renews
