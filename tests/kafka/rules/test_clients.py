"""The client rules: metadata epochs (ref §3.1), KIP-951 hints (§3.3.2), idempotence modes
(§2.6), retry decisions (§2.5, §3.2), the idempotent producer's sequence errors (§2.5) and
the consumer's (KIP-320), across profiles."""

from __future__ import annotations

import dataclasses

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES, newer, resolve_protocol
from sim.kafka.rules import client_consumer as cc
from sim.kafka.rules import client_metadata as cm
from sim.kafka.rules import client_producer as cp


@pytest.mark.parametrize("profile", list(PROFILES))
def test_partition_metadata_by_epoch(profile):
    """`updateLatestMetadata` compares the last seen epoch (6, topic id 1 cached)."""
    proto = PROFILES[profile]
    decide = cm.update_partition_metadata
    assert decide(proto, None, None, 1, 0) == (True, False, True, False)  # nothing seen yet
    assert decide(proto, 6, 1, 1, 6) == (True, False, False, False)  # equal
    assert decide(proto, 6, 1, 1, 7) == (True, False, True, False)
    older = decide(proto, 6, 1, 1, 5)
    assert older == (cm.REJECT if proto.client_rejects_stale_metadata else (True, False, False, False))
    recreated = decide(proto, 6, 1, 2, 0)  # both ids known, and different
    if proto.client_accepts_recreated_topic != "off":
        assert recreated == (True, False, True, False)
    else:
        assert recreated.take is not proto.client_rejects_stale_metadata


@pytest.mark.parametrize("profile", list(PROFILES))
def test_an_entry_without_an_epoch_is_taken_and_the_last_seen_epoch_forgotten(profile):
    """`updateLatestMetadata`'s "old cluster formats" branch: an answer without a (reliable)
    leader epoch is taken whatever was seen, and `lastSeenLeaderEpochs.remove(tp)`."""
    proto = PROFILES[profile]
    for last_seen in (None, 6):
        assert cm.update_partition_metadata(proto, last_seen, 1, 1, -1) == cm.NO_EPOCH
    assert cm.NO_EPOCH.take and cm.NO_EPOCH.forget and not cm.NO_EPOCH.reject


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_partition_dropped_from_the_cache_is_judged_by_its_last_seen_epoch(profile):
    """The cache lost the topic (no known topic id) but `lastSeenLeaderEpochs` kept 6: the
    same topic at an older epoch is stale metadata, while the 3.1 rule (KAFKA-13488) counts any
    topic id as new when the cache holds none, the same one included; 3.0.0's (KAFKA-12257)
    needs both ids."""
    proto = PROFILES[profile]
    decide = cm.update_partition_metadata
    # a new id is news, as a new epoch
    recreated_rule = proto.client_accepts_recreated_topic == "new_id"
    assert decide(proto, 6, None, 1, 6) == (True, False, recreated_rule, False)
    back = decide(proto, 6, None, 1, 5)
    if recreated_rule:
        assert back == (True, False, True, False)
    elif proto.client_rejects_stale_metadata:
        assert back == cm.REJECT
    else:
        assert back == (True, False, False, False)


@pytest.mark.parametrize("profile, both_known, cache_lost", [
    ("2.8", False, False), ("3.0", True, False), ("3.1", True, True), ("3.7", True, True)])
def test_a_recreated_topic_by_release(profile, both_known, cache_lost):
    """`Metadata.updateLatestMetadata` with last seen epoch 12 and an answer at epoch 3 under
    topic id 8: 2.8.0 knows no topic ids and rejects it; 3.0.0 (KAFKA-12257, `oldTopicId !=
    null`) takes it only when the cache holds another id (MetadataTest
    testEpochUpdateOnChangedTopicIds at 3.0.0); from 3.1.0 (KAFKA-13488) also when the cache
    lost the topic (testEpochUpdateAfterTopicDeletion). The same id never counts."""
    proto = PROFILES[profile]
    assert cm.topic_recreated(proto, 7, 8) is both_known
    assert cm.topic_recreated(proto, None, 8) is cache_lost
    assert not cm.topic_recreated(proto, 8, 8)
    taken = (True, False, True, False)
    assert (cm.update_partition_metadata(proto, 12, 7, 8, 3) == taken) is both_known
    assert (cm.update_partition_metadata(proto, 12, None, 8, 3) == taken) is cache_lost


