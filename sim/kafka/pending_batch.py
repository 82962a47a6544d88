"""A batch inside the producer: its wire form plus the accumulator's retry bookkeeping.

Contract: plain mutable state of one batch (attempts, backoff, in flight, the leader epoch it
was last drained for, its sequence state); the producer's modules read and write it.
"""

from __future__ import annotations

from sim.kafka.messages import Batch


class PendingBatch:
    """A batch inside the producer: its wire form plus retry bookkeeping."""

    __slots__ = ("batch", "tp", "attempts", "retry_at_us", "in_flight", "current_leader_epoch",
                 "attempts_when_leader_changed", "stamped", "sequence_reset", "sent_to", "expired")

    def __init__(self, batch: Batch, tp: str):
        self.batch, self.tp = batch, tp
        self.attempts = 0
        self.retry_at_us = 0
        self.in_flight = False
        self.current_leader_epoch = -1
        self.attempts_when_leader_changed = 0
        self.stamped = False  # producer id, epoch and sequence assigned (at first drain)
        self.sequence_reset = False  # renumbered from 0 (`ProducerBatch.sequenceHasBeenReset`)
        self.sent_to = -1  # the broker its latest request went to
        # failed at delivery.timeout.ms while its request was still out: the application has
        # its TimeoutException, and the request's answer only settles the sequences
        self.expired = False
