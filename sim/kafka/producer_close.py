"""The producer's close: `KafkaProducer.close`, `Sender.initiateClose` and `Sender.forceClose`.

Contract (mixin of `Producer`): `initiate_close(force)` is the application's close (a probe's
`Close` step; whole runs never close a producer). The accumulator takes no more records
(`RecordAccumulator.close`: an append throws). A graceful close (`initiateClose`) lets the
Sender go on as before, retries and a new producer id included, while a batch is undrained or
a request is in flight (`Sender.run`: the loop after `running` turns false), then its thread
ends (`close_if_done`). A forced close (`forceClose`) ends it at once: every incomplete batch,
queued or in flight, fails with PRODUCER_CLOSED (`RecordAccumulator.abortIncompleteBatches`:
"Producer is closed forcefully."), and an InitProducerId in flight is dropped
(`TransactionManager.close`, 3.x). Once the thread has ended the producer sends nothing and
reads no answer (`client.close()`), and its timers do nothing. Read at 2.4.0 and 3.7.0
(`Sender.run`, `initiateClose`, `forceClose`; SenderTest.testCloseWithProducerIdReset and
testForceCloseWithProducerIdReset).
"""

from __future__ import annotations

from sim.kafka import errors as E


class ProducerClose:
    def init_close_state(self) -> None:
        self.closing = False  # the application closed it (`running` is false)
        self.closed = False  # the Sender's thread has ended

    def initiate_close(self, force: bool) -> None:
        """The application's close; `force` is `forceClose` (`close(Duration.ZERO)`)."""
        if self.closed:
            return
        self.closing = True
        if force:
            self.abort_batches(E.PRODUCER_CLOSED)
            self._end_sender()
        else:
            self.drain()  # `wakeup`: the loop runs on until nothing is left

    def close_if_done(self) -> None:
        """After a send loop of a closing producer: its thread ends once no batch waits in the
        accumulator and no request is in flight (`hasUndrained`, `inFlightRequestCount`)."""
        if self.closing and not self.closed and not self._sender_busy():
            self._end_sender()

    def _sender_busy(self) -> bool:
        return (any(self.queues.values()) or any(self.inflight.values())
                or self.pid_inflight is not None or self.meta_inflight is not None)

    def _end_sender(self) -> None:
        self.closed = True
        self.send_loop = False  # no more wake-ups (`arm_send_loop`)
