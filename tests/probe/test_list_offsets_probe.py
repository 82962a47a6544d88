"""ListOffsets delivered to a broker under test: who asks decides what LATEST means (a
consumer's is the HW, a replica's the log end), a batch's timestamp is what a lookup by time
finds, and a field or timestamp the profile's request version cannot carry is refused when the
scenario loads."""

from __future__ import annotations

import re

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from tests.probe.helpers import assert_refused, broker_probe, probe_checks

LIST_OFFSETS = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
[probe]
kafka_test = "PartitionTest.testMonotonicOffsetsAfterLeaderChange"
kafka_tag = "3.7.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 3
replicas = [1, 2]
log = [{{ leader_epoch = 3, record_count = 4 }}]
high_watermark = 1
[[probe.steps]]
deliver = "ListOffsets"
from = "{src}"
body = {{ {body} }}
expect = {{ {expect} }}
"""


def _text(profile="3.7", src="k1", body='partitions = [{ tp = "t-0" }]',
          expect='"error:t-0" = "NONE"'):
    return LIST_OFFSETS.format(profile=profile, src=src, body=body, expect=expect)


def test_latest_is_the_hw_for_a_consumer_and_the_log_end_for_a_replica():
    checks = probe_checks(_text(expect='"answer.offset:t-0" = 1, "answer.leader_epoch:t-0" = 3'))
    assert checks["answer.offset:t-0"] == (1, 1) and checks["answer.leader_epoch:t-0"] == (3, 3)
    checks = probe_checks(_text(src="b2", expect='"answer.offset:t-0" = 4'))
    assert checks["answer.offset:t-0"] == (4, 4)
    checks = probe_checks(_text(body='replica_id = -1, partitions = [{ tp = "t-0" }]', src="b2",
                                expect='"answer.offset:t-0" = 1'))
    assert checks["answer.offset:t-0"] == (1, 1)  # a consumer's id from any sender


def test_earliest_is_the_log_start():
    checks = probe_checks(_text(body='partitions = [{ tp = "t-0", timestamp = -2 }]',
                                expect='"answer.offset:t-0" = 0'))
    assert checks["answer.offset:t-0"] == (0, 0)


def test_a_current_leader_epoch_before_kip_320_is_refused():
    assert_refused(_text(profile="2.0", body='partitions = [{ tp = "t-0", '
                                             'current_leader_epoch = 3 }]'),
                   "probe.steps[0].body")


TIMESTAMPED = """
[probe.state]
partitions = [{{ tp = "t-0", leader = 1, leader_epoch = 2, replicas = [1, 2], log = [
    {{ leader_epoch = 1, timestamp = 50 }}, {{ leader_epoch = 2, timestamp = 70 }}] }}]
[[probe.steps]]
deliver = "{deliver}"
from = "b2"
body = {{ {body} }}
expect = {{ {expect} }}
"""


def _timestamped(body, expect='"error:t-0" = "NONE"', profile="3.7", deliver="ListOffsets"):
    head = broker_probe("UnifiedLogTest.testFetchOffsetByTimestampIncludesLeaderEpoch", "b1", 2,
                        profile)
    return head + TIMESTAMPED.format(body=body, expect=expect, deliver=deliver)


def test_a_log_batch_timestamp_is_found_by_a_timestamp_lookup():
    """A starting log's batch `timestamp` is its records' CreateTime; ListOffsets with a time
    finds the first at or after it, and the answer names its timestamp and epoch."""
    checks = probe_checks(_timestamped(
        'partitions = [{ tp = "t-0", timestamp = 60 }]',
        '"answer.offset:t-0" = 1, "answer.leader_epoch:t-0" = 2, "answer.timestamp:t-0" = 70'))
    assert checks["answer.offset:t-0"] == (1, 1) and checks["answer.timestamp:t-0"] == (70, 70)
    checks = probe_checks(_timestamped('partitions = [{ tp = "t-0", timestamp = -3 }]',
                                       '"answer.offset:t-0" = 1, "answer.timestamp:t-0" = 70'))
    assert checks["answer.timestamp:t-0"] == (70, 70)


def test_a_produced_batch_carries_its_timestamp():
    """A Produce's batch `timestamp` is kept with it in the log (the leader keeps CreateTime)."""
    text = _timestamped('acks = 1, partitions = [{ tp = "t-0", timestamp = 90 }]',
                        deliver="Produce")
    text += ('[[probe.steps]]\ndeliver = "ListOffsets"\nfrom = "b2"\n'
             'body = { partitions = [{ tp = "t-0", timestamp = 80 }] }\n'
             'expect = { "answer.offset:t-0" = 2, "answer.timestamp:t-0" = 90 }\n')
    text = text.replace('expect = { "error:t-0" = "NONE" }', 'expect = { "log_end_offset:t-0" = 3 }')
    checks = probe_checks(text)
    assert checks["answer.offset:t-0"] == (2, 2) and checks["answer.timestamp:t-0"] == (90, 90)


@pytest.mark.parametrize("profile,ts,since", [("2.8", -3, "v7 (KIP-734, 3.0)"),
                                              ("3.4.1", -4, "v8 (KIP-405, 3.5)")])
def test_a_timestamp_the_profiles_version_cannot_send_is_refused(profile, ts, since):
    text = _timestamped(f'partitions = [{{ tp = "t-0", timestamp = {ts} }}]', profile=profile)
    assert_refused(text, "probe.steps[0].body")
    with pytest.raises(ScenarioError, match=rf"ListOffsets carries no timestamp {ts} .* {re.escape(since)}"):
        parse_scenario(text, "probe.toml")


def test_a_timestamp_no_version_defines_and_a_negative_batch_timestamp_are_refused():
    assert_refused(_timestamped('partitions = [{ tp = "t-0", timestamp = -5 }]'),
                   "probe.steps[0].body.partitions[0].timestamp")
    assert_refused(_timestamped('partitions = [{ tp = "t-0" }]').replace("timestamp = 50",
                                                                        "timestamp = -1"),
                   "probe.state.partitions[0].log[0].timestamp")
