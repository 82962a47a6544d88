"""The planted bugs: each a Kafka rule swapped for a wrong one, and the invariant that must
catch it.

Contract: `SWAPS` maps each planted bug of `sim.kafka.profiles.MUTANTS` (which names the
invariant expected to catch it, docs/selftest.md) to the rules it replaces (rule name ->
replacement, with the replaced rule's signature). This module is the only place that knows what a mutant does:
actors call their rules and never ask which mutant is planted.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.rules import client_metadata as cm
from sim.kafka.rules import client_producer as cp
from sim.kafka.rules import control, epochs, raft_voters
from sim.kafka.rules import producer_state as ps
from sim.kafka.rules import replication as rep
from sim.kafka.rules.control import NOT_ASSIGNED, LeaderAndIsrDecision


def _no_produce_epoch_check(proto, local_epoch, is_leader, current_leader_epoch):
    """The Produce path skips the KIP-359 epoch check."""
    return epochs.get_local_log(local_epoch, is_leader, current_leader_epoch, True, False)


def _stop_replica_equal_epoch_flipped(proto, req_epoch, local_epoch):
    """An equal epoch is judged the other way round from the profile's rule."""
    if req_epoch in (E.NO_EPOCH, E.EPOCH_DURING_DELETE) or req_epoch > local_epoch:
        return True
    return req_epoch == local_epoch and proto.stop_replica_equal_epoch != "accept"


def _lai_accepts_older_epoch(proto, hosted, same_topic_id, local_epoch, local_partition_epoch,
                             leader_epoch, partition_epoch, assigned_here):
    """Any other leader epoch is applied, older too, with the replica's epochs reset first."""
    if hosted and not same_topic_id:
        return control.OTHER_TOPIC_ID
    if leader_epoch != local_epoch:
        if not assigned_here:
            return NOT_ASSIGNED
        return LeaderAndIsrDecision(E.NONE, True, reset_epochs=True)
    return control.leader_and_isr_partition(proto, hosted, same_topic_id, local_epoch,
                                            local_partition_epoch, leader_epoch,
                                            partition_epoch, assigned_here)


def _under_min_isr(proto, isr_size, min_isr, replicas):
    return proto.hw_waits_for_min_isr and isr_size < rep.effective_min_isr(proto, min_isr,
                                                                            replicas)


def _hw_ignores_isr(proto, leo, hw, isr_size, min_isr, replicas, maximal_isr, followers,
                    now_us, lag_max_ms, eligible):
    """The HW follows the leader's own log end: a write is committed on the leader alone."""
    if _under_min_isr(proto, isr_size, min_isr, replicas):
        return None
    return leo if leo > hw else None


def _hw_not_monotonic(proto, leo, hw, isr_size, min_isr, replicas, maximal_isr, followers,
                      now_us, lag_max_ms, eligible):
    """Every replica whose log end is known counts, ISR or not, and the HW may go back."""
    if _under_min_isr(proto, isr_size, min_isr, replicas):
        return None
    candidate = leo
    for f in followers.values():
        if f.leo >= 0:
            candidate = min(candidate, f.leo)
    return candidate if candidate != hw else None


def _no_dedup_cache(proto, entry, batch):
    """A duplicate of a cached batch is appended again."""
    err, dup = ps.check_producer_append(proto, entry, batch)
    return ps.APPEND if dup is not None else (err, dup)


def _no_sequence_check(proto, entry, batch):
    """A known producer's batch at its current epoch is taken whatever its sequence."""
    err, dup = ps.check_producer_append(proto, entry, batch)
    if dup is None and entry is not None and batch.pid >= 0 \
            and batch.producer_epoch == entry.epoch:
        return ps.APPEND
    return err, dup


def _out_of_order_for_unknown(proto, entry, batch):
    """An unknown producer's batch past sequence 0 is OUT_OF_ORDER_SEQUENCE_NUMBER (0.11's
    answer), whatever the profile."""
    if batch.pid >= 0 and entry is None and batch.base_seq != 0:
        return E.OUT_OF_ORDER_SEQUENCE_NUMBER, None
    return ps.check_producer_append(proto, entry, batch)


def _requested_as_required(proto, configured, acks_all, retries):
    """A best-effort `requested` producer behaves as `required`."""
    mode = cp.idempotence_mode(proto, configured, acks_all, retries)
    return "required" if mode == "requested" else mode


def _unknown_producer_id_always_benign(proto, err, stale_epoch, next_in_sequence, unresolved,
                                       next_for_unresolved, sequence_reset, log_start_offset,
                                       last_acked_offset):
    """The naive UNKNOWN_PRODUCER_ID fix: always retention, never a loss (and no KIP-360)."""
    return cp.pre_kip360_error_action(proto, err, stale_epoch, next_in_sequence,
                                      log_start_offset, last_acked_offset, always_benign=True)


def _keeps_first_metadata(proto, last_seen, known_topic_id, topic_id, leader_epoch):
    """The first answer for a partition is kept for good."""
    if last_seen is not None:
        return cm.MetadataUpdate(False)
    return cm.update_partition_metadata(proto, last_seen, known_topic_id, topic_id, leader_epoch)


