"""The producer client's decisions: idempotence mode, retry or fail, and the idempotent
producer's answer to a sequence error.

Contract: pure functions of the protocol switches and plain values, each citing the client
code it follows (ref §2.5, §2.6, §3.2-3.4).
"""

from __future__ import annotations

from typing import NamedTuple

from sim.kafka import errors as E
from sim.kafka.rules.backoff import exponential_backoff_us


def idempotence_mode(proto, configured: str, acks_all: bool, retries: int) -> str:
    """The producer's idempotence, off | requested | required, from `enable_idempotence`
    (`configured`: default | off | requested | required). KIP-679
    (`ProducerConfig.postProcessAndValidateIdempotenceConfigs`): the default turns off with
    acks other than all or retries = 0; without the KIP-185 modes `requested` is the shipped
    boolean, `required`; the best-effort `requested` turns off where it cannot hold."""
    fits = acks_all and retries > 0
    if configured == "default":
        on = proto.idempotence_default and proto.idempotent_producer and fits
        return "required" if on else "off"
    if configured == "requested" and not proto.idempotence_modes:
        return "required"
    if configured == "requested" and not fits:
        return "off"
    return configured


class RetryDecision(NamedTuple):
    """`fail_error`: the error the application sees (None: retry); `skip_backoff`: retry at
    once; `refresh_metadata`: ask for metadata (`refresh_now`: without waiting its backoff);
    `adjust_sequences`: the failed batch goes through `handleFailedBatch` with
    `adjustSequenceNumbers` (its retries were not spent), so an idempotent producer's later
    sequences of the partition are adjusted as for a batch the broker refused."""
    fail_error: int | None
    skip_backoff: bool
    refresh_metadata: bool
    refresh_now: bool
    adjust_sequences: bool = False


def complete_batch(discovery: str, err: int, age_us: int, delivery_timeout_us: int,
                   attempts: int, retries: int, disconnected: bool = False) -> RetryDecision:
    """`Sender.completeBatch` after a retriable error (a broker's, or NETWORK_EXCEPTION for a
    connection that closed under the request): retry unless `canRetry` says no, then fail with
    the error itself (`failBatch(batch, response, batch.attempts() < this.retries)`, read at
    2.1.0, 2.4.0 and 3.7.0). `canRetry` says no once delivery.timeout.ms has passed (KIP-91,
    `hasReachedDeliveryTimeout`) or the retries are spent. An answer that arrives past the
    delivery timeout finds the batch still incomplete only if no send loop expired it first
    (`Sender.sendProducerData` fails expired batches with TimeoutException before
    `client.poll` hands over the answers): the application then sees the answer's error, and
    a batch whose retries were not spent has its later sequences adjusted (`adjust_sequences`)
    as a refused batch's are; one out of retries leaves them as they are, since whether the
    broker took it is unknown. Metadata is refreshed after an InvalidMetadata error and after
    a lost connection (`NetworkClient` on a disconnect), not for a broker's own
    REQUEST_TIMED_OUT. The alternative KIP-951 rejected (`refresh_no_backoff`) drops the
    backoff for leader changes only (ref §3.4)."""
    fail = err if age_us >= delivery_timeout_us or attempts >= retries else None
    invalid = err in E.INVALID_METADATA
    no_wait = discovery == "refresh_no_backoff"
    # a sequence error that reaches here (`producer_idempotence`) has its own handling in
    # `handleFailedBatch`, which the model does not follow past the delivery timeout
    adjust = fail is not None and attempts < retries and err in E.RETRIABLE
    return RetryDecision(fail, no_wait and invalid, invalid or disconnected, no_wait, adjust)


def producer_fatal(proto, err: int) -> bool:
    """Whether a Produce error puts an idempotent producer in its fatal state
    (`TransactionManager.maybeTransitionToErrorState`: ClusterAuthorizationException,
    TransactionalIdAuthorizationException, UnsupportedVersionException, ProducerFencedException;
    read at 1.0.0, 2.6.0, 2.7.0 and 3.7.0). INVALID_PRODUCER_EPOCH's exception was
    ProducerFencedException until 2.6 and InvalidProducerEpochException from 2.7 (KIP-588,
    `Errors.java`): `invalid_producer_epoch_fatal`."""
    return err in E.PRODUCER_FATAL or (err == E.INVALID_PRODUCER_EPOCH
                                       and proto.invalid_producer_epoch_fatal)


