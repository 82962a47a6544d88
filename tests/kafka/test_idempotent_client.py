"""The idempotent producer's client bookkeeping (`IdempotenceMixin`) driven by hand: sequences,
epochs, unresolved batches and how each profile's client answers sequence errors (ref §2.5)."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.options import ProducerOptions


class _Client:
    """The idempotent client's bookkeeping alone (IdempotenceMixin), driven by hand."""

    def __new__(cls, profile: str):
        from types import SimpleNamespace

        from sim.kafka.producer_idempotence import IdempotenceMixin
        from sim.kafka.profiles import resolve_protocol
        from sim.kafka.rules import rules_for

        class Stub(IdempotenceMixin):
            def emit(self, kind, fields):
                self.events.append((kind, fields))

            def _fail(self, pb, err):
                self.queues[pb.tp].remove(pb)
                self.on_batch_failed(pb)
                self.events.append(("failed", pb.tp, err))

            def _retry_or_fail(self, pb, err):
                self.events.append(("retry", pb.tp, err))

        stub = Stub()
        stub.protocol = resolve_protocol(profile)
        stub.rules = rules_for(stub.protocol)
        stub.spec = ProducerOptions(name="p", topic="t", enable_idempotence="required",
                                    acks="all", retries=3)
        stub.tps = ["t-0", "t-1"]
        stub.queues = {tp: [] for tp in stub.tps}
        stub.meta = SimpleNamespace(formats={})
        stub.events = []
        stub.init_idempotence(0)
        stub.pid, stub.producer_epoch = stub.default_pid, 0  # as an InitProducerId answer
        return stub


def _send(client, tp: str, bid: str):
    from sim.kafka.messages import Batch
    from sim.kafka.producer import PendingBatch
    pb = PendingBatch(Batch(bid, "p", 1, 0), tp)
    client.queues[tp].append(pb)
    pb.batch, pb.stamped, pb.in_flight = client.stamp(pb.batch, tp), True, True
    return pb


def _ack(client, pb, offset: int) -> None:
    client.queues[pb.tp].remove(pb)
    client.on_acked(pb, offset)


@pytest.mark.parametrize("profile", ["1.0", "2.4"])
def test_surfacing_a_loss_leaves_batches_in_flight_as_the_broker_saw_them(profile):
    """A real loss on t-0 is surfaced while t-1's batch X is in flight: the producer resets its
    id (`resetProducerId`). X keeps the id, epoch and sequence it was sent with, so the broker
    takes it as sent; once an InitProducerId answer gives the new id, t-1's next batch Y goes
    under it from sequence 0 at once (2.4's drain has no stale-id check), which the broker
    takes as a new producer's first batch, not as a second, false OUT_OF_ORDER."""
    from types import SimpleNamespace

    from sim.kafka.idempotence import producers_of, record_append
    from sim.kafka.log import Log
    from sim.kafka.profiles import resolve_protocol
    from sim.kafka.rules.producer_state import check_producer_append

    client, proto = _Client(profile), resolve_protocol(profile)
    t1 = SimpleNamespace(log=Log())
    for i in range(3):
        pb = _send(client, "t-1", f"a{i}")
        base = t1.log.append(1, 0, pb.batch, 0)
        record_append(t1.log, pb.batch, base, 0)
        _ack(client, pb, base)
    x = _send(client, "t-1", "X")
    sent_x = x.batch
    for i in range(3):
        _ack(client, _send(client, "t-0", f"z{i}"), i)
    lost = _send(client, "t-0", "L")
    client.handle_idempotence_error(lost, SimpleNamespace(error=E.UNKNOWN_PRODUCER_ID, log_start_offset=0))
    assert ("failed", "t-0", E.OUT_OF_ORDER_SEQUENCE_NUMBER) in client.events
    assert (client.pid, client.producer_epoch) == (-1, -1)  # `ProducerIdAndEpoch.NONE`
    assert x.batch == sent_x  # not renumbered while in flight
    client.pid, client.producer_epoch = 5000, 0  # the InitProducerId answer
    assert client.sequences_ready("t-1")
    y = _send(client, "t-1", "Y")
    assert (y.batch.pid, y.batch.producer_epoch, y.batch.base_seq) == (5000, 0, 0)
    assert check_producer_append(proto, producers_of(t1.log).get(sent_x.pid), sent_x) == \
        (E.NONE, None)
    base = t1.log.append(1, 0, sent_x, 0)
    record_append(t1.log, sent_x, base, 0)
    x.in_flight = False
    _ack(client, x, base)
    assert check_producer_append(proto, producers_of(t1.log).get(y.batch.pid), y.batch) == \
        (E.NONE, None)


@pytest.mark.parametrize("profile,answer", [("0.11", (E.OUT_OF_ORDER_SEQUENCE_NUMBER, None)),
                                            ("1.0", (E.NONE, 0)), ("2.3", (E.NONE, 0))])
