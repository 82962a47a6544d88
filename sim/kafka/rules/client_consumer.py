"""The consumer client's decisions: position validation (KIP-320) and resting after an error.

Contract: pure functions of the protocol switches and plain values.
"""

from __future__ import annotations


def validates_positions(proto) -> bool:
    """Whether the consumer validates a position against a new leader with
    OffsetsForLeaderEpoch before fetching (`SubscriptionState.maybeValidatePositionForCurrentLeader`,
    KAFKA-7747, 2.3, `consumer_validation`)."""
    return proto.consumer_validation


def rest_after_fetch_error(action: str, now_us: int, backoff_us: int,
                           leader_epoch: int) -> tuple[int, int] | None:
    """How long a partition rests after a failed Fetch: `(until_us, leader_epoch)` when the
    error left nothing better to do than back off (`retry.backoff.ms`; a newer epoch learnt
    meanwhile ends the rest), None when it is fetched again at once."""
    if action == "backoff":
        return now_us + backoff_us, leader_epoch
    return None
