"""A consumer's reset policy `none` and what it drops: with no reset policy nothing is reset and
the application gets Kafka's exception instead; an answer for a partition without a valid
position is dropped (`FetchCollector.initialize`)."""

from __future__ import annotations

from tests.probe.helpers import consumer_probe, probe_checks

METADATA = 'metadata = [{ tp = "t-0", leader = 1, leader_epoch = 0 }]'
RECORDS = ('{ partitions = [{ tp = "t-0", high_watermark = 9, records = [{ base_offset = 4, '
           'record_count = 3, leader_epoch = 0 }] }] }')


def _checks(state: str, steps: str, reset: str = "none") -> dict:
    head = consumer_probe("FetcherTest.testFetchOffsetOutOfRangeException", reset=reset)
    text = "\n".join((head, "[probe.state]", METADATA, state, steps))
    return probe_checks(text, by_step=True)


def _agree(checks: dict) -> None:
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_no_reset_policy_leaves_a_partition_without_a_position_and_raises():
    """`resetInitializingPositions`: NoOffsetForPartitionException, no ListOffsets sent."""
    _agree(_checks("", """[[probe.steps]]
deliver = "MetadataResponse"
from = "b1"
body = { partitions = [{ tp = "t-0", leader = 1, leader_epoch = 0 }] }
expect = { "exception:t-0" = "NoOffsetForPartitionException", "sent_count:ListOffsets" = 0 }

[[probe.steps]]
deliver = "MetadataResponse"
from = "b1"
body = { partitions = [{ tp = "t-0", leader = 1, leader_epoch = 0 }] }
expect = { "fetch_state:t-0" = "initializing", "offset_reset_needed:t-0" = false }
"""))


def test_out_of_range_raises_and_keeps_the_position_without_a_reset_policy():
    steps = """[[probe.steps]]
deliver = "FetchResponse"
from = "b1"
body = { partitions = [{ tp = "t-0", error = "OFFSET_OUT_OF_RANGE", high_watermark = 9 }] }
expect = { "exception:t-0" = "OffsetOutOfRangeException", "position:t-0" = 4 }
"""
    _agree(_checks('positions = [{ tp = "t-0", offset = 4 }]', steps))
    with_policy = _checks('positions = [{ tp = "t-0", offset = 4 }]', steps, reset="earliest")
    assert with_policy["0:exception:t-0"] == ("OffsetOutOfRangeException", "none")
    assert with_policy["0:position:t-0"] == (4, "none")


def test_records_for_a_position_that_waits_for_validation_are_dropped():
    """A Fetch from b1 in epoch 0 is in flight when metadata names epoch 1: the position waits
    for validation, so has no valid position, and the Fetch's records are not taken."""
    _agree(_checks('positions = [{ tp = "t-0", offset = 4, offset_epoch = 0 }]\n'
                   'metadata_in_flight_to = 1', """[[probe.steps]]
deliver = "MetadataResponse"
from = "b1"
wait_ms = 1
body = { partitions = [{ tp = "t-0", leader = 1, leader_epoch = 1 }] }
expect = { "awaiting_validation:t-0" = true }

[[probe.steps]]
deliver = "FetchResponse"
from = "b1"
body = """ + RECORDS + """
expect = { "consumed:t-0" = 0, "position:t-0" = 4, "awaiting_validation:t-0" = true }
""", reset="earliest"))
