"""The idempotent producer's InitProducerId round trip.

Contract (mixin of `Producer`): an idempotent producer with no producer id (`pid` below 0: a
whole run's producer at its start, a 0.11-2.4 reset, `reset_producer_id`, or the KIP-360
client's reset on an exhausted epoch, `bump_epoch`) asks for one and sends no Produce until it
has it. Each send loop of such a producer stops after
this (`hold_for_producer_id`): it sends InitProducerId to the least loaded node when none is in
flight and its retry backoff has passed, and sends no produce data and expires no batch, as
Kafka's Sender does: 0.11-2.4 `Sender.maybeWaitForProducerId` blocks the Sender thread until an
answer gives the id, then `runOnce` returns while `!hasProducerId()` (read at 2.4.0); 2.5+
`runOnce` enqueues the request (`bumpIdempotentEpochAndResetIdIfNeeded`) and returns from
`maybeSendAndPollTransactionalRequest` while it is queued or in flight (read at 2.5.0 and
3.7.0). The answer (`on_init_producer_id_response`) sets the id and epoch
(`setProducerIdAndEpoch`; no sequence is reset: the request is not an epoch bump) and runs a
send loop; a retriable error, a closed connection or a timeout sends it again after
retry.backoff.ms (2.4.0's `time.sleep(retryBackoffMs)` after the attempt, 3.7.0's before a
retried request, `isRetry`), and a 0.11-2.4 client also asks for metadata then
(`metadata.requestUpdate()`, which the 2.5+ queue does not do). From 3.6 an authorization
error (CLUSTER_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED) is abortable
(`init_producer_id_abortable`, KAFKA-13668): the next send loop fails every incomplete batch with
it and the producer is uninitialized again, so the loop after asks for an id again
(`handle_authorization_error`); any other error, and those before 3.6, is fatal
(`transitionToFatalError`). A broker answers the request with a new id at epoch 0
(`sim.kafka.producer_ids`).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.connection import RECONNECT_BACKOFF_US
from sim.kafka.messages import InitProducerId

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 32767  # Short.MAX_VALUE


class ProducerIdInit:
    def init_producer_id_state(self) -> None:
        self.pid_inflight: int | None = None  # the corr of the InitProducerId in flight
        self.pid_node = -1  # where it went
        self.pid_retry_at = 0  # no InitProducerId goes before this (its retry backoff)
        # the abortable error an InitProducerId answer left (3.6+), until the next send loop
        self.abortable_error: int | None = None

    def needs_producer_id(self) -> bool:
        """An idempotent producer without a producer id (`!hasProducerId()`)."""
        return self.pid < 0 and self.idempotence != "off"

    def hold_for_producer_id(self) -> bool:
        """The tail of a send loop that has no producer id: ask for one if nothing is in
        flight and the backoff has passed; True when the loop must stop here (no produce
        data, no expiry)."""
        if not self.needs_producer_id():
            return False
        if self.pid_inflight is None and self.now_us >= self.pid_retry_at:
            self._send_init_producer_id()
        return True

    def _send_init_producer_id(self) -> None:
        """InitProducerId to the least loaded node (`client.leastLoadedNode`). With none ready
        (every connection full or in reconnect backoff) it waits for one, as 2.4.0's
        `awaitLeastLoadedNodeReady` polls and 3.7.0's queued request waits: the next send loop
        an answer or a reconnect backoff's end runs asks again (at the latest after
        `reconnect.backoff.ms`, as a metadata refresh does)."""
        node = self.pick_least_loaded("init_producer_id")
        if node is None:
            self.set_timer(RECONNECT_BACKOFF_US, "drain")
            return
        self.corr += 1
        self.pid_inflight, self.pid_node = self.corr, node
        self.send(f"b{node}", "InitProducerId", InitProducerId(self.corr))
        self.set_timer(self.spec.request_timeout_ms * 1000, "request_timeout", (node, self.corr))

    def on_init_producer_id_response(self, resp) -> None:
        """The answer to the InitProducerId in flight (another is ignored): see the module
        contract."""
        if resp.corr != self.pid_inflight:
            return
        self.pid_inflight = None
        if resp.error == E.NONE:
            self.pid, self.producer_epoch = resp.producer_id, resp.producer_epoch
        elif resp.error in E.RETRIABLE:
            self._retry_init_producer_id()
            return
        elif self.rules.init_producer_id_abortable(self.protocol, resp.error):
            self.abortable_error = resp.error  # `abortableError`: ABORTABLE_ERROR
        else:
            self.fatal_error = resp.error
        self.drain()

    def handle_authorization_error(self) -> None:
        """A send loop in the abortable state an InitProducerId authorization error left
        (`Sender.shouldHandleAuthorizationError` at 3.7.0): it fails every incomplete batch with
        the error (`maybeAbortBatches`) and makes the producer uninitialized, with no error
        (`transitionToUninitialized`); `runOnce` returns without polling, so the Sender's next
        loop runs at once, here too, and asks for an id again
        (`bumpIdempotentEpochAndResetIdIfNeeded`)."""
        err, self.abortable_error = self.abortable_error, None
        self.abort_batches(err)
        self.drain()

    def init_producer_id_lost(self, node: int) -> None:
        """The connection to `node` closed: an InitProducerId in flight there is sent again
        after the backoff (2.4.0: the IOException of `sendAndReceive`; 3.7.0: `reenqueue` on
        `wasDisconnected`)."""
        if self.pid_inflight is not None and self.pid_node == node:
            self.pid_inflight = None
            self._retry_init_producer_id()

    def init_producer_id_in_flight_to(self, node: int) -> bool:
        return self.pid_inflight is not None and self.pid_node == node

    def _retry_init_producer_id(self) -> None:
        backoff_us = self.spec.retry_backoff_ms * 1000
        self.pid_retry_at = self.now_us + backoff_us
        if not self.protocol.client_retries_out_of_order:
            self.request_update()  # 2.4.0 `maybeWaitForProducerId`: metadata.requestUpdate()
        self.set_timer(backoff_us, "drain")

    def reset_idempotent_producer_id(self) -> None:
        """`resetIdempotentProducerId` (2.5+, on an epoch bump at Short.MAX_VALUE): the producer
        has no id or epoch (`ProducerIdAndEpoch.NONE`) until an InitProducerId answer gives a
        new one."""
        self.pid, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