def test_retention_keeps_a_surviving_producers_batches_below_the_log_start(profile, answer):
    """0.11-2.3 `truncateHead` evicts only producers wholly below the log start (ref §2.3); one
    that has data above it keeps the metadata of every batch it remembers, below the log start
    too (`removeBatchesOlderThan` is a no-op at 1.0.0 and 2.3.0: `dropWhile` on a
    `mutable.Queue` returns a new queue). So from 1.0, which remembers five batches, the retry
    of a batch retention deleted is still a duplicate, answered with its old offset; 0.11
    remembers only the last batch and answers an older sequence OUT_OF_ORDER."""

    from sim.kafka.idempotence import evict_below_log_start, producers_of, record_append
    from sim.kafka.log import Log
    from sim.kafka.messages import Batch
    from sim.kafka.profiles import resolve_protocol
    from sim.kafka.rules.producer_state import check_producer_append

    proto = resolve_protocol(profile)
    log = Log()
    batches = [Batch(f"p#{i}", "p", 5, 0, pid=7, producer_epoch=0, base_seq=5 * i) for i in range(3)]
    for b in batches:
        record_append(log, b, log.append(5, 0, b, 0), 0, proto.idempotent_batches)
    log.hw = 15
    log.advance_start(10)
    assert evict_below_log_start(log) == []  # producer 7 still has data at 10-14
    kept = [0, 5, 10][-proto.idempotent_batches:]
    assert [b[0] for b in producers_of(log)[7].batches] == kept
    assert check_producer_append(proto, producers_of(log)[7], batches[0]) == answer


@pytest.mark.parametrize("profile,in_flight,remembered", [("0.11", 1, 1), ("1.0", 5, 5)])
def test_how_many_batches_an_idempotent_producer_may_have_outstanding(profile, in_flight, remembered):
    """0.11 remembered one batch per producer and required one request in flight; KAFKA-5494
    (1.0) made both five (ref §2.1)."""
    from sim.kafka.idempotence import producers_of, record_append
    from sim.kafka.log import Log
    from sim.kafka.messages import Batch
    from tests.kafka import build_cluster

    text = f'expect = "pass"\n[protocol]\nprofile = "{profile}"\n[[topics]]\nname = "t"\n' \
           '[[producers]]\ntopic = "t"\nenable_idempotence = true\n'
    cluster, _ = build_cluster(text)
    producer = cluster.clients[0]
    assert producer.max_in_flight == in_flight
    # one request in flight, as 0.11 requires, also mutes each partition while a batch of it is
    # in flight (`guaranteeMessageOrder`), so its sequences never split across two leaders
    assert producer.one_at_a_time is (in_flight == 1)
    log = Log()
    for i in range(7):
        b = Batch(f"p#{i}", "p", 1, 0, pid=7, producer_epoch=0, base_seq=i)
        record_append(log, b, log.append(1, 0, b, 0), 0, producer.protocol.idempotent_batches)
    assert [b[0] for b in producers_of(log)[7].batches] == list(range(7 - remembered, 7))


@pytest.mark.parametrize("unresolved, bid, reset, bumps", [
    (None, "b", False, True),   # a real gap after the last acknowledged sequence
    (None, "c", False, False),  # a consequence of an earlier batch's failure
    (None, "b", True, False),   # renumbered after a reset: follows a failed batch
    (1, "b", False, True),      # starts at the unresolved partition's next sequence
    (1, "b", True, True),       # the same, renumbered: still the next for the unresolved one
    (2, "c", False, True),      # the next for the unresolved one, not after the last acked
    (2, "b", False, False),     # next after the last acked, not for the unresolved one: wait
])
def test_kip360_out_of_order_bumps_the_epoch_only_for_the_next_sequence(unresolved, bid,
                                                                        reset, bumps):
    """`TransactionManager.canRetry` for an idempotent producer (ref §2.5, 3.7.0): every
    OUT_OF_ORDER_SEQUENCE_NUMBER is retried; the epoch is bumped when there is no unresolved
    sequence and the batch is the next after the last acknowledged one (not renumbered), or
    when the partition is unresolved and the batch starts at the sequence its entry names
    (`isNextSequenceForUnresolvedPartition`: `lastSequence() + 1` of the expired batch)."""
    from types import SimpleNamespace

    client = _Client("2.5")
    _ack(client, _send(client, "t-0", "a"), 0)
    batches = {"b": _send(client, "t-0", "b"), "c": _send(client, "t-0", "c")}  # 1 and 2
    if unresolved is not None:
        client.unresolved["t-0"] = unresolved
    pb = batches[bid]
    pb.sequence_reset = reset
    client.handle_idempotence_error(pb, SimpleNamespace(error=E.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                                        log_start_offset=0))
    assert client.events[-1] == ("retry", "t-0", E.OUT_OF_ORDER_SEQUENCE_NUMBER)
    assert ("t-0" in client.bump_required) == bumps


