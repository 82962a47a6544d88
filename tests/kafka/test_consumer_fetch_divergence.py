"""A consumer's Fetch that names its last fetched epoch (Fetch v12, 2.7+) is checked for
divergence before it is read, as a follower's is (`Partition.readRecords` at 3.7.0; posed by
`fetch-request-last-fetched-epoch-validation-3.7`). Before v12 no Fetch carries the field, and
a probe that sends it there is refused when it loads."""

from __future__ import annotations

import pytest

from tests.probe.helpers import broker_probe, probe_checks

PROBE = broker_probe("FetchRequestTest.testLastFetchedEpochValidation", "b2", 3) + """
[probe.state]
alive = [2, 3]
[[probe.state.partitions]]
tp = "t-0"
leader = 2
leader_epoch = 1
replicas = [1, 2, 3]
isr = [2, 3]
log = [{{ leader_epoch = 0, record_count = 100 }}, {{ leader_epoch = 1, record_count = 100 }}]
[[probe.steps]]
deliver = "Fetch"
from = "k1"
body = {{ replica_id = -1, partitions = [{{ tp = "t-0", fetch_offset = {offset}, current_leader_epoch = 1, last_fetched_epoch = {epoch} }}] }}
expect = {{ "error:t-0" = "NONE", "answer.diverging_epoch:t-0" = "none" }}
"""


@pytest.mark.parametrize("offset, epoch, diverging", [
    (250, 0, [0, 100]),  # past the end of its epoch: told where that epoch ends
    (50, 0, None),  # within its epoch: read on
    (150, 1, None),
    (120, 0, [0, 100]),
])
def test_a_consumer_fetch_naming_its_epoch_is_checked_for_divergence(offset, epoch, diverging):
    checks = probe_checks(PROBE.format(offset=offset, epoch=epoch))
    assert checks["error:t-0"][1] == "NONE"
    assert checks["answer.diverging_epoch:t-0"][1] == (diverging or "none")

