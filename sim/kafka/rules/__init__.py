"""Kafka's decisions as pure functions, and the table that plants a bug by swapping one.

Contract: every decision the model takes from Kafka (an error code, whether to apply a request,
a new high watermark, what a client does next) is a function in this package, named after
Kafka's own method where there is one, taking the protocol switches and plain values and
returning the decision; it changes nothing. Actors gather the inputs, call the rule through
`rules_for(protocol)` and act on the answer. A planted bug (`protocol.mutant`) is a swap of
one or more rules for wrong ones (`sim.kafka.rules.mutants`), never a branch inside an actor.

Modules: `epochs` (CurrentLeaderEpoch checks), `control` (LeaderAndIsr, StopReplica,
UpdateMetadata), `replication` (HW, ISR, follower fetch and truncation), `producer_state` (the
idempotent append check), `client_metadata`, `client_producer`, `client_consumer`, `backoff`,
`controller`, `kraft` (the quorum, the quorum controller, a KRaft broker's replay), `kraft_admin` (the
quorum controller's placement, manual assignments and preferred elections), `kraft_elr` (KIP-966's
eligible leader replicas in the quorum controller), `raft_requests` (the
quorum's request checks and its resignation's order), `raft_voters` (KIP-853's voter changes), `api_versions` (the request versions a
client reads from a broker's ApiVersions answer). `Rules` lists the rules a mutant may swap; the others are called directly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Callable

from sim.kafka.rules import (
    client_consumer,
    client_metadata,
    client_producer,
    control,
    controller,
    epochs,
    kraft,
    kraft_elr,
    producer_state,
    raft_requests,
    raft_voters,
    replication,
)


@dataclass(frozen=True)
class Rules:
    """The rules one run's actors call: Kafka's, with a mutant's swaps applied."""
    produce_local_log: Callable = epochs.produce_local_log
    fetch_local_log: Callable = epochs.fetch_local_log
    control_request_error: Callable = control.control_request_error
    leader_and_isr_partition: Callable = control.leader_and_isr_partition
    stop_replica_epoch_allowed: Callable = control.stop_replica_epoch_allowed
    update_metadata_part_taken: Callable = control.update_metadata_part_taken
    effective_min_isr: Callable = replication.effective_min_isr
    maybe_increment_leader_hw: Callable = replication.maybe_increment_leader_hw
    maximal_isr: Callable = replication.maximal_isr
    alter_partition_answer: Callable = replication.alter_partition_answer
    alter_partition_isr_epochs: Callable = replication.alter_partition_isr_epochs
    alter_partition_topic_error: Callable = replication.alter_partition_topic_error
    follower_joins_isr: Callable = replication.follower_joins_isr
    isr_broker_epoch_eligible: Callable = replication.isr_broker_epoch_eligible
    stale_follower_fetch: Callable = replication.stale_follower_fetch
    is_follower_out_of_sync: Callable = replication.is_follower_out_of_sync
    fetch_last_fetched_epoch: Callable = replication.fetch_last_fetched_epoch
    truncates_to_hw_unasked: Callable = replication.truncates_to_hw_unasked
    controller_channel_resends: Callable = replication.controller_channel_resends
    one_alter_partition_per_partition: Callable = replication.one_alter_partition_per_partition
    alter_partition_broker_epoch: Callable = replication.alter_partition_broker_epoch
    zk_alter_partition_epoch_stale: Callable = replication.zk_alter_partition_epoch_stale
    evicts_producer_state_on_retention: Callable = replication.evicts_producer_state_on_retention
    follower_log_start: Callable = replication.follower_log_start
    check_producer_append: Callable = producer_state.check_producer_append
    update_partition_metadata: Callable = client_metadata.update_partition_metadata
    update_partition_leadership: Callable = client_metadata.update_partition_leadership
    idempotence_mode: Callable = client_producer.idempotence_mode
    complete_batch: Callable = client_producer.complete_batch
    idempotent_error_action: Callable = client_producer.idempotent_error_action
    producer_fatal: Callable = client_producer.producer_fatal
    init_producer_id_abortable: Callable = client_producer.init_producer_id_abortable
    in_flight_stops_drain: Callable = client_producer.in_flight_stops_drain
    should_backoff: Callable = client_producer.should_backoff
    retry_backoff_us: Callable = client_producer.retry_backoff_us
    validates_positions: Callable = client_consumer.validates_positions
    validation_outcome: Callable = client_consumer.validation_outcome
    rest_after_fetch_error: Callable = client_consumer.rest_after_fetch_error
    bumps_leader_epoch: Callable = controller.bumps_leader_epoch
    zk_alter_partition_error: Callable = controller.zk_alter_partition_error
    raft_grants_vote: Callable = kraft.grants_vote
    raft_log_up_to_date: Callable = kraft.candidate_log_up_to_date
    raft_election_backoff_ms: Callable = kraft.election_backoff_ms
    raft_vote_rejected: Callable = kraft.vote_rejected
    raft_vote_request_error: Callable = kraft.vote_request_error
    raft_fetch_error: Callable = kraft.leader_only_error
    raft_high_watermark: Callable = kraft.high_watermark
    raft_diverging_end_offset: Callable = kraft.diverging_end_offset
    raft_resigns: Callable = kraft.raft_resigns
    raft_fetch_request_error: Callable = raft_requests.fetch_request_error
    raft_voter_only_error: Callable = raft_requests.voter_only_error
    raft_voter_set_error: Callable = raft_requests.voter_set_error
    raft_replica_fetch_state: Callable = raft_requests.replica_fetch_state
    raft_preferred_successors: Callable = raft_requests.preferred_successors
    raft_end_epoch_backoff_ms: Callable = raft_requests.end_epoch_election_backoff_ms
    kraft_answer_offset: Callable = kraft.answer_offset
    raft_fetch_answered_now: Callable = kraft.quorum_fetch_answered_now
    raft_fetch_high_watermark: Callable = raft_requests.fetch_high_watermark
    raft_hw_move_answers_parked: Callable = kraft.hw_move_answers_parked
    raft_add_voter_error: Callable = raft_voters.add_voter_error
    raft_remove_voter_error: Callable = raft_voters.remove_voter_error
    raft_pending_add_outcome: Callable = raft_voters.pending_add_outcome
    raft_replica_caught_up: Callable = raft_voters.replica_caught_up
    raft_change_committed: Callable = raft_voters.change_committed
    raft_last_voter_set: Callable = raft_voters.last_voter_set
    raft_resigns_after_removal: Callable = raft_voters.resigns_after_removal
    kraft_assignment_change: Callable = kraft.assignment_change
    kraft_elr_change: Callable = kraft_elr.elr_change
    kraft_effective_min_isr: Callable = kraft_elr.effective_min_isr
    kraft_alter_partition_error: Callable = kraft.alter_partition_error
    kraft_duplicate_registration: Callable = kraft.duplicate_registration
    kraft_broker_takes_partition: Callable = kraft.broker_takes_partition
    kraft_skips_follower_delta: Callable = kraft.skips_follower_delta
    kraft_next_broker_state: Callable = kraft.next_broker_state
    publishable_metadata: Callable = kraft.publishable_metadata


@cache
def rules_named(mutant: str) -> Rules:
    """Kafka's rules with `mutant`'s swaps ("" for none)."""
    from sim.kafka.rules.mutants import SWAPS
    if not mutant:
        return Rules()
    return replace(Rules(), **SWAPS[mutant])


def rules_for(protocol) -> Rules:
    """The rules of a run under `protocol` (its `mutant` planted)."""
    return rules_named(protocol.mutant)
