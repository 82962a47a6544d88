"""The release profiles: ordered by version, each with the values its Kafka release has, and
every change between neighbouring profiles explained in docs/profiles.md ("Rows").

The facts below are written as the release that brought each value (read at the release tags,
see docs/profiles.md), not as a copy of the table: a profile must show the value of the latest
arrival not newer than its own release.
"""

from __future__ import annotations

import os
import re

import pytest

from sim.kafka.profiles import PROFILES, newer, switch_names
from tests.conftest import ROOT, run_cached

RELEASES = [name for name in PROFILES if name != "proposed"]

# switch -> [(first release with the value, value), ...], oldest first
ARRIVALS = {
    "fetch_sessions": [("0.10.2", False), ("1.1", True)],  # KIP-227
    "fetch_session_rotation": [("0.10.2", "responded"), ("3.0", "records")],  # KAFKA-12330
    "fetch_session_cache_sharded": [("0.10.2", False), ("3.8", True)],  # KAFKA-9401
    "old_duplicate": [("0.10.2", "out_of_order"), ("1.0", "duplicate_sequence"),
                      ("1.1", "out_of_order")],  # KAFKA-6683
    "fetch_hw_after_follower_update": [("0.10.2", False), ("1.0", True), ("2.0", False)],
    "follower_truncation": [("0.10.2", "high_watermark"), ("0.11", "kip101"),
                            ("2.0", "kip279_leader_change"), ("2.1", "kip279"),
                            ("2.8", "diverging_epoch")],
    "out_of_range_halts": [("0.10.2", True), ("2.1", False)],  # KAFKA-7414
    "fetch_epoch_check": [("0.10.2", False), ("2.1", True)],  # KIP-320
    "broker_epoch_check": [("0.10.2", False), ("2.2", True)],  # KIP-380
    "newer_broker_epoch_accepted": [("0.10.2", False), ("2.6", True)],  # KAFKA-9839
    "consumer_resets_undefined_end_offset": [("0.10.2", False), ("2.6", True)],  # KAFKA-9840
    "consumer_keeps_paused_fetches": [("0.10.2", False), ("2.4", True)],  # KAFKA-7548
    "kraft_stale_fetch_fenced": [("0.10.2", False), ("3.7", True)],  # KAFKA-15221
    "eligible_leader_replicas": [("0.10.2", False), ("4.1", True)],  # KIP-966 (ELRV_1)
    "follower_log_start_from_leader": [("0.10.2", False), ("0.11", True)],  # KIP-107
    "client_rejects_stale_metadata": [("0.10.2", False), ("2.2", True)],  # KAFKA-7738
    "consumer_validation": [("0.10.2", False), ("2.3", True)],  # KAFKA-7747
    "evict_state_on_retention": [("0.10.2", True), ("2.4", False)],  # KAFKA-7190
    "unknown_producer": [("0.10.2", "out_of_order"), ("1.0", "unknown_producer_id"),
                         ("2.5", "accept")],  # KAFKA-5793, KIP-360
    "idempotent_batches": [("0.10.2", 1), ("1.0", 5)],  # KAFKA-5494
    "stop_replica_epoch": [("0.10.2", False), ("2.6", True)],  # KIP-570
    "stop_replica_equal_epoch": [("0.10.2", "reject"), ("3.4.1", "accept")],  # KAFKA-13972
    "hw_before_diverging_truncation": [("0.10.2", False), ("2.8", True), ("3.4.1", False)],
    "client_accepts_recreated_topic": [("0.10.2", "off"), ("3.0", "both_ids"),  # KAFKA-12257
                                       ("3.1", "new_id")],  # KAFKA-13488
    "idempotence_default": [("0.10.2", False), ("3.2", True)],  # KAFKA-13598
    "ineligible_replica_check": [("0.10.2", False), ("3.3", True)],  # KAFKA-14140
    "producer_id_expiration_ms": [("0.10.2", 604_800_000), ("3.4.0", 86_400_000)],  # KIP-854
    "leader_discovery": [("0.10.2", "metadata"), ("3.7", "kip951")],  # KIP-951
    "client_backoff": [("0.10.2", "constant"), ("3.7", "exponential")],  # KIP-580
    "init_producer_id_auth_abortable": [("0.10.2", False), ("3.6", True)],  # KAFKA-13668
    "raft_pre_vote": [("0.10.2", False), ("4.0", True)],  # KIP-996
    "raft_candidate_waits_election_timeout": [("0.10.2", False), ("4.1", True)],  # KAFKA-18345
    "kraft_unclean_election_config": [("0.10.2", False), ("3.9", True)],  # KAFKA-12670
    "raft_begin_quorum_heartbeat": [("0.10.2", False), ("3.9", True)],  # KAFKA-16536
    "raft_observer_votes": [("0.10.2", False), ("3.8", True)],  # KAFKA-16526
    "raft_dynamic_voters": [("0.10.2", False), ("3.9", True)],  # KIP-853
    "kraft_reregistration": [("0.10.2", "new_epoch"), ("3.8", "keeps_state"),
                             ("3.9", "keeps_epoch")],  # KAFKA-16757, KAFKA-16952
    "kraft_expired_heartbeat_touches": [("0.10.2", False), ("3.6", True)],  # KAFKA-15019
    "kraft_producer_id_no_wait": [("0.10.2", False), ("3.6", True)],  # KAFKA-14694
    "admin_elect_leaders": [("0.10.2", "none"), ("2.2", "preferred"),  # KIP-183
                            ("2.4", "typed")],  # KIP-460
}