@pytest.mark.parametrize("profile", list(PROFILES))
def test_leader_epochs_learnt_out_of_band(profile):
    """`updateLastSeenEpochIfNewer` (KAFKA-7738, 2.2): only newer than a known epoch; the cached
    entry is current only at the last seen epoch (`partitionMetadataIfCurrent`)."""
    proto = PROFILES[profile]
    has_map = proto.client_rejects_stale_metadata
    assert cm.update_last_seen_epoch_if_newer(proto, 4, 5) is has_map
    assert not cm.update_last_seen_epoch_if_newer(proto, 4, 4)
    assert not cm.update_last_seen_epoch_if_newer(proto, 4, 3)
    assert not cm.update_last_seen_epoch_if_newer(proto, None, 5)  # KAFKA-9724 (2.6)
    assert not cm.update_last_seen_epoch_if_newer(proto, 4, -1)
    assert cm.partition_metadata_if_current(proto, 4, 4)
    assert cm.partition_metadata_if_current(proto, None, 4)
    assert cm.partition_metadata_if_current(proto, 5, 4) is not has_map


def test_an_answer_without_brokers_is_not_taken():
    assert cm.metadata_answer_usable((1, 2)) and not cm.metadata_answer_usable(())


def test_hints():
    proto = resolve_protocol("3.7")
    hint = cm.update_partition_leadership
    assert hint(proto, 6, 3, 7, True)
    assert not hint(proto, 6, 3, 6, True)  # not newer
    assert not hint(proto, 6, 3, 7, False)  # unknown node
    assert not hint(proto, None, 3, 7, True)  # not cached
    assert not hint(proto, 6, -1, 7, True) and not hint(proto, 6, 3, -1, True)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_idempotence_mode(profile):
    proto = PROFILES[profile]
    on = proto.idempotence_default and proto.idempotent_producer
    assert cp.idempotence_mode(proto, "default", True, 3) == ("required" if on else "off")
    assert cp.idempotence_mode(proto, "default", False, 3) == "off"
    assert cp.idempotence_mode(proto, "default", True, 0) == "off"
    requested = cp.idempotence_mode(proto, "requested", True, 3)
    assert requested == ("requested" if proto.idempotence_modes else "required")
    assert cp.idempotence_mode(proto, "required", True, 3) == "required"
    assert cp.idempotence_mode(proto, "off", True, 3) == "off"


def test_retry_refreshes_metadata_only_for_invalid_metadata_and_lost_connections():
    def refresh(err, disconnected=False):
        return cp.complete_batch("metadata", err, 0, 10, 0, 5, disconnected).refresh_metadata
    assert not refresh(E.REQUEST_TIMED_OUT)  # the broker's own timeout
    assert not refresh(E.NOT_ENOUGH_REPLICAS)
    assert refresh(E.REQUEST_TIMED_OUT, disconnected=True)
    assert refresh(E.NOT_LEADER_OR_FOLLOWER) and refresh(E.FENCED_LEADER_EPOCH)
    # LeaderNotAvailableException is an InvalidMetadataException, so retriable (SenderTest
    # testIdempotenceWithMultipleInflightsRetriedInOrder answers LEADER_NOT_AVAILABLE)
    assert refresh(E.LEADER_NOT_AVAILABLE) and E.LEADER_NOT_AVAILABLE in E.RETRIABLE


def test_spent_retries_and_a_passed_deadline_fail_with_the_answers_error():
    assert cp.complete_batch("metadata", E.NOT_ENOUGH_REPLICAS, 0, 10, 0, 0).fail_error == \
        E.NOT_ENOUGH_REPLICAS
    # an answer read past delivery.timeout.ms before a send loop expired the batch:
    # `canRetry` is false and `failBatch` gives the answer's error, not a TimeoutException
    # (Sender.completeBatch at 2.4.0 and 3.7.0)
    late = cp.complete_batch("metadata", E.NOT_ENOUGH_REPLICAS, 10, 10, 0, 5)
    assert late.fail_error == E.NOT_ENOUGH_REPLICAS and late.adjust_sequences
    assert cp.complete_batch("metadata", E.NOT_ENOUGH_REPLICAS, 9, 10, 4, 5).fail_error is None
    failed = cp.complete_batch("metadata", E.NOT_LEADER_OR_FOLLOWER, 0, 10, 0, 0)
    assert failed.fail_error == E.NOT_LEADER_OR_FOLLOWER and failed.refresh_metadata
    # out of retries, the sequences are left as they are (`failBatch(..., batch.attempts() <
    # this.retries)`; SenderTest testEpochBumpOnOutOfOrderSequenceForNextBatchWhenBatchInFlightFails
    # at 3.7.0); past the delivery timeout with retries left they are adjusted
    assert not failed.adjust_sequences
    assert not cp.complete_batch("metadata", E.NETWORK_EXCEPTION, 10, 10, 5, 5).adjust_sequences


