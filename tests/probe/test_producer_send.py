"""A producer probe's application sends records mid-test (`Send`, from `app`): a record joins the
partition's open batch or starts one, as `RecordAccumulator.append` does, and the Sender wakes
for a new batch (`KafkaProducer.doSend`: `newBatchCreated`) unless the step says `wake = false`
(a test's `appendToAccumulator`, drained by a later send loop)."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks
from tests.probe.test_producer_steps import _probe


def _send(batch_id: str, tp: str = "t-0", count: int = 1, expect: str = "{}") -> str:
    return (f'[[probe.steps]]\ndeliver = "Send"\nbody = {{ tp = "{tp}", batch_id = "{batch_id}", '
            f'record_count = {count} }}\nexpect = {expect}\n')


def _model(steps: str, batches: str = "", partitions: int = 1) -> dict:
    text = _probe(steps, idempotent="true", batches=batches)
    if partitions == 2:  # t-1 too, led by b1
        text = text.replace("partitions = 1", "partitions = 2").replace(
            'leader_epoch = 0}]', 'leader_epoch = 0}, {tp = "t-1", leader = 1, leader_epoch = 0}]')
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


def test_a_send_starts_a_batch_that_the_woken_sender_drains_with_the_next_sequence():
    seen = _model(_send("a", expect='{"batch:a" = "in_flight", "batch_sequence:a" = 0, '
                                   '"sent_to" = ["Produce>b1"], "next_sequence:t-0" = 1}'))
    assert seen == {"0:batch:a": "in_flight", "0:batch_sequence:a": 0,
                    "0:sent_to": ["Produce>b1"], "0:next_sequence:t-0": 1}


def test_a_record_joins_the_open_batch_and_is_read_by_its_name():
    # the starting state's batch q is queued, not drained: it is open for appends, so the sent
    # records join it (read by the name "r") and, neither starting nor filling a batch, do not
    # wake the Sender; a record of the other partition starts a batch, and the woken Sender
    # drains both (one Produce to their leader)
    queued = '{batch_id = "q", tp = "t-0", created_ms = 0}'
    seen = _model(_send("r", count=2, expect='{"batch:r" = "queued", "sent_count:Produce" = 0}')
                  + _send("s", tp="t-1", expect='{"batch:r" = "in_flight", "batch:q" = '
                                                '"in_flight", "sent_count:Produce" = 1}'),
                  batches=queued, partitions=2)
    assert seen == {"0:batch:r": "queued", "0:sent_count:Produce": 0, "1:batch:r": "in_flight",
                    "1:batch:q": "in_flight", "1:sent_count:Produce": 1}


def test_a_send_that_wakes_no_send_loop_drains_with_the_next_one_in_one_request():
    # `wake = false` is a test's `appendToAccumulator`: a's new batch waits in the accumulator,
    # and b's send, which wakes the Sender, drains both into one Produce to their leader
    held = _send("a", expect='{"batch:a" = "queued", "sent" = []}').replace(
        'record_count = 1 }', 'record_count = 1, wake = false }')
    seen = _model(held + _send("b", tp="t-1", expect='{"batch:a" = "in_flight", '
                                                     '"sent_count:Produce" = 1}'), partitions=2)
    assert seen == {"0:batch:a": "queued", "0:sent": [], "1:batch:a": "in_flight",
                    "1:sent_count:Produce": 1}


def test_records_of_a_drained_batch_start_a_new_one():
    seen = _model(_send("a") + _send("b", expect='{"batch_sequence:b" = 1, "batch:b" = '
                                                  '"in_flight", "next_sequence:t-0" = 2}'))
    assert seen == {"1:batch_sequence:b": 1, "1:batch:b": "in_flight", "1:next_sequence:t-0": 2}


@pytest.mark.parametrize("body,key", [
    ('{ tp = "u-0", batch_id = "x" }', "probe.steps[0].body.tp"),
    ('{ tp = "t-0", batch_id = "a" }', "probe.steps[0].body.batch_id"),  # the state's batch
    ('{ tp = "t-0", batch_id = "x", record_count = 0 }', "probe.steps[0].body.record_count"),
    ('{ tp = "t-0" }', "probe.steps[0].body.batch_id"),
])
def test_a_send_naming_another_topic_or_a_taken_batch_id_is_refused(body, key):
    step = f'[[probe.steps]]\ndeliver = "Send"\nbody = {body}\n'
    assert_refused(_probe(step, batches='{batch_id = "a", tp = "t-0"}'), key)


def test_a_send_comes_from_the_application():
    step = '[[probe.steps]]\ndeliver = "Send"\nfrom = "b1"\nbody = { tp = "t-0", batch_id = "x" }\n'
    assert_refused(_probe(step), "probe.steps[0].from")


SET_ID = ('[[probe.steps]]\ndeliver = "SetProducerId"\nbody = {{ producer_id = {pid}, '
          'producer_epoch = {epoch} }}\nexpect = {{ "producer_id" = {pid} }}\n')
DISCONNECT = ('[[probe.steps]]\ndeliver = "Disconnect"\nfrom = "b1"\nexpect = { "batch:a" = '
              '"failed", "batch_error:a" = "OUT_OF_ORDER_SEQUENCE_NUMBER", "next_sequence:t-0" = 0 }\n')


def test_a_new_producer_id_at_the_same_epoch_makes_a_sent_batch_another_producers():
    # 2.4: the batch went as sequence 0 of id 1001 (the model's), epoch 0; the new id has epoch
    # 0 too, so only the id tells the batch is not the producer's (`hasProducerIdAndEpoch`):
    # its retry after the disconnect is dropped, and the reset forgot the partition's sequence
    steps = _send("a") + SET_ID.format(pid=77, epoch=0) + DISCONNECT
    text = _probe(steps, profile="2.4", idempotent="true", retries=10, batches="")
    seen = {c: model for c, (_kafka, model) in probe_checks(text, by_step=True).items()}
    assert seen == {"1:producer_id": 77, "2:batch:a": "failed",
                    "2:batch_error:a": "OUT_OF_ORDER_SEQUENCE_NUMBER", "2:next_sequence:t-0": 0}


@pytest.mark.parametrize("profile,idempotent,pid", [("2.5", "true", 7), ("2.4", "false", 7),
                                                     ("2.4", "true", -3)])
def test_a_producer_id_is_set_only_on_a_1_0_to_2_4_idempotent_producer(profile, idempotent, pid):
    text = _probe(SET_ID.format(pid=pid, epoch=0), profile=profile, idempotent=idempotent)
    assert_refused(text, "probe.steps[0].body")