def version(name: str) -> tuple[int, ...]:
    """A release name as numbers ("3.4.1" -> (3, 4, 1)); X.Y is X.Y.0."""
    parts = tuple(int(p) for p in name.split("."))
    return parts + (0,) * (3 - len(parts))


def test_profiles_are_listed_oldest_first_and_newer_follows_the_release_numbers():
    assert RELEASES == sorted(RELEASES, key=version)
    assert list(PROFILES)[-1] == "proposed"
    for a in RELEASES:
        for b in RELEASES:
            assert newer(a, b) is (version(a) > version(b)), (a, b)
        assert newer("proposed", a)
    assert newer("3.4.1", "3.4.0") and newer("3.5", "3.4.1") and newer("3.6", "3.5")


def test_the_releases_a_2026_user_names_are_there():
    for name in ("1.1", "2.0", "2.1", "2.2", "2.3", "2.7", "2.8", "3.0", "3.1", "3.2", "3.3",
                 "3.5", "3.6"):
        assert name in PROFILES, name
    assert {"3.9", "4.0", "4.1", "4.2", "4.3"} <= set(PROFILES)  # the KRaft era's (sim.kafka.modes)
    assert RELEASES[-1] == "4.3"  # 4.4.0 was in its release-candidate votes (docs/profiles.md)
    assert PROFILES["3.5"].kraft_isr_shrink_bumps_epoch  # KAFKA-15021 is 3.6.0
    assert not PROFILES["3.6"].kraft_isr_shrink_bumps_epoch


@pytest.mark.parametrize("profile", RELEASES)
def test_each_profile_has_its_releases_values(profile):
    for switch, arrivals in ARRIVALS.items():
        expected = [value for first, value in arrivals if version(first) <= version(profile)][-1]
        assert getattr(PROFILES[profile], switch) == expected, (profile, switch)


def _row_texts() -> dict[str, str]:
    """docs/profiles.md's "Rows" section: each profile's bullet."""
    text = open(os.path.join(ROOT, "docs", "profiles.md"), encoding="utf-8").read()
    section = text.split("## Rows\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in
            re.finditer(r"^- \*\*([^*]+)\*\*:(.*?)(?=^- \*\*|\Z)", section, re.S | re.M)}


def test_every_change_between_neighbouring_profiles_is_explained():
    rows = _row_texts()
    assert list(rows) == list(PROFILES)
    names = list(PROFILES)
    for before, after in zip(names, names[1:]):
        changed = [s for s in switch_names()
                   if getattr(PROFILES[before], s) != getattr(PROFILES[after], s)]
        text = " ".join(rows[after].split())
        if not changed:
            assert f"the same switches as {before}" in text, after
        for switch in changed:
            assert f"`{switch}`" in text, (after, switch)


@pytest.mark.parametrize("name, profile, violated", [
    # KAFKA-7164 (2.1): before it a follower of the same leader at a new epoch never asks
    ("kafka7164-same-leader-truncation-legacy", "2.0", ["log_divergence"]),
    ("kafka7164-same-leader-truncation-legacy", "2.1", []),
    # KIP-279 (2.0): the answer names the leader's epoch, so KAFKA-6361's divergence is gone
    ("kip279-fast-failover-legacy", "1.1", ["log_divergence"]),
    ("kip279-fast-failover-legacy", "2.0", []),
])
def test_2_0_has_kip_279_answers_but_not_kafka_7164(name, profile, violated):
    verdict = run_cached(name, 1, (("protocol.profile", profile),))
    assert verdict["violated"] == violated, verdict["violated"]