def init_producer_id_abortable(proto, err: int) -> bool:
    """Whether an idempotent producer's InitProducerId refused with `err` leaves it in an
    abortable state rather than its fatal one: CLUSTER_AUTHORIZATION_FAILED and
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED from 3.6 (KAFKA-13668, `InitProducerIdHandler
    .handleResponse`: `abortableError`, read at 3.7.0; `fatalError` at 3.5.0 and 2.4.0):
    `init_producer_id_auth_abortable`."""
    return proto.init_producer_id_auth_abortable and err in E.AUTHORIZATION_FAILED


def retry_drops_stale_batch(proto, stale_epoch: bool) -> bool:
    """Whether a retry `complete_batch` allowed is refused because the idempotent batch was sent
    under a producer id and epoch the producer no longer has (it reset them after an
    OutOfOrderSequence): 0.11-2.4 `Sender.completeBatch` fails such a batch with
    OutOfOrderSequenceException ("the producer id changed ... This batch will be dropped",
    `hasProducerIdAndEpoch`); the KIP-360 client (2.5+, `client_retries_out_of_order`)
    reenqueues it as it is."""
    return stale_epoch and not proto.client_retries_out_of_order


# what the idempotent producer does with UNKNOWN_PRODUCER_ID or OUT_OF_ORDER_SEQUENCE_NUMBER
RETRY = "retry"  # retry the batch as it is
RESTART_RETRY = "restart_and_retry"  # renumber the partition from sequence 0, then retry
BUMP_RETRY = "bump_and_retry"  # bump the epoch once nothing is in flight, then retry
FAIL = "fail"  # fail the batch with the error
SURFACE_LOSS = "surface_loss"  # OutOfOrderSequence to the application, then reset


def idempotent_error_action(proto, err: int, stale_epoch: bool, next_in_sequence: bool,
                            unresolved: bool, next_for_unresolved: bool, sequence_reset: bool,
                            log_start_offset: int, last_acked_offset: int) -> str:
    """The idempotent producer's answer to a sequence error on one batch
    (`TransactionManager.canRetry`, ref §2.5). `next_in_sequence`: the batch starts right
    after the last acknowledged sequence (`isNextSequence`); `unresolved`: its partition has an
    unresolved sequence, and `next_for_unresolved`: the batch starts at the sequence that
    follows the unresolved ones (`isNextSequenceForUnresolvedPartition`: the base sequence
    equals the partition's entry in `partitionsWithUnresolvedSequences`, the highest
    `lastSequence() + 1` of its expired batches). For UNKNOWN_PRODUCER_ID a logStartOffset of
    -1 says nothing (the partition moved while the answer was built): retry as it is; so is a
    batch whose sequence was already reset. OUT_OF_ORDER is retried as it is when no sequence
    is unresolved and the batch is not the next expected one, or was reset. Otherwise the
    KIP-360 client (2.5+, `client_retries_out_of_order`) bumps the epoch and retries
    (`requestEpochBumpForPartition`; for OUT_OF_ORDER only when no sequence is unresolved or
    the batch is the next for the unresolved partition, else it retries and waits for the
    sequence to resolve); before it, a batch of an earlier epoch fails first, and see
    `pre_kip360_error_action`. The plain retries came with KAFKA-5494 (1.0,
    `client_resolves_sequences`)."""
    if stale_epoch and not proto.client_retries_out_of_order:
        return FAIL  # 1.0-2.4 `canRetry` asks `hasProducerIdAndEpoch` first
    if err == E.UNKNOWN_PRODUCER_ID:
        if proto.client_resolves_sequences and (log_start_offset == -1 or sequence_reset):
            return RETRY
    elif (proto.client_resolves_sequences and not unresolved
          and (sequence_reset or not next_in_sequence)):
        return RETRY
    if proto.client_retries_out_of_order:
        if err == E.UNKNOWN_PRODUCER_ID or not unresolved or next_for_unresolved:
            return BUMP_RETRY
        return RETRY
    return pre_kip360_error_action(proto, err, stale_epoch, next_in_sequence, log_start_offset,
                                   last_acked_offset)


