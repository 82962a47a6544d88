"""The consumer client's decisions: position validation (KIP-320) and resting after an error.

Contract: pure functions of the protocol switches and plain values.
"""

from __future__ import annotations

from sim.kafka.rules.api_versions import broker_takes


def validates_positions(proto) -> bool:
    """Whether the consumer validates a position against a new leader with
    OffsetsForLeaderEpoch before fetching (`SubscriptionState.maybeValidatePositionForCurrentLeader`,
    KAFKA-7747, 2.3, `consumer_validation`)."""
    return proto.consumer_validation


def leader_validates(broker_profile: str) -> bool:
    """Whether a position may be validated against a leader on `broker_profile`: only one
    whose ApiVersions answer takes OffsetsForLeaderEpoch v3 (2.3+,
    `hasUsableOffsetForLeaderEpochVersion`: older brokers may demand CLUSTER_ACTION for it).
    Against an older leader the position is fetched from without validation: at 2.3-2.5
    `Fetcher.validateOffsetsAsync` completes the validation unasked (`completeValidation`),
    from 2.5.1/2.6 (KAFKA-9724) `SubscriptionState.maybeValidatePositionForCurrentLeader`
    never enters it (`updatePositionLeaderNoValidation`); both before the poll's Fetch goes
    out."""
    return broker_takes(broker_profile, "OffsetsForLeaderEpoch", 3)


def validation_outcome(proto, position: int, end_epoch: int, end_offset: int) -> str:
    """What an OffsetsForLeaderEpoch answer (no error) does to a position waiting for
    validation (`SubscriptionState.maybeCompleteValidation`, with a reset policy): "reset" (it
    waits for a reset) for an undefined epoch or end offset (-1) from 2.6
    (`consumer_resets_undefined_end_offset`, KAFKA-9840); "truncate" (it moves to the answered
    offset and epoch) for an end offset below the position, which before 2.6 includes the
    undefined -1; else "valid"."""
    if proto.consumer_resets_undefined_end_offset and (end_epoch < 0 or end_offset < 0):
        return "reset"
    return "truncate" if end_offset < position else "valid"


def rest_after_fetch_error(action: str, now_us: int, backoff_us: int,
                           leader_epoch: int) -> tuple[int, int] | None:
    """How long a partition rests after a failed Fetch: `(until_us, leader_epoch)` when the
    error left nothing better to do than back off (`retry.backoff.ms`; a newer epoch learnt
    meanwhile ends the rest), None when it is fetched again at once."""
    if action == "backoff":
        return now_us + backoff_us, leader_epoch
    return None


def position_leader(proto, position: tuple | None, current: tuple) -> tuple | None:
    """The (leader, epoch) a consumer's position fetches from once its metadata names
    `current` (`Metadata.currentLeader`: leader -1 when the cache has no current entry for the
    partition or its leader is not a known node, epoch -1 when none was seen), `position` the
    one it had (None: none yet). Before KIP-320's client side (2.3) the Fetcher reads the
    cluster's leader every time. From 2.3 `SubscriptionState.maybeValidatePosition` keeps the
    position when the metadata knows neither; from 2.6 (KAFKA-9840,
    `consumer_ignores_unknown_leader`) whenever it knows no leader, so the consumer fetches on
    from the last leader it had (and finds out there), where 2.3-2.5 take the epoch without a
    leader and fetch nothing until a Metadata answer names one."""
    if not proto.consumer_validation:
        return current
    leader, epoch = current
    if leader < 0 and (epoch < 0 or proto.consumer_ignores_unknown_leader):
        return position
    return current
