"""`sim.kafka.rules.inter_broker`: what the inter-broker protocol version lets brokers and the
controller send, for every pair of a broker's code and an IBP it can run
(`ControllerChannelManager`, `ReplicaFetcherThread` at 2.6.0)."""

from __future__ import annotations

import pytest

from sim.kafka.profiles import PROFILES, ibp_protocol, newer, resolve_protocol
from sim.kafka.rules import inter_broker as ib

PAIRS = [(code, ibp) for code in PROFILES for ibp in PROFILES if not newer(ibp, code)]


def _wire(ibp: str):
    """The switches of IBP `ibp` in a run on that profile, as the cluster keeps them."""
    return ibp_protocol(PROFILES[ibp], ibp, ibp)


@pytest.mark.parametrize("code, ibp", PAIRS)
def test_a_request_carries_a_field_only_when_the_ibp_has_it(code, ibp):
    own, wire = PROFILES[code], _wire(ibp)
    assert ib.stop_replica_carries_epoch(own, wire) == wire.stop_replica_epoch
    assert ib.control_carries_broker_epoch(own, wire) == wire.broker_epoch_check
    assert ib.follower_fetch_carries_epoch(own, wire) == wire.fetch_epoch_check
    assert ib.follower_fetch_sessions(own, wire) == wire.fetch_sessions
    mode = ib.truncation_mode(own, wire)
    if ibp not in ("2.0", "2.7"):  # the two IBPs whose wire and code differ: below
        assert mode == PROFILES[ibp].follower_truncation


def test_ibp_2_7_lets_2_8_followers_truncate_on_fetch():
    """Fetch v12 (LastFetchedEpoch, DivergingEpoch) comes with `KAFKA_2_7_IV1`, and 2.8.0's
    `isTruncationOnFetchSupported` asks only for that IBP; 2.7.0's fetcher never uses it."""
    assert ib.truncation_mode(PROFILES["2.8"], _wire("2.7")) == "diverging_epoch"
    assert ib.truncation_mode(PROFILES["3.7"], _wire("2.7")) == "diverging_epoch"
    assert ib.truncation_mode(PROFILES["2.7"], _wire("2.7")) == "kip279"
    assert ib.truncation_mode(PROFILES["2.8"], _wire("2.6")) == "kip279"


def test_at_ibp_2_0_only_2_0_code_truncates_on_a_new_leader_alone():
    """OffsetsForLeaderEpoch v1 (KIP-279) comes with `KAFKA_2_0_IV0`; KAFKA-7164 (2.1) asks
    on every epoch change from `Partition.makeFollower`, code that the IBP does not bound."""
    assert ib.truncation_mode(PROFILES["2.0"], _wire("2.0")) == "kip279_leader_change"
    assert ib.truncation_mode(PROFILES["2.4"], _wire("2.0")) == "kip279"
    assert ib.truncation_mode(PROFILES["3.7"], _wire("2.0")) == "kip279"
    assert ib.truncation_mode(PROFILES["2.0"], _wire("1.1")) == "kip101"


@pytest.mark.parametrize("profile", list(PROFILES))
def test_at_its_own_ibp_a_broker_sends_what_its_switches_say(profile):
    proto = PROFILES[profile]
    assert ib.stop_replica_carries_epoch(proto, proto) == proto.stop_replica_epoch
    assert ib.replication_view(proto, proto) is proto


def test_the_rolling_upgrade_to_2_6_sends_stop_replica_v2_until_the_ibp_is_bumped():
    code = PROFILES["2.6"]
    assert not ib.stop_replica_carries_epoch(code, PROFILES["2.5"])
    assert ib.stop_replica_carries_epoch(code, PROFILES["2.6"])


def test_a_follower_on_new_code_truncates_as_its_old_ibp_does():
    view = ib.replication_view(PROFILES["3.7"], PROFILES["2.6"])
    assert view.follower_truncation == "kip279"
    assert view.hw_waits_for_min_isr is True  # everything else is the broker's own
    assert ib.truncation_mode(PROFILES["2.5"], PROFILES["0.10.2"]) == "high_watermark"


def test_an_override_switched_off_for_the_run_is_off_on_the_wire_too():
    off = resolve_protocol("3.7", {"stop_replica_epoch": False})
    assert not ib.stop_replica_carries_epoch(off, off)


def test_a_follower_fetches_in_a_session_only_from_ibp_1_1():
    assert not ib.follower_fetch_sessions(PROFILES["3.7"], PROFILES["1.0"])
    assert ib.follower_fetch_sessions(PROFILES["3.7"], PROFILES["2.4"])
