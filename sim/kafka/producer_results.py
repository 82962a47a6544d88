"""What the producer does with its answers: acknowledgements, errors, retries, expiry and lost
connections.

Contract (mixin of `Producer`): a ProduceResponse settles each batch it answers: acknowledged
(`ack`), retried or failed as `complete_batch` decides (`produce_error`, `produce_failed`),
idempotence errors as `producer_idempotence` decides; KIP-951 hints in it are applied first
(ref §3.3.1). A closed or timed-out connection fails its requests' batches with a retriable
error and refreshes metadata; a batch older than delivery.timeout.ms fails, queued or in flight
(KIP-91), and an answer to a batch that expired in flight only settles its sequence.
"""

from __future__ import annotations

from sim.core.trace import json_str
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.pending_batch import PendingBatch
from sim.kafka.rules.backoff import JITTER
from sim.kafka.rules.client_producer import retry_drops_stale_batch

# the fields of the `ack` event, in the order its encoded text writes them
ACK_KEYS = ("bid", "tp", "base_offset", "count", "acks", "latency_us", "has_offset")


class ProduceResults:
    def on_message(self, msg) -> None:
        if msg.kind == "ProduceResponse":
            self._on_produce_response(int(msg.src[1:]), msg.body)
        elif msg.kind == "MetadataResponse":
            self._on_metadata_response(msg)
        elif msg.kind == "InitProducerIdResponse":
            self.on_init_producer_id_response(msg.body)

    def _on_produce_response(self, leader: int, resp) -> None:
        pbs = self.inflight.get(leader, {}).pop(resp.corr, None)
        if pbs is None:
            return
        by_tp = {pb.tp: pb for pb in pbs}
        hinted = False
        for result in resp.results:
            pb = by_tp.get(result.tp)
            if pb is None:
                continue
            pb.in_flight = False
            if pb.expired:
                self._settle_expired(pb, result)
                continue
            if (self.discovery == "kip951" and result.current_leader  # ref §3.3.1
                    and result.error in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)):
                leader_id, epoch = result.current_leader
                hinted |= self.meta.apply_hint(result.tp, leader_id, epoch, resp.node_endpoints,
                                               f"b{leader}")
            self._handle_result(pb, result)
        if self.meta_blocked:
            self.maybe_refresh()  # this response freed a slot on a connection
        self.drain()

    def _handle_result(self, pb: PendingBatch, result) -> None:
        err = result.error
        if err == E.NONE:
            self._ack(pb, result.base_offset)
        elif err == E.DUPLICATE_SEQUENCE_NUMBER:
            self._ack(pb, -1)  # success without offset (ref §2.5 step 5)
        elif self.handle_idempotence_error(pb, result):
            pass
        elif err in E.RETRIABLE:
            self._retry_or_fail(pb, err)
        else:  # refused for good: `failBatch(..., adjustSequenceNumbers = true)`
            self._fail(pb, err, unresolved=False)
            self.on_batch_refused(pb, err)

    def _retry_or_fail(self, pb: PendingBatch, err: int, disconnected: bool = False) -> None:
        """Retry `pb` after a retriable `err`, or fail it, as `complete_batch` decides; retried
        or failed, metadata is refreshed when it says so (`Sender.completeBatch` asks after
        deciding)."""
        backoff_us = None
        decision = self.rules.complete_batch(
            self.discovery, err, self.now_us - pb.batch.created_us,
            self.spec.delivery_timeout_ms * 1000, pb.attempts, self.spec.retries,
            disconnected)
        stale = pb.batch.pid >= 0 and not self.is_current(pb.batch)
        if decision.fail_error is not None:
            self._fail(pb, decision.fail_error, unresolved=False)
            if decision.adjust_sequences:  # past its delivery timeout, retries left
                self.on_batch_refused(pb, decision.fail_error)
        elif retry_drops_stale_batch(self.protocol, stale):
            # the producer reset since this batch was sent: its sequence is not the producer's
            # to resolve (`handleFailedBatch` ignores a batch of an old producer id)
            self._fail(pb, E.OUT_OF_ORDER_SEQUENCE_NUMBER, unresolved=False)
        else:
            pb.attempts += 1
            backoff_us = 0 if decision.skip_backoff else self._backoff_us(pb.attempts)
            pb.retry_at_us = self.now_us + backoff_us
            self.emit(V.PRODUCE_ERROR, {"bid": pb.batch.bid, "tp": pb.tp, "error": err,
                                        "action": "retry", "attempts": pb.attempts})
        if decision.refresh_metadata:
            self.request_update(immediate=decision.refresh_now)
        if backoff_us is not None:
            self.set_timer(backoff_us, "drain")

    def _backoff_us(self, attempts: int) -> int:
        """Before 3.7 (`client_backoff = constant`) `retry.backoff.ms`; from 3.7 (KIP-580)
        retry.backoff.ms * 2^(attempts-1) with ±20% jitter, capped at retry.backoff.max.ms
        after the jitter, as `ExponentialBackoff.backoff` does (ref §3.3.4)."""
        return self.rules.retry_backoff_us(
            self.protocol, self.spec.retry_backoff_ms, self.spec.retry_backoff_max_ms,
            attempts, lambda: self.rng("backoff").uniform(1 - JITTER, 1 + JITTER))

    def _ack(self, pb: PendingBatch, base_offset: int) -> None:
        self.queues[pb.tp].remove(pb)
        self.on_acked(pb, base_offset)
        batch, now = pb.batch, self.now_us
        latency, has_offset = now - batch.created_us, base_offset >= 0
        self.emit_encoded(
            V.ACK,
            f'{self.ack_head}{json_str(batch.bid)},"tp":{self.tp_json[pb.tp]},'
            f'"base_offset":{base_offset},"count":{batch.count},"acks":{self.acks_json},'
            f'"latency_us":{latency},"has_offset":{"true" if has_offset else "false"}}}',
            ACK_KEYS, (batch.bid, pb.tp, base_offset, batch.count, self.spec.acks, latency,
                       has_offset))

    def _fail(self, pb: PendingBatch, err: int, unresolved: bool = True) -> None:
        """Surface `err` for `pb` to the application (`produce_failed`); a sent idempotent
        batch's sequence is left `unresolved` unless told otherwise."""
        if pb in self.queues[pb.tp]:
            self.queues[pb.tp].remove(pb)
        fields = {"bid": pb.batch.bid, "tp": pb.tp, "error": err,
                  "error_name": V.outcome_name(err)}
        if err == E.OUT_OF_ORDER_SEQUENCE_NUMBER:
            # whether the batch was the next the client expected the broker to take, or follows
            # an earlier batch that failed (then OUT_OF_ORDER is that failure's consequence)
            fields["in_sequence"] = self.next_in_sequence(pb)
        if unresolved:
            self.on_batch_failed(pb)
        self.emit(V.PRODUCE_FAILED, fields)

    def on_disconnect(self, peer: str) -> None:
        """The connection to a broker closed (it died, or a probe's `Disconnect`): in-flight
        requests fail with NETWORK_EXCEPTION (`Sender.handleProduceResponse` on
        `wasDisconnected`: "Disconnected from node", read at 2.4.0 and 3.7.0)."""
        if peer.startswith("b"):
            self.close_connection(int(peer[1:]), E.NETWORK_EXCEPTION)

    def _request_timeout(self, leader: int, corr: int) -> None:
        """`NetworkClient.handleTimedOutRequests`: a request that timed out closes its
        connection, which fails every request in flight on it; the broker sees the close and
        drops the requests it had not read yet (so a retry cannot queue behind its own
        earlier copy on the old connection)."""
        if corr in self.inflight.get(leader, {}) or (corr == self.pid_inflight
                                                     and leader == self.pid_node):
            self.close_connection_with(f"b{leader}")
            self.close_connection(leader)

    def close_connection(self, leader: int, error: int = E.REQUEST_TIMED_OUT) -> None:
        """The connection to `leader` closed: its Produce requests fail with `error` (each
        batch retried or failed; REQUEST_TIMED_OUT for a request that timed out, as
        `wasTimedOut` gives from 3.5, NETWORK_EXCEPTION for a plain disconnect), the node waits
        out `reconnect.backoff.ms`, and metadata is refreshed, in flight or not
        (`NetworkClient`: "The disconnect may be the result of stale metadata, so request an
        update"); the only news an acks=0 producer gets of a moved leader."""
        self.lose_connection(leader)
        failed = self.inflight.pop(leader, {})
        for corr in sorted(failed):
            for pb in failed[corr]:
                pb.in_flight = False
                if not pb.expired:  # an expired batch is done: nothing is left to retry
                    self._retry_or_fail(pb, error, disconnected=True)
        if self.meta_inflight is not None and self.meta_node == leader:
            self.metadata_failed()
        self.init_producer_id_lost(leader)
        self.request_update()
        self.arm_send_loop()  # a probe's producer wakes when the backoff ends
        if failed:
            self.drain()

    def _expire(self) -> None:
        """Fail every batch older than delivery.timeout.ms with DELIVERY_TIMEOUT, queued or
        in flight (`Sender.sendProducerData`: `accumulator.expiredBatches` and, from 2.1,
        KIP-91's `getExpiredInflightBatches`). An expired batch's sequence is left unresolved
        only if it had been retried (`expiredBatch.inRetry()`); one still in flight stays on
        its connection, and its answer is not the application's any more (`_settle_expired`).
        A 0.11 client resets its producer id instead once a retried idempotent batch of its
        id expired (0.11.0.0 `Sender.sendProducerData`: `needsTransactionStateReset` when
        `expiredBatch.inRetry()`)."""
        limit = self.spec.delivery_timeout_ms * 1000
        reset = False
        for tp in self.tps:
            queue = self.queues[tp]
            if not queue or self.now_us - queue[0].batch.created_us < limit:
                continue  # queues are in creation order: the head is the oldest batch
            for pb in [pb for pb in queue if self.now_us - pb.batch.created_us >= limit]:
                pb.expired = pb.in_flight
                self._fail(pb, E.DELIVERY_TIMEOUT, unresolved=pb.attempts > 0)
                reset |= pb.attempts > 0 and pb.batch.pid >= 0
        if reset and not self.protocol.client_resolves_sequences:
            self.reset_producer_id()

    def _settle_expired(self, pb: PendingBatch, result) -> None:
        """The answer to a batch that expired in flight: a write still advances the acknowledged
        sequence (`TransactionManager.handleCompletedBatch` runs before `ProducerBatch.complete`,
        which ignores a batch already failed), so a sequence left unresolved may be resolved by
        it; an error changes nothing (`failBatch` finds the batch done)."""
        if result.error in (E.NONE, E.DUPLICATE_SEQUENCE_NUMBER):
            self.on_acked(pb, result.base_offset if result.error == E.NONE else -1)
