"""The idempotent producer's client side: modes, producer id/epoch, sequences, error rules.

Contract (mixin of `Producer`): `enable_idempotence` resolves to off | requested | required
(KIP-185/192, ref §2.6; legacy true -> required, false -> off, "default" -> the profile's
default). `requested` writes idempotently only to topics whose message format is v2, `required`
fails sends to older formats with a clear error, and profiles without the modes treat
`requested` as `required` (the shipped boolean) and, not knowing topic formats, send and fail
on the broker's UNSUPPORTED_FOR_MESSAGE_FORMAT. UNKNOWN_PRODUCER_ID is benign iff the last
acknowledged offset fell below the response's logStartOffset (ref §2.5, 1.0 client): the
partition's sequences restart at 0 and the batch is retried; otherwise OutOfOrderSequence is
surfaced. OUT_OF_ORDER_SEQUENCE_NUMBER is retried when it is the consequence of an earlier
failed batch, and surfaced otherwise. The KIP-360 client (2.5+, `client_retries_out_of_order`)
retries both instead, and an OUT_OF_ORDER answer to the next expected sequence bumps the epoch
first, at the start of the next send loop, renumbering the partition's batches in flight from 0.
A batch the broker refused for good leaves no gap: a 1.0-2.4 client moves the later sequences
down, a 2.5+ client bumps the epoch; an authorization or version error makes an idempotent
producer fatal, which fails everything it holds. From 1.0 (`client_resolves_sequences`,
`TransactionManager`) a batch that expired after it was sent (not one out of retries, whose
fate is unknown and whose sequences Kafka leaves as they are) leaves its sequence
*unresolved*: the partition drains nothing new until its in-flight batches are answered, and
unless a later acknowledgement covered that sequence the partition restarts at sequence 0
under a new producer id (1.0-2.4, every partition) or epoch (2.5+), decided at
the start of every send loop whether or not a batch waits (`maybe_resolve_sequences`). Other
partitions move to the new epoch, from sequence 0, once nothing of theirs is in flight. Sequences are assigned when a batch is first
drained, so a batch that expires unsent leaves no gap. A batch is the producer's own when it
carries the producer's id *and* epoch (`hasProducerIdAndEpoch`, `ProducerIdAndEpoch.equals`).
A producer gets its id from a broker (InitProducerId, `producer_init`): at its first send loop,
after a 0.11-2.4 reset (`reset_producer_id`: an OutOfOrderSequence surfaced, an unresolved
sequence no later acknowledgement covered), when a 2.5+ epoch is exhausted (`bump_epoch`), and
when its process restarts (`start_new_session`); a 1.0-2.4 probe may also set a new one
mid-test as SenderTest does (`set_producer_id`).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.producer_init import MAX_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from sim.kafka.rules.client_producer import (
    BUMP_RETRY,
    FAIL,
    RESTART_RETRY,
    SURFACE_LOSS,
    idempotence_mode,
    last_acked_sequence,
)
from sim.kafka.rules.producer_state import increment_sequence, last_sequence

PID_BASE = 1000


class IdempotenceMixin:
    def init_idempotence(self, index: int) -> None:
        # an explicit request with acks other than all or retries = 0 is a config error,
        # refused when the scenario loads (KIP-679)
        args = (self.spec.enable_idempotence, self.spec.acks == "all", self.spec.retries)
        # what the profile offers for this configuration, and what the client does
        self.idempotence_promised = idempotence_mode(self.protocol, *args)
        self.idempotence = self.rules.idempotence_mode(self.protocol, *args)
        # a whole run's producer starts with no id: its first send loop asks a broker for one
        # (`producer_init`); a probe's starts with `default_pid` unless its state says otherwise
        self.pid, self.producer_epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        self.default_pid = PID_BASE + index
        self.next_seq: dict[str, int] = {}
        self.last_acked_offset: dict[str, int] = {}
        self.last_acked_seq: dict[str, int] = {}
        self.part_epoch: dict[str, int] = {}  # the epoch tp's sequences belong to (KIP-360)
        self.part_pid: dict[str, int] = {}  # and the producer id (`TxnPartitionEntry`)
        # tp -> the sequence after its failed, sent batches (`partitionsWithUnresolvedSequences`)
        self.unresolved: dict[str, int] = {}
        self.bump_required: set[str] = set()  # tps whose next send loop bumps the epoch
        self.fatal_error: int | None = None  # the error that put the producer in its fatal state

    def _format(self, tp: str) -> int:
        """The topic's message format as the client knows it. Only the KIP-185 design puts it
        in metadata (`MessageFormatVersion`, never shipped, ref §2.6): a shipped client assumes
        v2, sends, and meets the broker's UNSUPPORTED_FOR_MESSAGE_FORMAT."""
        if not self.protocol.idempotence_modes:
            return 2
        return self.meta.formats.get(tp.rpartition("-")[0], 2)

    def idempotent_for(self, tp: str) -> bool:
        return self.idempotence != "off" and self._format(tp) >= 2

    def admit_batch(self, tp: str) -> bool:
        """`required` refuses sends to a pre-v2 topic with a clear error (ref §2.6)."""
        if self.idempotence == "required" and self._format(tp) < 2:
            self.emit(V.PRODUCE_FAILED, {"bid": None, "tp": tp,
                                         "error": E.IDEMPOTENCE_UNSUPPORTED_FORMAT,
                                         "error_name": "IDEMPOTENCE_UNSUPPORTED_FORMAT",
                                         "mode": self.idempotence, "message_format": self._format(tp)})
            return False
        return True

    def stamp(self, batch, tp: str):
        if not self.idempotent_for(tp):
            return batch
        seq = self.next_seq.get(tp, 0)
        self.next_seq[tp] = increment_sequence(seq, batch.count)
        self.part_epoch.setdefault(tp, self.producer_epoch)
        return batch.with_sequence(self.part_pid.setdefault(tp, self.pid), self.part_epoch[tp],
                                   seq)

    def is_current(self, batch) -> bool:
        """Whether `batch` carries the producer's id and epoch (`hasProducerIdAndEpoch`)."""
        return (batch.pid, batch.producer_epoch) == (self.pid, self.producer_epoch)

    def set_producer_id(self, pid: int, epoch: int) -> None:
        """The test's own `resetProducerId()` then `setProducerIdAndEpoch` (a probe's
        `SetProducerId`, SenderTest at 1.0-2.4, which stands for an InitProducerId answer): the
        producer takes id `pid` at `epoch`, and the reset forgets every partition's sequences,
        acknowledgements and unresolved state (`topicPartitionBookkeeper.reset()`,
        `partitionsWithUnresolvedSequences.clear()`, 2.4.0). Batches already sequenced keep
        the id and epoch they were drained with; their partitions' new batches start at
        sequence 0 under the new id at once (2.4's drain has no stale-id check)."""
        self.pid, self.producer_epoch = pid, epoch
        for state in (self.next_seq, self.last_acked_seq, self.last_acked_offset,
                      self.part_epoch, self.part_pid, self.unresolved):
            state.clear()
        self.bump_required.clear()

    def start_new_session(self) -> None:
        """A restarted producer process: a new KafkaProducer, whose first send loop asks a
        broker for a new producer id (InitProducerId) and whose partitions start at sequence
        0. With no transactional.id nothing ties it to the old process's id (KIP-98; the
        KafkaProducer javadoc at 3.7.0: "the producer can only guarantee idempotence for
        messages sent within a single session"; `TransactionCoordinator.handleInitProducerId`
        hands a null transactional id a new producerId), so the broker does not deduplicate its batches against the old one's,
        and the new process is neither fatal, closed nor waiting for an old answer."""
        self.set_producer_id(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        self.fatal_error = None
        self.init_producer_id_state()
        self.init_close_state()

    def may_send(self, pb) -> bool:
        """May `pb` be drained now? A batch that already has a sequence (a retry) always may;
        a new one waits while its partition's sequences are unresolved or its epoch is stale
        (`RecordAccumulator.shouldStopDrainBatchesForPartition`)."""
        if pb.stamped:
            return True
        return self.sequences_ready(pb.tp)

    def bump_epoch(self) -> None:
        """`bumpIdempotentEpochAndResetIdIfNeeded`, first thing in a send loop of the KIP-360
        client (2.5+) once `bump_required` names partitions: one new epoch for all the
        partitions that asked for it (an OUT_OF_ORDER answer to the next sequence, a batch the
        broker refused, an UNKNOWN_PRODUCER_ID after retention), whose batches, in flight or
        not, are renumbered from sequence 0 (`startSequencesAtBeginning`) without waiting for
        their answers. At epoch Short.MAX_VALUE the producer resets its id instead
        (`resetIdempotentProducerId`): the batches are renumbered under no id and epoch, and
        the next InitProducerId answer gives the new ones (`producer_init`)."""
        if self.producer_epoch >= MAX_PRODUCER_EPOCH:
            self.reset_idempotent_producer_id()
        else:
            self.producer_epoch += 1
        for tp in sorted(self.bump_required):
            self.unresolved.pop(tp, None)
            self._restart_sequences(tp)
        self.bump_required.clear()

    def maybe_resolve_sequences(self) -> None:
        """First in every send loop, whether or not a batch waits (`Sender.runOnce`:
        `maybeResolveSequences` at 2.5-3.7, `shouldResetProducerStateAfterResolvingSequences`
        at 1.0-2.4): each partition with an unresolved sequence and no sequenced batch left
        (acked or failed, `hasInflightBatches`) is resolved. If a later acknowledgement covered
        it (the last acknowledged sequence is the one before the partition's next,
        `isNextSequence`) nothing changes; else the partition restarts at sequence 0 under a
        new epoch: the KIP-360 client (2.5+) asks for the bump that `bump_epoch` makes next in
        the same loop (`requestEpochBumpForPartition`), a 1.0-2.4 client resets its producer
        id (`reset_producer_id`), which settles every partition's unresolved sequences."""
        for tp in sorted(self.unresolved):
            if any(pb.stamped for pb in self.queues[tp]):
                continue
            del self.unresolved[tp]
            last_acked = self.last_acked_seq.get(tp, -1)
            if self.next_seq.get(tp, 0) == increment_sequence(last_acked, 1):
                continue  # "a batch was expired, but subsequent batches succeeded"
            if self.protocol.client_retries_out_of_order:
                self.bump_required.add(tp)
            else:
                self.reset_producer_id()  # `resetProducerIdIfNeeded`: the whole producer
                return

    def sequences_ready(self, tp: str) -> bool:
        """Whether a new batch of `tp` may be drained (`shouldStopDrainBatchesForPartition`):
        not while the partition's sequences are unresolved (`maybe_resolve_sequences` settles
        them), nor while its epoch is stale and a batch of the old one is out; a stale
        partition with nothing out restarts at sequence 0 under the current epoch
        (`maybeUpdateProducerIdAndEpoch`)."""
        if not self.protocol.client_resolves_sequences or self.idempotence == "off":
            return True
        if tp in self.unresolved:
            return False
        if (self.part_pid.get(tp, self.pid), self.part_epoch.get(tp, self.producer_epoch)) == \
                (self.pid, self.producer_epoch):
            return True
        if any(pb.stamped for pb in self.queues[tp]):
            return False
        self._restart_sequences(tp)
        return True

    def on_batch_refused(self, pb, err: int) -> None:
        """The broker refused a sent batch for good (`Sender.failBatch` with
        `adjustSequenceNumbers`, then `TransactionManager.handleFailedBatch`): a fatal error
        (`producer_fatal`) puts an idempotent producer in its fatal state; and a batch of the
        producer's current epoch leaves no gap behind it: the KIP-360 client (2.5+) bumps the
        epoch (`requestEpochBumpForPartition`), a 1.0-2.4 client moves the partition's later
        sequences down by the batch's records (`adjustSequencesDueToFailedBatch`); a 0.11
        client does neither."""
        if pb.batch.pid < 0:
            return
        if self.rules.producer_fatal(self.protocol, err):
            self.fatal_error = err
        if not pb.stamped or not self.is_current(pb.batch):
            return  # sent before a reset: `handleFailedBatch` ignores it
        if self.protocol.client_retries_out_of_order:
            self.bump_required.add(pb.tp)
        elif self.protocol.client_resolves_sequences:
            self._adjust_sequences(pb)

    def _adjust_sequences(self, failed) -> None:
        """`adjustSequencesDueToFailedBatch` (1.0-2.4): the partition's next sequence, and each
        of its sequenced batches after the failed one, move down by its record count."""
        tp, count = failed.tp, failed.batch.count
        self.next_seq[tp] = max(0, self.next_seq.get(tp, 0) - count)
        for queued in self.queues[tp]:
            b = queued.batch
            if not queued.stamped or b.pid < 0 or b.base_seq < failed.batch.base_seq:
                continue
            queued.batch = b.with_sequence(b.pid, b.producer_epoch, max(0, b.base_seq - count))
            queued.sequence_reset = True

    def abort_batches(self, err: int | None = None) -> None:
        """The send loop of a producer in its fatal state (`fatal_error` set), or in the
        abortable state of an InitProducerId authorization error (`err`): it fails every
        incomplete batch, queued or in flight, with that error (`Sender.runOnce`:
        `maybeAbortBatches`, `RecordAccumulator.abortBatches`); an answer to one in flight is
        then ignored, as for an expired batch."""
        for tp in self.tps:
            for pb in list(self.queues[tp]):
                pb.expired = pb.in_flight
                self._fail(pb, self.fatal_error if err is None else err, unresolved=False)

    def on_batch_failed(self, pb) -> None:
        """A sent idempotent batch failed: its sequence is unresolved, and the partition's
        entry is the sequence after it, the highest of its failed batches'
        (`markSequenceUnresolved`: `batch.lastSequence() + 1`)."""
        if pb.stamped and pb.batch.pid >= 0 and self.protocol.client_resolves_sequences:
            after = last_sequence(pb.batch) + 1
            self.unresolved[pb.tp] = max(self.unresolved.get(pb.tp, -1), after)

    def on_acked(self, pb, base_offset: int) -> None:
        if pb.batch.pid < 0:
            return
        if base_offset >= 0:
            last = base_offset + pb.batch.count - 1
            self.last_acked_offset[pb.tp] = max(self.last_acked_offset.get(pb.tp, -1), last)
        self.last_acked_seq[pb.tp] = last_acked_sequence(
            self.protocol, self.last_acked_seq.get(pb.tp, -1), last_sequence(pb.batch),
            (pb.batch.pid, pb.batch.producer_epoch), (self.pid, self.producer_epoch))

    def next_in_sequence(self, pb) -> bool:
        """Whether `pb` is the batch the client expects the broker to take next: it starts
        right after the partition's last acknowledged sequence."""
        return pb.batch.base_seq == increment_sequence(self.last_acked_seq.get(pb.tp, -1), 1)

    def handle_idempotence_error(self, pb, result) -> bool:
        """True when the error was handled here (retried or surfaced)."""
        err = result.error
        if pb.batch.pid < 0 or err not in (E.UNKNOWN_PRODUCER_ID, E.OUT_OF_ORDER_SEQUENCE_NUMBER):
            return False
        unresolved = self.unresolved.get(pb.tp)
        action = self.rules.idempotent_error_action(
            self.protocol, err, not self.is_current(pb.batch),
            self.next_in_sequence(pb), unresolved is not None,
            pb.batch.base_seq == unresolved, pb.sequence_reset, result.log_start_offset,
            self.last_acked_offset.get(pb.tp, -1))
        if action == FAIL:
            self._fail(pb, err)  # sent before a reset: not the client's producer any more
        elif action == SURFACE_LOSS:
            self._surface_loss(pb)
        else:
            if action == RESTART_RETRY:
                self._restart_sequences(pb.tp)
            elif action == BUMP_RETRY:
                self.bump_required.add(pb.tp)
            self._retry_or_fail(pb, err)
        return True

    def _surface_loss(self, pb) -> None:
        """OutOfOrderSequence reaches the application; the idempotent producer then resets its
        producer id ("this indicates data loss on the broker", ref §2.5; 0.11.0
        `Sender.failBatch`, 1.0-2.4 `TransactionManager.handleFailedBatch`: only pre-KIP-360
        clients surface the loss). Batches already sent keep the id, epoch and sequence the
        broker saw, and one that comes back with a sequence error fails (`canRetry`: its
        producer id is no longer the client's)."""
        self._fail(pb, E.OUT_OF_ORDER_SEQUENCE_NUMBER)
        self.reset_producer_id()

    def reset_producer_id(self) -> None:
        """`TransactionManager.resetProducerId` (0.11-2.4, read at 0.11.0, 1.0.0, 2.0.0 and
        2.4.0): the producer has no id or epoch (`ProducerIdAndEpoch.NONE`) and forgets every
        partition's sequences and unresolved state; its next send loop asks a broker for a new
        id (`Sender.maybeWaitForProducerId`, `hold_for_producer_id`) and drains nothing until
        the answer. The new id starts every partition at sequence 0, so the broker does not
        deduplicate a batch of the old id sent again under it (the application's resend)."""
        self.set_producer_id(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

    def _restart_sequences(self, tp: str) -> None:
        """`startSequencesAtBeginning(tp)`: renumber unacknowledged batches from 0."""
        seq = 0
        self.part_epoch[tp], self.part_pid[tp] = self.producer_epoch, self.pid
        for queued in self.queues[tp]:
            if queued.batch.pid < 0:
                continue
            queued.batch = queued.batch.with_sequence(self.pid, self.producer_epoch, seq)
            queued.sequence_reset = queued.stamped
            seq = increment_sequence(seq, queued.batch.count)
        self.next_seq[tp] = seq
        self.last_acked_seq[tp] = -1
