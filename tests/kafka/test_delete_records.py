"""DeleteRecords on a leader (KIP-107, `ReplicaManager.deleteRecords` and `DelayedDeleteRecords`
at 3.7.0): the log start moves at once; the answer waits until every live follower's Fetch
reports a log start at the offset (the low watermark), or times out REQUEST_TIMED_OUT; a
follower's Fetch carries its own log start (Fetch v5+)."""

from __future__ import annotations

from tests.probe.helpers import broker_probe, probe_checks

LEADER = broker_probe("DeleteRecordsRequestTest.testDeleteRecordsHappyCase", "b1", 3) + """
[probe.state]
alive = {alive}
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1, 2, 3]
isr = [1, 2]
log = [{{ leader_epoch = 0, record_count = 10 }}]
[[probe.steps]]
deliver = "DeleteRecords"
from = "k1"
body = {{ timeout_ms = 1000, partitions = [{{ tp = "t-0", offset = 4 }}] }}
expect = {{ answered = false, "log_start_offset:t-0" = 0 }}
[[probe.steps]]
deliver = "Fetch"
from = "b2"
body = {{ partitions = [{{ tp = "t-0", fetch_offset = 10, current_leader_epoch = 0, log_start_offset = {b2_start} }}] }}
wait_ms = {wait}
expect = {{ "sent_error:DeleteRecordsResponse/t-0" = "NONE" }}
{more}
"""

B3_FETCH = """[[probe.steps]]
deliver = "Fetch"
from = "b3"
body = { partitions = [{ tp = "t-0", fetch_offset = 10, current_leader_epoch = 0, log_start_offset = 4 }] }
expect = { "sent_error:DeleteRecordsResponse/t-0" = "NONE" }
"""


def _checks(alive="[1, 2, 3]", b2_start=4, more="", wait=100):
    return probe_checks(LEADER.format(alive=alive, b2_start=b2_start, more=more, wait=wait),
                        by_step=True)


def test_the_log_start_moves_at_once():
    assert _checks()["0:log_start_offset:t-0"][1] == 4


def test_the_answer_waits_for_every_live_follower():
    checks = _checks(more=B3_FETCH)
    assert checks["0:answered"][1] is False
    assert checks["1:sent_error:DeleteRecordsResponse/t-0"][1] == "none"  # b3 not heard from
    assert checks["2:sent_error:DeleteRecordsResponse/t-0"][1] == "NONE"


def test_a_follower_the_cache_lists_dead_does_not_hold_it():
    checks = _checks(alive="[1, 2]")
    assert checks["1:sent_error:DeleteRecordsResponse/t-0"][1] == "NONE"


def test_a_follower_behind_holds_it_until_the_timeout():
    assert _checks(alive="[1, 2]", b2_start=2)["1:sent_error:DeleteRecordsResponse/t-0"][1] == "none"
    checks = _checks(alive="[1, 2]", b2_start=2, wait=1500)
    assert checks["1:sent_error:DeleteRecordsResponse/t-0"][1] == "REQUEST_TIMED_OUT"


FOLLOWER = """
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1, 2]
log = [{ leader_epoch = 0, record_count = 10 }]
log_start_offset = 3
[[probe.steps]]
deliver = "Metadata"
from = "k1"
expect = { "fetch_sent.log_start_offset:t-0" = 3 }
"""


def _follower(profile: str) -> dict:
    test = "ReplicaFetcherThreadTest.shouldFetchLeaderEpochOnFirstFetchOnly"
    return probe_checks(broker_probe(test, "b2", 2, profile) + FOLLOWER)


def test_a_follower_fetch_carries_its_log_start():
    assert _follower("3.7")["fetch_sent.log_start_offset:t-0"][1] == 3
    # 0.10.2: Fetch v4, before KIP-107's LogStartOffset
    assert _follower("0.10.2")["fetch_sent.log_start_offset:t-0"][1] == -1
