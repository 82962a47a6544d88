"""The idempotent producer's InitProducerId round trip in a producer probe: a producer with no
id asks for one and drains nothing until a broker's `InitProducerIdResponse` gives it; a
retriable error is retried after the backoff, an authorization error is abortable from 3.6
(the producer asks again), another is fatal; and a KIP-360 producer whose
epoch is exhausted resets its id and asks again (`bumpIdempotentProducerEpoch`)."""

from __future__ import annotations

import pytest

from tests.probe.helpers import assert_refused, probe_checks

PROBE = """
[[topics]]
name = "t"
partitions = 1
[protocol]
profile = "{profile}"
[cluster]
brokers = 1
[[producers]]
topic = "t"
enable_idempotence = true
retries = 10
retry_backoff_ms = 50
[probe]
kafka_test = "SenderTest.x"
kafka_tag = "{profile}.0"
node = "p1"
state = {{ metadata = [{{tp = "t-0", leader = 1, leader_epoch = 0}}], {state} }}
{steps}
"""
WAIT = '[[probe.steps]]\nwait_ms = {ms}\nexpect = {expect}\n'
SEND = ('[[probe.steps]]\ndeliver = "Send"\nbody = {{ tp = "t-0", batch_id = "{bid}" }}\n'
        'expect = {expect}\n')
ANSWER = ('[[probe.steps]]\ndeliver = "InitProducerIdResponse"\nfrom = "b1"\n'
          'body = {body}\nexpect = {expect}\n')
NO_ID = "producer_id = -1"


def _seen(steps: str, state: str = NO_ID, profile: str = "3.7") -> dict:
    text = PROBE.format(profile=profile, state=state, steps=steps)
    return {c: model for c, (_kafka, model) in probe_checks(text, by_step=True).items()}


@pytest.mark.parametrize("profile", ["2.4", "3.7"])
def test_a_producer_without_an_id_asks_for_one_and_drains_nothing_until_it_has_it(profile):
    steps = (WAIT.format(ms=10, expect='{"sent_to" = ["InitProducerId>b1"]}')
             + SEND.format(bid="a", expect='{"batch:a" = "queued", "sent" = []}')
             + ANSWER.format(body="{ producer_id = 7 }",
                             expect='{"producer_id" = 7, "producer_epoch" = 0, '
                                    '"batch:a" = "in_flight", "batch_sequence:a" = 0, '
                                    '"batch_epoch:a" = 0, "sent_to" = ["Produce>b1"]}'))
    assert _seen(steps, profile=profile) == {
        "0:sent_to": ["InitProducerId>b1"], "1:batch:a": "queued", "1:sent": [],
        "2:producer_id": 7, "2:producer_epoch": 0, "2:batch:a": "in_flight",
        "2:batch_sequence:a": 0, "2:batch_epoch:a": 0, "2:sent_to": ["Produce>b1"]}


def test_a_retriable_error_is_retried_after_the_backoff_and_another_is_fatal():
    retried = (WAIT.format(ms=10, expect="{}")
               + ANSWER.format(body='{ error = "NOT_COORDINATOR" }', expect='{"sent" = []}')
               .replace("expect", "wait_ms = 45\nexpect")
               + WAIT.format(ms=20, expect='{"sent" = ["InitProducerId"]}'))
    assert _seen(retried) == {"1:sent": [], "2:sent": ["InitProducerId"]}
    fatal = retried.replace("NOT_COORDINATOR", "UNSUPPORTED_VERSION")
    assert _seen(fatal) == {"1:sent": [], "2:sent": []}
    # before KAFKA-13668 (3.6) an authorization error is fatal too
    fatal = retried.replace("NOT_COORDINATOR", "CLUSTER_AUTHORIZATION_FAILED")
    assert _seen(fatal, profile="3.5") == {"1:sent": [], "2:sent": []}


@pytest.mark.parametrize("error", ["CLUSTER_AUTHORIZATION_FAILED",
                                   "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"])
def test_an_authorization_error_is_abortable_from_3_6_and_the_producer_asks_again(error):
    # `Sender.shouldHandleAuthorizationError` (3.7.0): the loop after the answer fails the
    # queued batch with the error and the producer is uninitialized; the next loop, at once,
    # sends InitProducerId again, within the retry backoff and with no fatal state
    steps = (WAIT.format(ms=10, expect="{}")
             + ANSWER.format(body=f'{{ error = "{error}" }}',
                             expect='{"batch:a" = "failed", "batch_error:a" = "' + error
                                    + '", "sent" = ["InitProducerId"], "producer_id" = -1}')
             .replace("expect", "wait_ms = 10\nexpect"))  # < the 50 ms backoff
    state = NO_ID + ', batches = [{tp = "t-0", batch_id = "a"}]'
    assert _seen(steps, state) == {"1:batch:a": "failed", "1:batch_error:a": error,
                                   "1:sent": ["InitProducerId"], "1:producer_id": -1}
    assert _seen(steps, state, profile="3.5")["1:sent"] == []


def test_a_disconnect_sends_the_request_again_after_the_backoff():
    steps = (WAIT.format(ms=10, expect="{}")
             + '[[probe.steps]]\ndeliver = "Disconnect"\nfrom = "b1"\nwait_ms = 40\n'
               'expect = {"sent_count:InitProducerId" = 0}\n'
             + WAIT.format(ms=30, expect='{"sent_count:InitProducerId" = 1}'))
    assert _seen(steps) == {"1:sent_count:InitProducerId": 0, "2:sent_count:InitProducerId": 1}


EXHAUSTED = ('producer_id = 5, producer_epoch = {epoch}, '
             'sequences = [{{tp = "t-0", next_sequence = 1}}], '
             'batches = [{{batch_id = "a", tp = "t-0", base_sequence = 0, in_flight_to = 1}}]')
OUT_OF_ORDER = ('[[probe.steps]]\ndeliver = "ProduceResponse"\nfrom = "b1"\nbody = { results = '
                '[{ tp = "t-0", error = "OUT_OF_ORDER_SEQUENCE_NUMBER", base_offset = -1 }] }\n'
                'expect = {"producer_id" = 5, "producer_epoch" = 5, '
                '"sent_count:InitProducerId" = 5}\n')


def test_an_epoch_bump_at_short_max_value_resets_the_producer_id_and_asks_for_a_new_one():
    # 2.5+ `bumpIdempotentProducerEpoch`: the epoch never passes 32767; below it, it is bumped
    seen = _seen(OUT_OF_ORDER, EXHAUSTED.format(epoch=32767))
    assert (seen["0:producer_id"], seen["0:producer_epoch"]) == (-1, -1)
    assert seen["0:sent_count:InitProducerId"] == 1
    seen = _seen(OUT_OF_ORDER, EXHAUSTED.format(epoch=3))
    assert (seen["0:producer_id"], seen["0:producer_epoch"]) == (5, 4)
    assert seen["0:sent_count:InitProducerId"] == 0


@pytest.mark.parametrize("body", ["{ producer_id = -1 }", "{ producer_id = 3, producer_epoch = 40000 }"])
def test_an_answer_without_error_must_give_an_id_and_an_epoch(body):
    assert_refused(PROBE.format(profile="3.7", state=NO_ID,
                                steps=ANSWER.format(body=body, expect="{}")), "probe.steps[0].body")


def test_a_starting_id_below_minus_one_is_refused():
    assert_refused(PROBE.format(profile="3.7", state="producer_id = -2",
                                steps=WAIT.format(ms=1, expect="{}")), "probe.state.producer_id")
