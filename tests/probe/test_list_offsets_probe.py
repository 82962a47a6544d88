"""ListOffsets delivered to a broker under test: who asks decides what LATEST means (a
consumer's is the HW, a replica's the log end), and a field the profile's request version
cannot carry is refused when the scenario loads."""

from __future__ import annotations

from tests.probe.helpers import assert_refused, probe_checks

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
