"""Kafka version profiles (rows of protocol switches) and the planted mutants.

Contract: `resolve_protocol(profile, overrides, mutant)` returns a `Protocol` whose every switch
has a value; it raises ValueError naming the bad key. `node_protocol(run, run_profile, profile)`
gives the switches of a node on another profile than the run's (per-node versions),
`ibp_protocol` those an inter-broker protocol version bounds requests by, and `newer(a, b)`
orders profiles by release (`PROFILES` lists them oldest first). A profile named `X.Y` is the
`X.Y.0` release; each row is the one before it with what its release changed, and docs/profiles.md
("Rows") names the source of every change. Mutants are named planted bugs used by the
self-tests; `proposed` with no mutant is the correct model. The switches themselves are
`sim.kafka.switches`.
"""

from __future__ import annotations

from dataclasses import replace

from sim.kafka.switch_choices import BOUNDS, CHOICES, switch_names
from sim.kafka.switches import KRAFT_SWITCHES, Protocol

__all__ = ["BOUNDS", "CHOICES", "IBP_WIRE", "KRAFT_SWITCHES", "MUTANTS", "PROFILES", "Protocol",
           "ibp_protocol", "markdown_table", "newer", "node_protocol", "release_order",
           "resolve_protocol", "switch_names", "switch_text"]


_WEEK_MS = 604_800_000

# 0.10.2, the oldest release modelled: every switch as it stood before KIP-98 and KIP-101
_V0_10_2 = Protocol(
    fetch_epoch_check=False, stop_replica_epoch=False, stop_replica_equal_epoch="reject",
    client_rejects_stale_metadata=False, client_accepts_recreated_topic="off",
    client_backoff="constant", least_loaded_node="fewest_in_flight",
    unknown_producer="out_of_order", evict_state_on_retention=True,
    client_log_start_check=False, client_retries_out_of_order=False,
    invalid_producer_epoch_fatal=True, init_producer_id_auth_abortable=False,
    client_resolves_sequences=False, idempotent_batches=1, producer_id_expiration_ms=_WEEK_MS,
    idempotence_default=False, ineligible_replica_check=False, hw_waits_for_min_isr=False,
    hw_caught_up_eligible_only=False,
    epoch_cached_on_election=False, idle_follower_in_sync=False, isr_epoch_start_check=False,
    isr_change_stays_pending=False, auto_rebalance_during_reassignment=False,
    startup_metadata_to_new_brokers_only=False, failed_broker_always_announced=False,
    offline_replicas_at_failover=False,
    broker_epoch_check=False, newer_broker_epoch_accepted=False, non_replica_fetch_error=False, follower_log_start_from_leader=False,
    follower_truncation="high_watermark", epoch_answer_checks_leader_epoch=False,
    alter_partition_ahead_not_controller=False, alter_partition_topic_ids=False,
    epochless_truncates_to_hw=False,
    consumer_validation=False,
    consumer_ignores_unknown_leader=False, consumer_resets_undefined_end_offset=False,
    consumer_keeps_paused_fetches=False,
    list_offsets_hw_lag_error=False, list_offsets_answers_epoch=False,
    list_offsets_max_timestamp="none", list_offsets_earliest_local=False, admin_elect_leaders="none",
    out_of_range_halts=True, survives_log_dir_failure=False, idempotent_producer=False,
    follower_fetch=False, follower_hw_completes_fetches=False, fetch_sessions=False,
    fetch_session_rotation="responded", fetch_session_cache_sharded=False,
    kraft_producer_id_no_wait=False)