def test_refresh_no_backoff_skips_the_backoff_for_leader_changes_only():
    leader = cp.complete_batch("refresh_no_backoff", E.NOT_LEADER_OR_FOLLOWER, 0, 10, 0, 5)
    other = cp.complete_batch("refresh_no_backoff", E.NOT_ENOUGH_REPLICAS, 0, 10, 0, 5)
    assert leader.skip_backoff and leader.refresh_now and not other.skip_backoff
    assert not cp.complete_batch("kip951", E.NOT_LEADER_OR_FOLLOWER, 0, 10, 0, 5).skip_backoff


def _action(profile, err, stale=False, nxt=True, unresolved=False, reset=False, log_start=0,
            acked=5, next_unresolved=False):
    return cp.idempotent_error_action(resolve_protocol(profile), err, stale, nxt, unresolved,
                                      next_unresolved, reset, log_start, acked)


@pytest.mark.parametrize("profile", ["2.5", "3.7"])
def test_kip_360_clients_retry_sequence_errors(profile):
    """`TransactionManager.canRetry` from 2.5: UNKNOWN_PRODUCER_ID bumps the epoch
    (`requestEpochBumpForPartition`) unless the answer's logStartOffset is -1 or the batch's
    sequence was reset, which retry it as it is; OUT_OF_ORDER as before KIP-360 when it is a
    plain retry, else a bump for a real gap."""
    assert _action(profile, E.UNKNOWN_PRODUCER_ID) == cp.BUMP_RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, log_start=10) == cp.BUMP_RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, log_start=-1) == cp.RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, reset=True) == cp.RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, stale=True) == cp.BUMP_RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER) == cp.BUMP_RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, nxt=False) == cp.RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, reset=True) == cp.RETRY
    # unresolved: only the batch at the partition's unresolved next sequence shows a gap
    # (`isNextSequenceForUnresolvedPartition`), whatever the last acknowledged one
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, reset=True, unresolved=True,
                   next_unresolved=True) == cp.BUMP_RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, nxt=False, unresolved=True,
                   next_unresolved=True) == cp.BUMP_RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, unresolved=True) == cp.RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, nxt=False, unresolved=True) == \
        cp.RETRY


@pytest.mark.parametrize("profile", ["1.0", "2.4"])
def test_pre_kip_360_clients_tell_retention_from_loss_by_the_log_start(profile):
    """1.0-2.4 `canRetry`: a batch of an earlier producer epoch fails; UNKNOWN_PRODUCER_ID with
    logStartOffset -1 or a reset sequence is retried as it is, below the last acknowledged
    offset it is retention (sequences restart at 0), else a loss; OUT_OF_ORDER is retried when
    no sequence is unresolved and the batch is not the next one or was reset."""
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, log_start=10, acked=5) == cp.RESTART_RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, log_start=-1) == cp.RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, reset=True) == cp.RETRY
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, log_start=3, acked=5) == cp.SURFACE_LOSS
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER) == cp.SURFACE_LOSS
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, nxt=False) == cp.RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, reset=True) == cp.RETRY
    assert _action(profile, E.OUT_OF_ORDER_SEQUENCE_NUMBER, nxt=False, unresolved=True) == \
        cp.SURFACE_LOSS
    assert _action(profile, E.UNKNOWN_PRODUCER_ID, stale=True, log_start=-1) == cp.FAIL


def test_a_0_11_client_surfaces_every_unknown_producer():
    assert _action("0.11", E.UNKNOWN_PRODUCER_ID, log_start=10, acked=5) == cp.SURFACE_LOSS


