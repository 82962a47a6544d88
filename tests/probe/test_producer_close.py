"""A producer probe's application closes the producer (`Close`, from `app`): a graceful close
(`Sender.initiateClose`) lets the Sender finish what it holds and then end its thread; a forced
one (`forceClose`) fails every incomplete batch with PRODUCER_CLOSED at once; a closed
producer takes no record, reads no answer and sends nothing."""

from __future__ import annotations

from tests.probe.helpers import assert_refused, probe_checks
from tests.probe.test_producer_steps import _probe

CLOSE = '[[probe.steps]]\ndeliver = "Close"\nbody = {{ force = {force} }}\nexpect = {expect}\n'
ACK = ('[[probe.steps]]\ndeliver = "ProduceResponse"\nfrom = "b1"\nbody = { results = '
       '[{ tp = "t-0", error = "NONE", base_offset = 0 }] }\nexpect = {expect}\n')
SEND = ('[[probe.steps]]\ndeliver = "Send"\nbody = { tp = "t-0", batch_id = "c" }\n'
        'expect = {"batch:c" = "none", "sent" = []}\n')


def _model(steps: str) -> dict:
    text = _probe(steps, idempotent="true")
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


def test_a_graceful_close_lets_the_batch_in_flight_finish_then_ends_the_sender():
    steps = (CLOSE.format(force="false", expect='{"closed" = false, "batch:a" = "in_flight"}')
             + ACK.replace("{expect}", '{"batch:a" = "acked", "closed" = true}') + SEND)
    assert _model(steps) == {"0:closed": False, "0:batch:a": "in_flight", "1:batch:a": "acked",
                             "1:closed": True, "2:batch:c": "none", "2:sent": []}


def test_a_forced_close_fails_every_incomplete_batch_and_ignores_their_answers():
    # the answer is delivered but read by no one: no ack, no error, nothing sent
    steps = (CLOSE.format(force="true", expect='{"closed" = true, "batch:a" = "failed", '
                                               '"batch_error:a" = "PRODUCER_CLOSED"}')
             + ACK.replace("{expect}", '{"emitted" = ["deliver"], "sent" = []}'))
    assert _model(steps) == {"0:closed": True, "0:batch:a": "failed",
                             "0:batch_error:a": "PRODUCER_CLOSED", "1:emitted": ["deliver"],
                             "1:sent": []}


def test_a_close_comes_from_the_application():
    step = '[[probe.steps]]\ndeliver = "Close"\nfrom = "b1"\n'
    assert_refused(_probe(step), "probe.steps[0].from")