# Each later release, oldest first, with what it changed against the release before it (the
# ZooKeeper-mode broker and the Java client of the X.Y.0 release, read at its tag); an empty
# change is a release a user may name whose switches are all its predecessor's
_RELEASES: tuple[tuple[str, dict], ...] = (
    ("0.11", dict(idempotent_producer=True,  # KIP-98
                  follower_log_start_from_leader=True,  # KIP-107
                  follower_truncation="kip101")),  # KIP-101
    ("1.0", dict(survives_log_dir_failure=True,  # KIP-112, KAFKA-4763
                 idempotent_batches=5, client_resolves_sequences=True,  # KAFKA-5494
                 unknown_producer="unknown_producer_id", client_log_start_check=True,  # KAFKA-5793
                 old_duplicate="duplicate_sequence",  # 1.0.0/1.0.1, until KAFKA-6683
                 fetch_hw_after_follower_update=True)),  # KAFKA-5758
    ("1.1", dict(fetch_sessions=True,  # KIP-227
                 old_duplicate="out_of_order")),  # KAFKA-6683
    ("2.0", dict(follower_truncation="kip279_leader_change",  # KIP-279, KAFKA-6361
                 fetch_hw_after_follower_update=False)),  # KAFKA-7104
    ("2.1", dict(fetch_epoch_check=True,  # KIP-320, KAFKA-7395
                 follower_truncation="kip279",  # KAFKA-7164
                 epochless_truncates_to_hw=True,  # KAFKA-6859
                 epoch_cached_on_election=True,  # KAFKA-7415
                 idle_follower_in_sync=True,  # KAFKA-7152
                 isr_epoch_start_check=True,  # KAFKA-7128
                 out_of_range_halts=False)),  # KAFKA-7414
    ("2.2", dict(client_rejects_stale_metadata=True,  # KAFKA-7738
                 broker_epoch_check=True,  # KIP-380
                 epoch_answer_checks_leader_epoch=True,  # KAFKA-7786 (also in 2.1.1)
                 list_offsets_hw_lag_error=True,  # KIP-207, KAFKA-2334
                 list_offsets_answers_epoch=True,  # KAFKA-7568
                 startup_metadata_to_new_brokers_only=True,  # KAFKA-7537
                 admin_elect_leaders="preferred")),  # KIP-183
    ("2.3", dict(consumer_validation=True,  # KIP-320 client, KAFKA-7747
                 least_loaded_node="established_first",  # KAFKA-8376
                 offline_replicas_at_failover=True)),  # KAFKA-3143
    ("2.4", dict(evict_state_on_retention=False,  # KAFKA-7190
                 follower_fetch=True,  # KIP-392
                 consumer_keeps_paused_fetches=True,  # KAFKA-7548
                 admin_elect_leaders="typed")),  # KIP-460
    ("2.5", dict(unknown_producer="accept", client_retries_out_of_order=True)),  # KIP-360
    ("2.6", dict(stop_replica_epoch=True,  # KIP-570, KAFKA-9539
                 newer_broker_epoch_accepted=True,  # KAFKA-9839 (also in 2.5.1)
                 consumer_ignores_unknown_leader=True,  # KAFKA-9840
                 consumer_resets_undefined_end_offset=True)),  # KAFKA-9840
    ("2.7", dict(least_loaded_node="oldest_attempt",  # KIP-601, KAFKA-9893
                 isr_change_stays_pending=True,  # KIP-497
                 invalid_producer_epoch_fatal=False)),  # KIP-588
    ("2.8", dict(follower_truncation="diverging_epoch",  # KAFKA-10554
                 hw_before_diverging_truncation=True)),  # until KAFKA-14704
    # enable.idempotence's default true was not applied (`ProducerConfig.idempotenceEnabled`
    # at 3.0.0: KAFKA-13598)
    ("3.0", dict(client_accepts_recreated_topic="both_ids",  # KAFKA-12257
                 fetch_session_rotation="records",  # KAFKA-12330
                 list_offsets_max_timestamp="first_record")),  # KIP-734
    ("3.1", dict(client_accepts_recreated_topic="new_id",  # KAFKA-13488
                 failed_broker_always_announced=True)),  # KAFKA-13225
    ("3.2", dict(idempotence_default=True)),  # KIP-679, in effect with KAFKA-13598
    ("3.3", dict(ineligible_replica_check=True,  # KIP-841, KAFKA-14140
                 alter_partition_ahead_not_controller=True,  # KAFKA-14154
                 alter_partition_topic_ids=True,  # KIP-841 (AlterPartition v2)
                 non_replica_fetch_error=True)),  # KAFKA-13837
    ("3.4.0", dict(producer_id_expiration_ms=86_400_000,  # KIP-854
                   follower_hw_completes_fetches=True,  # KAFKA-14334 (also in 3.3.2)
                   kraft_shutdown_applies_deltas=True,  # KAFKA-14296 (also in 3.3.2; KRaft only)
                   auto_rebalance_during_reassignment=True)),  # KAFKA-10149
    # KAFKA-14704's fix (bd32d98bd7c, Feb 2023) went to the 3.3 and 3.4 branches as it was, and
    # to 3.2 and earlier as a separate port (apache/kafka PR 13245): 3.4.0 (Feb 7) predates it,
    # and no later 3.3 or older release was made
    ("3.4.1", dict(stop_replica_equal_epoch="accept",  # KAFKA-13972
                   hw_before_diverging_truncation=False)),  # KAFKA-14704
    ("3.5", dict(kraft_isr_broker_epoch_check=True,  # KIP-903, KAFKA-14139 (KRaft only)
                 list_offsets_earliest_local=True,  # KIP-405 (ListOffsets v8)
                 kraft_port_opens_when_unfenced=True)),  # KAFKA-14658 (KRaft only)
    # KAFKA-15021: no leader epoch bump on a KRaft ISR shrink (a ZK controller still bumps it),
    # and in both modes the HW waits only for caught-up followers that are ISR-eligible.
    # KAFKA-15605 (the ZK migration) changes only what a ZK-mode run does not read
    ("3.6", dict(kraft_isr_shrink_bumps_epoch=False,
                 kraft_expired_heartbeat_touches=True,  # KAFKA-15019 (KRaft only)
                 hw_caught_up_eligible_only=True,
                 kraft_producer_id_no_wait=True,  # KAFKA-14694 (KRaft only)
                 init_producer_id_auth_abortable=True)),  # KAFKA-13668
    ("3.7", dict(leader_discovery="kip951",  # KIP-951
                 list_offsets_max_timestamp="last_offset",  # e905ef1edfb (LogValidator)
                 client_backoff="exponential",  # KIP-580, KAFKA-9800
                 hw_waits_for_min_isr=True,  # KAFKA-15583
                 kraft_check_quorum=True,  # KAFKA-15489 (KRaft only)
                 kraft_strays_deleted_first=True,  # KAFKA-14616 (KRaft only)
                 kraft_stale_fetch_fenced=True)),  # KAFKA-15221 (KRaft only)
    # KRaft-era releases a user names (`cluster.mode`, sim.kafka.modes): their switches are
    # 3.7's but for what they name; 4.0 removed ZooKeeper mode (KIP-833's end), which
    # sim.kafka.modes enforces
    ("3.8", dict(list_offsets_max_timestamp="batch_epoch",  # KAFKA-16310
                 fetch_session_cache_sharded=True,  # KAFKA-9401
                 raft_observer_votes=True,  # KAFKA-16526 (KRaft only)
                 kraft_reregistration="keeps_state")),  # KAFKA-16757 (KRaft only)
    ("3.9", dict(kraft_unclean_election_config=True,  # KAFKA-12670 (KRaft only)
                 raft_begin_quorum_heartbeat=True,  # KAFKA-16536 (KRaft only)
                 kraft_reregistration="keeps_epoch",  # KAFKA-16952 (KRaft only)
                 raft_dynamic_voters=True)),  # KIP-853 (KRaft only)
    ("4.0", dict(raft_pre_vote=True)),  # KIP-996, KAFKA-16164 (KRaft only)
    ("4.1", dict(kraft_fetch_completes_on_hw=True,  # KIP-1166, KAFKA-14145 (KRaft only)
                 raft_candidate_waits_election_timeout=True,  # KAFKA-18345 (KRaft only)
                 eligible_leader_replicas=True)),  # KIP-966: ELRV_1 on new clusters (KRaft only)
    # 4.2 (Feb 2026) and 4.3 (May 2026) change nothing the switches model (docs/profiles.md,
    # "Rows", says what was read); 4.4 had not shipped by the stored sources' last word
    ("4.2", dict()),
    ("4.3", dict()),
    # everything in the KIP texts (KIP-359, KIP-185/192) and the self-test's own proposals
    ("proposed", dict(produce_epoch_check=True, idempotence_modes=True,
                      leader_and_isr_delete_fence=True, full_leader_and_isr=True,
                      update_metadata_fence=True, client_keeps_unlisted_topic_id=True,
                      elr_assigned_replicas_only=True, kraft_replicates_once_registered=True)),
)