@pytest.mark.parametrize("profile", list(PROFILES))
def test_consumer_rules(profile):
    proto = PROFILES[profile]
    assert cc.validates_positions(proto) is proto.consumer_validation
    assert cc.rest_after_fetch_error("backoff", 100, 50, 4) == (150, 4)
    assert cc.rest_after_fetch_error("retry", 100, 50, 4) is None


@pytest.mark.parametrize("profile", list(PROFILES))
def test_the_position_follows_the_current_leader(profile):
    """`SubscriptionState.maybeValidatePosition`: a known leader is taken; neither leader nor
    epoch is ignored (2.3+); an epoch without a leader is taken by 2.3-2.5 and ignored from 2.6
    (KAFKA-9840); before 2.3 the Fetcher reads the metadata's leader every time."""
    proto = PROFILES[profile]
    old, follow = (2, 4), cc.position_leader
    assert follow(proto, old, (3, 5)) == (3, 5)
    assert follow(proto, None, (3, 5)) == (3, 5)
    if not proto.consumer_validation:
        assert follow(proto, old, (-1, 5)) == (-1, 5) and follow(proto, old, (-1, -1)) == (-1, -1)
        return
    assert follow(proto, old, (-1, -1)) == old
    assert follow(proto, old, (-1, 5)) == (old if proto.consumer_ignores_unknown_leader
                                          else (-1, 5))
    assert proto.consumer_ignores_unknown_leader is not newer("2.6", profile)  # KAFKA-9840


@pytest.mark.parametrize("profile", list(PROFILES))
def test_an_undefined_validation_answer_resets_from_2_6(profile):
    """`SubscriptionState.maybeCompleteValidation` (position 5): an end offset below the
    position is a truncation, at or past it the position is valid; an undefined epoch or end
    offset asks for a reset from 2.6.0 (KAFKA-9840), where 2.3-2.5 compared only the offset (so
    -1 was a truncation to -1, and an undefined epoch with end offset 9 was valid)."""
    proto, outcome = PROFILES[profile], cc.validation_outcome
    assert outcome(proto, 5, 3, 2) == "truncate" and outcome(proto, 5, 3, 9) == "valid"
    from_2_6 = not newer("2.6", profile)
    assert proto.consumer_resets_undefined_end_offset is from_2_6
    assert outcome(proto, 5, 2, -1) == ("reset" if from_2_6 else "truncate")
    assert outcome(proto, 5, -1, 9) == ("reset" if from_2_6 else "valid")


@pytest.mark.parametrize("profile", ["1.0", "2.4", "2.5", "3.7"])
def test_the_last_acknowledged_sequence_only_moves_forward(profile):
    """`maybeUpdateLastAckedSequence`: an answer that completes out of order (the batch ending
    at 9 acknowledged after the one ending at 14) leaves it at 14."""
    proto = resolve_protocol(profile)
    assert cp.last_acked_sequence(proto, 14, 9, 0, 0) == 14
    assert cp.last_acked_sequence(proto, 9, 14, 0, 0) == 14
    # a batch of an earlier producer epoch counts only for a KIP-360 client (2.5+)
    old_epoch = cp.last_acked_sequence(proto, -1, 14, 0, 1)
    assert old_epoch == (14 if proto.client_retries_out_of_order else -1)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_retry_of_a_batch_sent_before_a_producer_reset_is_dropped_before_kip_360(profile):
    """`Sender.completeBatch` 0.11-2.4 fails a retriable batch of an old producer id with
    OutOfOrderSequenceException; 2.5+ reenqueues it (SenderTest
    testBatchesDrainedWithOldProducerIdShouldFail... at 2.4.0, ...ShouldSucceed... at 2.5.0)."""
    proto = PROFILES[profile]
    assert not cp.retry_drops_stale_batch(proto, False)
    assert cp.retry_drops_stale_batch(proto, True) is newer("2.5", profile)  # KIP-360


@pytest.mark.parametrize("keep,cached,seen,known", [
    (False, 7, 7, 7), (False, None, 7, None),  # Kafka: the id goes with the cache
    (True, None, 7, 7),                         # kept while the last seen epochs are
    (True, 8, 7, 8), (True, None, None, None),
])
def test_known_topic_id(keep, cached, seen, known):
    """`client_keeps_unlisted_topic_id`: the id a recreation is judged against."""
    proto = dataclasses.replace(PROFILES["3.7"], client_keeps_unlisted_topic_id=keep)
    assert cm.known_topic_id(proto, cached, seen) == known
