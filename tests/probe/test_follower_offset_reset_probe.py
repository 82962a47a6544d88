"""A follower's out-of-range reset (`sim.kafka.fetcher_reset`) posed through its probe: the
ListOffsets it sends after OFFSET_OUT_OF_RANGE, what each answer does, and the answers it must
not read (a partition that moved meanwhile, a request that timed out)."""

from __future__ import annotations

from tests.probe.helpers import probe_checks

HEAD = """
name = "probe"
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
{cluster}
[probe]
kafka_test = "AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh"
kafka_tag = "{profile}.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 2
leader_epoch = 4
replicas = [1, 2, 3]
log = [{{ leader_epoch = 0 }}, {{ leader_epoch = 2 }}, {{ leader_epoch = 4 }}]
high_watermark = 0
[[probe.steps]]
deliver = "FetchResponse"
from = "b2"
body = {{ partitions = [{{ tp = "t-0", error = "OFFSET_OUT_OF_RANGE", high_watermark = 0, log_start_offset = 0 }}] }}
expect = {{ "list_offsets_sent.timestamp:t-0" = -1, "list_offsets_sent.current_leader_epoch:t-0" = {epoch} }}
"""


def _checks(steps: str, profile: str = "3.7", cluster: str = "", epoch: int = 4) -> dict:
    text = HEAD.format(profile=profile, cluster=cluster, epoch=epoch) + steps
    checks = probe_checks(text, by_step=True)
    assert checks["0:list_offsets_sent.timestamp:t-0"] == (-1, -1)
    return checks


def _model(checks: dict) -> dict:
    return {key: model for key, (_kafka, model) in checks.items()}


def _answer(body: str, expect: str, wait_ms: int = 0, sender: str = "b2") -> str:
    wait = f"wait_ms = {wait_ms}\n" if wait_ms else ""
    return (f'[[probe.steps]]\ndeliver = "ListOffsetsResponse"\nfrom = "{sender}"\n{wait}'
            f'body = {{ partitions = [{{ tp = "t-0", {body} }}] }}\n'
            f'expect = {{ {expect} }}\n')


def test_a_leader_log_end_below_the_followers_truncates_it_there():
    checks = _model(_checks(_answer("offset = 1", '"log_end_offset:t-0" = 1, "fetch_sent.fetch_offset:t-0" = 1')))
    assert checks["1:log_end_offset:t-0"] == 1 and checks["1:fetch_sent.fetch_offset:t-0"] == 1


def test_before_kip320_the_request_names_no_epoch_and_a_truncation_halts_without_unclean_election():
    step = _answer("offset = 1", '"alive" = false, "log_end_offset:t-0" = 3')
    halted = _model(_checks(step, profile="1.0", epoch=-1))
    assert halted["1:alive"] is False and halted["1:log_end_offset:t-0"] == 3
    allowed = _model(_checks(step, profile="1.0", epoch=-1,
                             cluster="unclean_leader_election = true"))
    assert allowed["1:alive"] is True and allowed["1:log_end_offset:t-0"] == 1


def test_a_leader_log_end_not_below_asks_its_start_and_no_fetch_goes_out_meanwhile():
    steps = (_answer("offset = 5", '"list_offsets_sent.timestamp:t-0" = -2, '
                     '"fetch_sent.fetch_offset:t-0" = "none"', 1500)
             + _answer("offset = 3", '"log_end_offset:t-0" = 3, "fetch_sent.fetch_offset:t-0" = 3'))
    checks = _model(_checks(steps))
    assert checks["1:list_offsets_sent.timestamp:t-0"] == -2
    assert checks["1:fetch_sent.fetch_offset:t-0"] == "none"  # the fetcher waits on the answer
    assert checks["2:log_end_offset:t-0"] == 3 and checks["2:fetch_sent.fetch_offset:t-0"] == 3


def test_an_error_backs_the_partition_off_and_its_next_fetch_meets_the_range_again():
    for error in ("UNKNOWN_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER"):
        soon = _model(_checks(_answer(f'error = "{error}"', '"fetch_sent.fetch_offset:t-0" = "none"', 500)))
        assert soon["1:fetch_sent.fetch_offset:t-0"] == "none", error  # still backing off
        later = _model(_checks(_answer(f'error = "{error}"', '"fetch_sent.fetch_offset:t-0" = 3, '
                                       '"fetching_from:t-0" = 2', 1500)))
        assert later["1:fetch_sent.fetch_offset:t-0"] == 3, error
        assert later["1:fetching_from:t-0"] == 2, error


def test_fenced_at_the_followers_own_epoch_the_partition_is_marked_failed():
    checks = _model(_checks(_answer('error = "FENCED_LEADER_EPOCH"', '"fetching_from:t-0" = -1', 2000)))
    assert checks["1:fetching_from:t-0"] == -1


def test_an_answer_for_a_partition_that_moved_meanwhile_is_not_read():
    moved = ('[[probe.steps]]\ndeliver = "LeaderAndIsr"\nbody = { partitions = [{ tp = "t-0", '
             'leader = 3, leader_epoch = 5, replicas = [1, 2, 3] }] }\n'
             'expect = { "fetching_from:t-0" = 3 }\n')
    checks = _model(_checks(moved + _answer("offset = 0", '"log_end_offset:t-0" = 3, "fetching_from:t-0" = 3')))
    assert checks["2:log_end_offset:t-0"] == 3 and checks["2:fetching_from:t-0"] == 3


def test_an_unanswered_request_times_out_and_the_partition_fetches_again():
    wait = ('[[probe.steps]]\nwait_ms = 4000\n'
            'expect = { "fetch_sent.fetch_offset:t-0" = 3 }\n')
    checks = _model(_checks(wait))
    assert checks["1:fetch_sent.fetch_offset:t-0"] == 3


TWO = """
name = "probe"
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
[probe]
kafka_test = "AbstractFetcherThreadTest.testFollowerFetchOutOfRangeHigh"
kafka_tag = "{profile}.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 2
leader_epoch = 4
replicas = [1, 2]
log = [{{ leader_epoch = 4 }}, {{ leader_epoch = 4 }}]
high_watermark = 0
[[probe.state.partitions]]
tp = "t-1"
leader = 2
leader_epoch = 4
replicas = [1, 2]
[[probe.steps]]
deliver = "FetchResponse"
from = "b2"
body = {{ partitions = [{{ tp = "t-0", error = "OFFSET_OUT_OF_RANGE", high_watermark = 0, log_start_offset = 0 }}, {{ tp = "t-1", high_watermark = 0, log_start_offset = 0, records = [{{ base_offset = 0, leader_epoch = 4 }}] }}] }}
expect = {{ "log_end_offset:t-1" = 0 }}
[[probe.steps]]
deliver = "ListOffsetsResponse"
from = "b2"
body = {{ partitions = [{{ tp = "t-0", offset = 1 }}] }}
expect = {{ "alive" = {alive}, "log_end_offset:t-0" = {t0}, "log_end_offset:t-1" = {t1} }}
"""


def test_the_rest_of_the_fetch_answer_waits_for_the_reset_and_is_lost_to_a_halt():
    done = _model(probe_checks(TWO.format(profile="3.7", alive="true", t0=1, t1=1), by_step=True))
    assert done["0:log_end_offset:t-1"] == 0  # read only once t-0's reset is done
    assert (done["1:log_end_offset:t-0"], done["1:log_end_offset:t-1"]) == (1, 1)
    halted = _model(probe_checks(TWO.format(profile="1.0", alive="false", t0=2, t1=0), by_step=True))
    assert halted["1:alive"] is False and halted["1:log_end_offset:t-1"] == 0