def _rows() -> dict[str, Protocol]:
    rows, row = {"0.10.2": _V0_10_2}, _V0_10_2
    for name, changes in _RELEASES:
        row = replace(row, **changes)
        rows[name] = row
    return rows


PROFILES: dict[str, Protocol] = _rows()

# What an inter-broker protocol version lets brokers send beyond what its own release's code
# does: IBP 2.7 (`KAFKA_2_7_IV1`) brings Fetch v12, whose LastFetchedEpoch and DivergingEpoch
# only 2.8 followers use (KAFKA-10554: `ApiVersion.isTruncationOnFetchSupported` at 2.8.0)
IBP_WIRE: dict[str, dict] = {"2.7": dict(follower_truncation="diverging_epoch")}


def release_order(name: str) -> tuple:
    """A profile's place in release order (`proposed` last)."""
    return (1,) if name == "proposed" else (0, *(int(x) for x in name.split(".")))


# Named planted bugs, each a swap of Kafka rules (sim/kafka/rules/mutants.py), and the invariant
# expected to catch it (see docs/selftest.md).
MUTANTS: dict[str, str] = {
    "no_produce_epoch_check": "stale_leader_append",
    "no_stop_replica_epoch_check": "stop_replica_out_of_order",
    "stop_replica_equal_epoch_flipped": "stray_replica",
    "lai_accepts_older_epoch": "leader_epoch_monotonic",
    "controller_reuses_leader_epoch": "single_leader_per_epoch",
    "follower_skips_truncation": "log_divergence",
    "hw_ignores_isr": "acked_write_lost",
    "hw_not_monotonic": "high_watermark_monotonic",
    "client_accepts_stale_metadata": "client_leader_epoch_regression",
    "hint_accepts_equal_epoch": "leader_hint_misapplied",
    "no_dedup_cache": "duplicate_append",
    "no_sequence_check": "out_of_order_append",
    "spurious_out_of_order": "spurious_out_of_order_sequence",
    "requested_as_required": "idempotence_mode_violated",
    "unknown_producer_id_always_benign": "unreported_data_loss",
    "consumer_skips_validation": "consumer_skipped_record",
    "alter_partition_not_resent": "under_replicated_after_heal",
    "client_keeps_first_leader": "produce_stalled_after_heal",
    "consumer_rests_for_good": "consume_stalled_after_heal",
    "raft_commits_without_majority": "metadata_log_safety",
    "broker_applies_uncommitted": "metadata_applied_in_order",
    "leader_counts_pending_shrink": "fenced_broker_ack",
    "quorum_leader_never_resigns": "broker_metadata_stalled",
    "kraft_leader_ignores_demotion": "demoted_leader_append",
    "controller_answers_before_commit": "isr_answer_before_commit",
    "raft_concurrent_voter_changes": "voter_changes_one_at_a_time",
}