def pre_kip360_error_action(proto, err: int, stale_epoch: bool, next_in_sequence: bool,
                            log_start_offset: int, last_acked_offset: int,
                            always_benign: bool = False) -> str:
    """Before KIP-360, once `idempotent_error_action`'s plain retries are ruled out: a batch
    sent under an earlier epoch fails (`hasProducerIdAndEpoch`); from 1.0
    (`client_log_start_check`) UNKNOWN_PRODUCER_ID is retention when the last acknowledged
    offset fell below the answer's logStartOffset, and the partition's sequences restart at 0
    (`startSequencesAtBeginning`) before the retry; anything else is a loss, surfaced as
    OutOfOrderSequence (the producer id is reset). A 0.11 client retries an OUT_OF_ORDER that
    follows an earlier failed batch and surfaces the next expected one's."""
    if stale_epoch:
        return FAIL
    if err == E.UNKNOWN_PRODUCER_ID:
        retention = always_benign or last_acked_offset < log_start_offset
        return RESTART_RETRY if retention and proto.client_log_start_check else SURFACE_LOSS
    if proto.client_resolves_sequences:
        return SURFACE_LOSS
    return SURFACE_LOSS if next_in_sequence else RETRY


def in_flight_stops_drain(proto, muted: bool, sent_to: int, leader: int) -> bool:
    """Whether a batch of the partition in flight keeps the partition's later batches from
    being drained: with max.in.flight.requests.per.connection = 1 the Sender mutes it
    (`guaranteeMessageOrder`); with `client_drains_on_leader_change` (this harness's proposal)
    while the batch went to a broker that no longer leads it."""
    return muted or (sent_to != leader and proto.client_drains_on_leader_change)


def should_backoff(discovery: str, attempts: int, attempts_when_leader_changed: int,
                   now_us: int, retry_at_us: int) -> bool:
    """`RecordAccumulator.shouldBackoff`: a retried batch waits out its backoff, except (KIP-951,
    `hasLeaderChangedForTheOngoingRetry`) its first retry after the leader's epoch advanced."""
    leader_changed = (discovery == "kip951" and attempts >= 1
                      and attempts == attempts_when_leader_changed)
    return attempts > 0 and now_us < retry_at_us and not leader_changed


def retry_backoff_us(proto, retry_backoff_ms: int, retry_backoff_max_ms: int, attempts: int,
                     draw_jitter) -> int:
    """The wait before retry `attempts`: retry.backoff.ms before 3.7 (`client_backoff =
    constant`); from 3.7 (KIP-580) retry.backoff.ms * 2^(attempts-1) times a jitter factor
    (`draw_jitter()`, drawn only then) in [0.8, 1.2], capped at retry.backoff.max.ms after the
    jitter (`ExponentialBackoff.backoff`, ref §3.3.4)."""
    if proto.client_backoff == "constant":
        return retry_backoff_ms * 1000
    return exponential_backoff_us(retry_backoff_ms, retry_backoff_max_ms, attempts - 1,
                                  draw_jitter())



def last_acked_sequence(proto, last_acked: int, batch_last_seq: int, batch_epoch: int,
                        producer_epoch: int) -> int:
    """The partition's last acknowledged sequence after a batch ending at `batch_last_seq` is
    acknowledged (`TransactionManager.maybeUpdateLastAckedSequence`): it only moves forward, so
    an answer completing out of order never moves it back. Before KIP-360's client (1.0-2.4,
    `Sender.completeBatch` / `handleCompletedBatch`) only a batch of the current producer id
    and epoch counts (`batch_epoch` and `producer_epoch` compare as given: the producer passes
    its (id, epoch) pairs); from 2.5 every batch does (the partition's sequences restart once the
    old epoch's batches are done)."""
    if not proto.client_retries_out_of_order and batch_epoch != producer_epoch:
        return last_acked
    return max(last_acked, batch_last_seq)