def test_an_expired_batch_leaves_the_sequence_after_it_unresolved():
    """`markSequenceUnresolved` keeps `batch.lastSequence() + 1`, the highest of the
    partition's expired batches, not their last sequence: the batch that starts there is the
    one whose OUT_OF_ORDER answer shows a real gap."""
    client = _Client("3.7")
    first, second = _send(client, "t-0", "a"), _send(client, "t-0", "b")
    second.batch = second.batch._replace(count=3)
    client.queues["t-0"].remove(second)
    client.on_batch_failed(second)
    client.on_batch_failed(first)
    assert client.unresolved["t-0"] == second.batch.base_seq + 3 == 4


@pytest.mark.parametrize("profile, covered, epoch", [("2.4", False, -1), ("3.7", False, 1),
                                                     ("3.7", True, 0)])
def test_unresolved_sequences_are_settled_by_a_send_loop_with_nothing_to_send(profile, covered,
                                                                              epoch):
    """`Sender.runOnce` settles unresolved sequences first, whether or not a batch waits
    (`maybeResolveSequences`, then `bumpIdempotentEpochAndResetIdIfNeeded`; 1.0-2.4
    `shouldResetProducerStateAfterResolvingSequences`): the only batch expired after it was
    sent, so the loop after it bumps the epoch (SenderTest
    testExpiryOfAllSentBatchesShouldCauseUnresolvedSequences at 3.7.0) or, at 1.0-2.4, resets
    the producer id (no id or epoch until an InitProducerId answer), unless a later
    acknowledgement covered the sequence (`isNextSequence` of the partition's next one)."""
    client = _Client(profile)
    expired = _send(client, "t-0", "a")
    client.queues["t-0"].remove(expired)
    client.on_batch_failed(expired)
    if covered:
        _ack(client, _send(client, "t-0", "b"), 7)
    client.maybe_resolve_sequences()
    if client.bump_required:
        client.bump_epoch()
    assert "t-0" not in client.unresolved
    assert client.producer_epoch == epoch
    assert client.next_seq.get("t-0", 0) == (2 if covered else 0)


@pytest.mark.parametrize("profile", ["1.0", "3.7"])
def test_an_answer_completing_out_of_order_does_not_move_the_last_acked_sequence_back(profile):
    """Two batches in flight on two connections (a leader move): the later one is answered
    first. The earlier one's answer must leave the last acknowledged sequence at the later's,
    or the next sequence error would be judged against a stale one."""
    client = _Client(profile)
    first, second = _send(client, "t-0", "a"), _send(client, "t-0", "b")
    _ack(client, second, 11)
    _ack(client, first, 10)
    assert client.last_acked_seq["t-0"] == second.batch.base_seq == 1


def test_the_client_numbers_sequences_past_integer_max_value_from_zero():
    """A partition whose next sequence is Integer.MAX_VALUE - 1 sends a 3-record batch as
    MAX - 1, MAX, 0; the next batch starts at 1, and once the first is acknowledged it is the
    batch the client expects the broker to take next."""
    client = _Client("3.7")
    client.next_seq["t-0"] = 2**31 - 2
    from sim.kafka.messages import Batch
    from sim.kafka.producer import PendingBatch
    big = PendingBatch(Batch("big", "p", 3, 0), "t-0")
    client.queues["t-0"].append(big)
    big.batch, big.stamped = client.stamp(big.batch, "t-0"), True
    nxt = _send(client, "t-0", "next")
    assert (big.batch.base_seq, nxt.batch.base_seq) == (2**31 - 2, 1)
    _ack(client, big, 0)
    assert client.last_acked_seq["t-0"] == 0 and client.next_in_sequence(nxt)


def test_a_follower_takes_a_lower_producer_epoch_as_the_entrys_new_one():
    """A follower appends what its leader wrote: a batch with a lower producer epoch than its
    entry's (an old leader's, after a truncation) only warns, and the entry takes that epoch
    with its batch metadata cleared (`checkProducerEpoch` for REPLICATION, then
    `maybeUpdateProducerEpoch`, 3.7.0)."""
    from sim.kafka.idempotence import producers_of, record_append
    from sim.kafka.log import Log
    from sim.kafka.messages import Batch

    log = Log()
    newer = Batch("p#0", "p", 5, 0, pid=7, producer_epoch=2, base_seq=0)
    older = Batch("p#1", "p", 5, 0, pid=7, producer_epoch=1, base_seq=5)
    record_append(log, newer, log.append(5, 0, newer, 0), 0)
    record_append(log, older, log.append(5, 0, older, 0), 0)
    entry = producers_of(log)[7]
    assert entry.epoch == 1 and [b[0] for b in entry.batches] == [5]
