"""A producer probe's connection closing (`Disconnect`) and time passing with no message (a wait
step), with the producer's send loop running between steps: what Kafka's SenderTest does with
`client.disconnect(node)` and `time.sleep(ms)` followed by `sender.runOnce()`."""

from __future__ import annotations

import pytest

from scenarios.schema import parse_scenario
from tests.probe.helpers import assert_refused, probe_checks

# a probe of producer p1 writing to one partition, t-0, led by b1; `_probe` fills it in
PROBE = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
[[topics]]
name = "t"
partitions = 1
[[producers]]
topic = "t"
enable_idempotence = {idempotent}
retries = {retries}
retry_backoff_ms = 0
delivery_timeout_ms = 1500
request_timeout_ms = 1000
[probe]
kafka_test = "SenderTest.x"
kafka_tag = "{profile}.0"
node = "p1"
state = {{ metadata = [{{tp = "t-0", leader = 1, leader_epoch = 0}}], sequences = {sequences}, batches = [{batches}] }}
{steps}
"""
ONE_BATCH = '{batch_id = "a", tp = "t-0", in_flight_to = 1}'


def _probe(steps: str, retries: int = 5, profile: str = "3.7", idempotent: str = "false",
           sequences: str = "[]", batches: str = ONE_BATCH) -> str:
    return PROBE.format(profile=profile, idempotent=idempotent, retries=retries,
                        sequences=sequences, batches=batches,
                        steps=steps)


DISCONNECT = """
[[probe.steps]]
deliver = "Disconnect"
from = "b1"
expect = {"batch:a" = "in_flight", "batch_error:a" = "NETWORK_EXCEPTION", "batch_attempts:a" = 1, "sent_to" = ["Metadata>b2", "Produce>b1"], "metadata_update_requested" = true}
"""


def _model(steps: str, retries: int = 5) -> dict:
    text = _probe(steps, retries)
    return {check: model for check, (_kafka, model) in probe_checks(text, by_step=True).items()}


def test_a_disconnect_fails_the_request_in_flight_with_network_exception():
    # the batch is retried once the reconnect backoff ends (the send loop wakes then), and the
    # Metadata request a disconnect asks for goes to the other broker meanwhile
    seen = _model(DISCONNECT)
    assert seen == {"0:batch:a": "in_flight", "0:batch_error:a": "NETWORK_EXCEPTION",
                    "0:batch_attempts:a": 1, "0:sent_to": ["Metadata>b2", "Produce>b1"],
                    "0:metadata_update_requested": True}


def test_a_disconnect_with_no_retry_left_fails_the_batch():
    seen = _model(DISCONNECT.replace('"batch:a" = "in_flight"', '"batch:a" = "failed"'),
                  retries=0)
    assert seen["0:batch:a"] == "failed" and seen["0:batch_error:a"] == "NETWORK_EXCEPTION"


def test_a_wait_step_lets_the_send_loop_expire_a_batch_in_flight_at_its_delivery_timeout():
    early = _model('[[probe.steps]]\nwait_ms = 1499\nexpect = {"batch:a" = "in_flight"}')
    assert early == {"0:batch:a": "in_flight"}
    seen = _model('[[probe.steps]]\nwait_ms = 1500\nexpect = {"batch:a" = "failed", '
                  '"batch_error:a" = "DELIVERY_TIMEOUT"}')
    assert seen == {"0:batch:a": "failed", "0:batch_error:a": "DELIVERY_TIMEOUT"}


WAIT_KEYS = [('from = "b1"', "probe.steps[0].from"), ("body = { corr = 1 }", "probe.steps[0].body"),
             ("wait_ms = 0", "probe.steps[0].wait_ms")]


@pytest.mark.parametrize("line,key", WAIT_KEYS)
def test_a_wait_step_takes_no_sender_or_body(line, key):
    steps = f"[[probe.steps]]\n{line}\n" + ("" if line.startswith("wait_ms") else "wait_ms = 10\n")
    assert_refused(_probe(steps), key)


def test_a_wait_step_may_read_an_answer_its_timers_send():
    """`answer_to` on a wait step: the node's first answer to that node during the wait (a
    KIP-853 voter change that expires is answered to `admin`)."""
    sc = parse_scenario(_probe('[[probe.steps]]\nwait_ms = 10\nanswer_to = "b1"\n'), "p.toml")
    assert sc.probe.steps[0].answer_to == "b1" and sc.probe.steps[0].kind == ""


def test_a_disconnect_comes_from_a_broker_to_a_producer():
    assert_refused(_probe('[[probe.steps]]\ndeliver = "Disconnect"'), "probe.steps[0].from")
    assert_refused(_probe('[[probe.steps]]\ndeliver = "Disconnect"\nfrom = "p2"'),
                   "probe.steps[0].from")


LATE_BATCHES = ('{batch_id = "a", tp = "t-0", base_sequence = 0, in_flight_to = 1, corr = 1, '
                'created_ms = -1500}, {batch_id = "b", tp = "t-0", base_sequence = 1, '
                'in_flight_to = 1, corr = 2, created_ms = -100}')
LATE = """
[[probe.steps]]
deliver = "ProduceResponse"
from = "b1"
body = {{corr = 1, results = [{{tp = "t-0", error = "NOT_LEADER_OR_FOLLOWER"}}]}}
expect = {{"batch:a" = "failed", "batch_error:a" = "NOT_LEADER_OR_FOLLOWER", "producer_epoch" = {epoch}, "batch_sequence:b" = 0, "next_sequence:t-0" = 1}}
"""


@pytest.mark.parametrize("profile, epoch, b_sequence, next_sequence", [
    ("3.7", 1, 0, 1),  # `requestEpochBumpForPartition`: b is renumbered under epoch 1
    ("2.4", 0, 0, 1),  # `adjustSequencesDueToFailedBatch`: b moves down by a's record
])
def test_an_answer_read_past_the_delivery_timeout_fails_the_batch_with_its_error(
        monkeypatch, profile, epoch, b_sequence, next_sequence):
    """Kafka's Sender reads an answer that came after the batch's delivery timeout before any
    send loop expired it (the model's producer expires batches once per linger tick in a
    whole run): `canRetry` is false, and `failBatch(batch, response, attempts < retries)` gives
    the application the answer's error and adjusts the partition's later sequences as for a
    refused batch. Here the probe's send loop is kept from running, so the answer comes first."""
    from sim.kafka.producer import Producer
    monkeypatch.setattr(Producer, "run_send_loop", lambda self: None)
    text = _probe(LATE.format(epoch=epoch), profile=profile, idempotent="true",
                  sequences='[{tp = "t-0", next_sequence = 2}]', batches=LATE_BATCHES)
    seen = _late(text)
    assert seen == {"batch:a": "failed", "batch_error:a": "NOT_LEADER_OR_FOLLOWER",
                    "producer_epoch": epoch, "batch_sequence:b": b_sequence,
                    "next_sequence:t-0": next_sequence}


def _late(text: str) -> dict:
    return {check: model for check, (_kafka, model) in probe_checks(text).items()}