def _hint_accepts_equal_epoch(proto, cached_epoch, leader, leader_epoch, leader_known):
    """A hint at the cached epoch is applied too."""
    if cached_epoch is None or leader < 0 or leader_epoch < 0:
        return False
    return leader_epoch >= cached_epoch and leader_known


def _rest_for_good(action, now_us, backoff_us, leader_epoch):
    """A partition that failed a Fetch is never fetched again, whatever comes."""
    return 2**62, 2**31 - 1


def _reuses_leader_epoch(bump_epoch, state_written, reason):
    """An election keeps the old leader epoch."""
    return bump_epoch and state_written and not reason.startswith("elect")


# each planted bug -> {rule name: replacement}
def _commits_without_majority(voter_end_offsets, current_hw, epoch_start_offset):
    """The quorum leader commits what it has itself appended, with no majority behind it."""
    return max(voter_end_offsets[0], current_hw)


def _concurrent_add_voter(is_leader, pending, hw, kraft_version, last_voters_offset, voters,
                          voter):
    """KIP-853 without its one-change-at-a-time checks: neither a pending change nor an
    uncommitted VotersRecord holds an AddRaftVoter back."""
    return raft_voters.add_voter_error(is_leader, False, hw, kraft_version, -1, voters, voter)


def _concurrent_remove_voter(is_leader, pending, hw, kraft_version, last_voters_offset,
                             voters, voter):
    """Likewise for RemoveRaftVoter."""
    return raft_voters.remove_voter_error(is_leader, False, hw, kraft_version, -1, voters,
                                          voter)


def _counts_pending_shrink(isr, pending_isr):
    """The leader counts the ISR shrink it proposed before the controller commits it: a
    leader cut from the controllers shrinks to itself and acknowledges writes alone."""
    return isr if pending_isr is None else tuple(sorted(pending_isr))


SWAPS: dict[str, dict] = {
    "no_produce_epoch_check": {"produce_local_log": _no_produce_epoch_check},
    "no_stop_replica_epoch_check": {"stop_replica_epoch_allowed": lambda proto, req, local: True},
    "stop_replica_equal_epoch_flipped": {
        "stop_replica_epoch_allowed": _stop_replica_equal_epoch_flipped},
    "lai_accepts_older_epoch": {"leader_and_isr_partition": _lai_accepts_older_epoch},
    "controller_reuses_leader_epoch": {"bumps_leader_epoch": _reuses_leader_epoch},
    "follower_skips_truncation": {
        "fetch_last_fetched_epoch": lambda proto, truncating, last_epoch: -1},
    "hw_ignores_isr": {"maybe_increment_leader_hw": _hw_ignores_isr},
    "hw_not_monotonic": {"maybe_increment_leader_hw": _hw_not_monotonic},
    "client_accepts_stale_metadata": {
        "update_partition_metadata": lambda proto, last_seen, known_topic_id, topic_id, epoch:
            cm.take_newer_metadata(proto, last_seen, known_topic_id, topic_id, epoch,
                                   reject_older=False)},
    "hint_accepts_equal_epoch": {"update_partition_leadership": _hint_accepts_equal_epoch},
    "no_dedup_cache": {"check_producer_append": _no_dedup_cache},
    "no_sequence_check": {"check_producer_append": _no_sequence_check},
    "spurious_out_of_order": {
        "check_producer_append": _out_of_order_for_unknown,
        "evicts_producer_state_on_retention": lambda proto: True},
    "requested_as_required": {"idempotence_mode": _requested_as_required},
    "unknown_producer_id_always_benign": {
        "idempotent_error_action": _unknown_producer_id_always_benign},
    "consumer_skips_validation": {"validates_positions": lambda proto: False},
    "alter_partition_not_resent": {"controller_channel_resends": lambda proto: False},
    "client_keeps_first_leader": {
        "update_partition_metadata": _keeps_first_metadata,
        "update_partition_leadership": lambda proto, cached_epoch, leader, epoch, known: False},
    "consumer_rests_for_good": {"rest_after_fetch_error": _rest_for_good},
    "raft_commits_without_majority": {"raft_high_watermark": _commits_without_majority},
    "raft_concurrent_voter_changes": {"raft_add_voter_error": _concurrent_add_voter,
                                      "raft_remove_voter_error": _concurrent_remove_voter},
    # the broker publishes every record it fetched, uncommitted ones too, which a new
    # leader may yet truncate
    "broker_applies_uncommitted": {"publishable_metadata": lambda log_tail, hw: len(log_tail)},
    "leader_counts_pending_shrink": {"maximal_isr": _counts_pending_shrink},
    # KAFKA-15489's split brain on a release that has its fix: a leader cut from the other
    # voters stays leader, and the brokers that follow it never learn of the new one
    "quorum_leader_never_resigns": {"raft_resigns": lambda proto, heard, majority: False},
    # KAFKA-14296 made worse: a KRaft broker skips every record that moves a partition it
    # leads to another leader, shutting down or not, so it stays leader at its old epoch
    # the active controller answers once the last record its log holds commits, not the one it
    # wrote for the request, which may still linger: it reports a state it never committed
    "controller_answers_before_commit": {
        "kraft_answer_offset": lambda written_end, log_end: log_end - 1},
    "kraft_leader_ignores_demotion": {
        "kraft_skips_follower_delta": lambda proto, shutting_down, leads, led: led and not leads},
}