def resolve_protocol(profile: str, overrides: dict | None = None, mutant: str = "") -> Protocol:
    """The switches of `profile` with `overrides` applied and `mutant` planted."""
    if profile not in PROFILES:
        raise ValueError(f"profile: unknown profile {profile!r}; use one of {list(PROFILES)}")
    base = PROFILES[profile]
    overrides = dict(overrides or {})
    for key, value in overrides.items():
        default = getattr(Protocol(), key, None)
        if key not in switch_names():
            raise ValueError(f"{key}: not a protocol switch; switches are {switch_names()}")
        if type(value) is not type(default):
            raise ValueError(f"{key}: expected {type(default).__name__}, got {value!r}")
        if key in CHOICES and value not in CHOICES[key]:
            raise ValueError(f"{key}: must be one of {list(CHOICES[key])}, got {value!r}")
        if key in BOUNDS and not BOUNDS[key][0] <= value <= BOUNDS[key][1]:
            raise ValueError(f"{key}: must be between {BOUNDS[key][0]} and {BOUNDS[key][1]}, "
                             f"got {value!r}")
    if mutant and mutant not in MUTANTS:
        raise ValueError(f"mutant: unknown mutant {mutant!r}; use one of {list(MUTANTS)}")
    return replace(base, **overrides, mutant=mutant)


def newer(a: str, b: str) -> bool:
    """Whether profile `a` is a later release than profile `b` (`proposed` is the latest)."""
    order = list(PROFILES)
    return order.index(a) > order.index(b)


def node_protocol(run: Protocol, run_profile: str, profile: str) -> Protocol:
    """The switches of a node on `profile` in a run whose switches are `run`, resolved from
    `run_profile`: the node's own profile row, with every switch in which `run` departs from
    `run_profile`'s row (the run's overrides) and the run's mutant. A node on the run's
    profile has the run's switches."""
    if profile == run_profile:
        return run
    base = PROFILES[run_profile]
    departures = {name: getattr(run, name) for name in switch_names()
                  if getattr(run, name) != getattr(base, name)}
    return replace(PROFILES[profile], **departures, mutant=run.mutant)


def ibp_protocol(run: Protocol, run_profile: str, ibp: str) -> Protocol:
    """The switches the inter-broker protocol version `ibp` bounds inter-broker requests by
    (`sim.kafka.rules.inter_broker`): those of a node on `ibp` in the run (`node_protocol`),
    with what the IBP lets brokers send beyond that release's own code (`IBP_WIRE`)."""
    proto = node_protocol(run, run_profile, ibp)
    return replace(proto, **IBP_WIRE[ibp]) if ibp in IBP_WIRE else proto


def markdown_table() -> str:
    """The profile x switch table of docs/profiles.md (a test keeps the doc in step)."""
    cols = list(PROFILES)
    lines = ["| switch | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for name in switch_names():
        cells = [switch_text(name, getattr(PROFILES[col], name)) for col in cols]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def switch_text(name: str, value) -> str:
    """A switch's value as the profile tables show it: on/off, days, or the value."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if name == "producer_id_expiration_ms":
        return f"{value // 86_400_000} d"
    return str(value)
