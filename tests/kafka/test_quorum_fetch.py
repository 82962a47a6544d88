"""The metadata log's way to the brokers, as Kafka's raft client runs it: a controller's
records linger `quorum_append_linger_ms` and reach the log together; the active controller
writes a NoOpRecord every `metadata_max_idle_interval_ms` (KIP-835); and a broker that
fetched a record before its commit learns of the commit when the log next grows or its Fetch's
wait ends (3.3-4.0), or at once from 4.1 (KIP-1166, `kraft_fetch_completes_on_hw`).
Read from the trace of `kraft-lagging-broker` (b2 is the broker that lags nothing)."""

from __future__ import annotations

import functools
import statistics

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from tests.conftest import scenario_path


@functools.lru_cache(maxsize=None)
def _events(profile: str, **cluster) -> list[dict]:
    overrides = {"protocol.profile": profile, "cluster.mode": "kraft",
                 **{f"cluster.{k}": v for k, v in cluster.items()}}
    scenario = load_scenario(scenario_path("kraft-lagging-broker"), overrides)
    return run_scenario(scenario, scenario.seed, keep_events=True)["_events"]


def _commit_to_apply_ms(events: list[dict], broker: str = "b2") -> list[float]:
    """For each commit after the cluster's start, how long `broker` took to apply it."""
    applied = [(e["t"], e["to_offset"]) for e in events
               if e["kind"] == "metadata_apply" and e["node"] == broker]
    waits = []
    for e in events:
        if e["kind"] == "metadata_commit" and 2_000_000 < e["t"] < 20_000_000:
            t = next((t for t, offset in applied if offset >= e["high_watermark"]), None)
            if t is not None:
                waits.append((t - e["t"]) / 1000)
    return waits


def _appends(events: list[dict], kind: str) -> list[int]:
    return [e["t"] for e in events
            if e["kind"] == "metadata_append" and e["record"]["kind"] == kind]


def test_before_kip1166_a_broker_learns_a_commit_when_the_log_next_grows():
    """4.0: the brokers fetch each record before it commits; their next Fetch parks until the
    next append, the NoOpRecord 500 ms on, so nearly every commit reaches b2 ~500 ms late."""
    waits = _commit_to_apply_ms(_events("4.0"))
    assert len(waits) >= 20
    assert statistics.median(waits) >= 400 and max(waits) <= 500 + 25 + 5


def test_from_kip1166_a_broker_learns_a_commit_at_once():
    """4.1: the leader answers the parked Fetches as its high watermark moves."""
    waits = _commit_to_apply_ms(_events("4.1"))
    assert len(waits) >= 20 and max(waits) <= 5


def test_without_no_op_records_a_commit_waits_out_the_fetch_wait():
    """4.0 with `metadata_max_idle_interval_ms = 0`: no NoOpRecord, so on a quiet log a
    parked Fetch is answered only when its 500 ms wait ends (the leader checks every 50 ms)."""
    events = _events("4.0", metadata_max_idle_interval_ms=0)
    assert not _appends(events, "NoOpRecord")
    waits = _commit_to_apply_ms(events)
    assert len(waits) >= 3 and statistics.median(waits) >= 400 and max(waits) <= 500 + 50 + 5


def test_the_active_controller_writes_a_no_op_record_every_idle_interval():
    """Each NoOpRecord is scheduled as the one before is written (`maybeScheduleNextWrite
    NoOpRecord`); each lingers 25 ms, or less when another write's linger carries it."""
    noops = _appends(_events("4.1"), "NoOpRecord")
    gaps = [b - a for a, b in zip(noops, noops[1:])]
    assert len(gaps) >= 20 and all(475_000 <= g <= 500_000 for g in gaps)
    assert _appends(_events("4.1", metadata_max_idle_interval_ms=200), "NoOpRecord") != noops


def _registration_delay_us(events: list[dict]) -> list[int]:
    """For each RegisterBrokerRecord, the time from its BrokerRegistration's delivery at the
    controller to the record's append."""
    sent = {e["mid"]: e for e in events if e["kind"] == "send"
            and e.get("msg") == "BrokerRegistration"}
    delivered = {sent[e["mid"]]["broker"]: e["t"] for e in events
                 if e["kind"] == "deliver" and e["mid"] in sent}
    return [e["t"] - delivered[e["record"]["broker"]] for e in events
            if e["kind"] == "metadata_append" and e["record"]["kind"] == "RegisterBrokerRecord"]


def test_a_controllers_records_linger_before_they_reach_the_log():
    """The three registrations, delivered together, reach the log together 25 ms later; with
    `quorum_append_linger_ms = 0` each reaches it as it is written."""
    assert _registration_delay_us(_events("4.1")) == [25_000] * 3
    assert _registration_delay_us(_events("4.1", quorum_append_linger_ms=0)) == [0] * 3


def _answered_before_commit(events: list[dict]) -> list[dict]:
    """The AlterPartition answers (error NONE) a controller sent while the partition state it
    had committed last lacked the ISR the request asked for."""
    asked: dict = {}  # (controller, tp) -> the ISR the last accepted request asked for
    committed: dict = {}  # (controller, tp) -> the ISR of its last committed partition state
    early = []
    for e in events:
        key = (e["node"], e.get("tp"))
        if e["kind"] == "alter_partition" and e["error"] == 0:
            asked[key] = e["isr"]
        elif e["kind"] == "partition_state":
            committed[key] = e["isr"]
        elif e["kind"] == "send" and e.get("msg") == "AlterPartitionResponse" \
                and e["error"] == 0 and committed.get(key) != asked.get(key):
            early.append(e)
    return early


def test_an_alter_partition_is_answered_once_its_record_commits():
    """The answer waits for the record written for it, which lingers before it reaches the
    log: answered at the log's end instead (an offset already committed), a quorum leader cut
    from the others answered changes it never committed, and a leader kept a partition epoch
    no controller had, refused NOT_CONTROLLER from then on (mix-kraft-rolling-splits seed 13)."""
    scenario = load_scenario(scenario_path("kraft-rolling-restart"))
    events = run_scenario(scenario, 1, keep_events=True)["_events"]
    answers = [e for e in events if e["kind"] == "send"
               and e.get("msg") == "AlterPartitionResponse" and e["error"] == 0]
    assert len(answers) >= 3
    assert not _answered_before_commit(events)


def test_a_resigning_quorum_leader_refuses_its_parked_fetches():
    """kafka15489-kraft-split-brain-fixed: the quorum leader cut from the other voters resigns
    (check-quorum) while the brokers' Fetches are parked there; it answers them
    NOT_LEADER_OR_FOLLOWER with no records (`fetchPurgatory.completeAllExceptionally`), not
    with what its log holds."""
    scenario = load_scenario(scenario_path("kafka15489-kraft-split-brain-fixed"))
    events = run_scenario(scenario, 1, keep_events=True)["_events"]
    resigned = [e for e in events if e["kind"] == "quorum_resigned"]
    assert resigned
    for r in resigned:
        answers = [e for e in events if e["kind"] == "send" and e["node"] == r["node"]
                   and e["t"] == r["t"] and e.get("msg") == "QuorumFetchResponse"]
        assert answers and all(a["error"] == 6 for a in answers), answers


def _follower_fetches(profile: str, answer_hw: int | None = None) -> list:
    """The HighWatermark of the Fetches c1, a follower of c2 in epoch 5 with six records and
    no high watermark known, sends: its first, and the one after an answer carrying `answer_hw`."""
    from types import SimpleNamespace

    from sim.kafka.kraft_messages import NO_OP, MetadataRecord, QuorumFetchResponse
    from tests.kafka.test_raft_epochs import _voter
    c1, sent = _voter("follower", 5, "c2", profile=profile)
    c1.entries = [(5, MetadataRecord.of(NO_OP))] * 6  # six records, none known committed
    c1._fetch()
    if answer_hw is not None:
        c1.on_quorum_fetch_response(SimpleNamespace(src="c2", body=QuorumFetchResponse(
            5, "c2", 0, (), answer_hw, None, sent[-1][2].corr)))
    return [body.high_watermark for _dst, kind, body in sent if kind == "QuorumFetch"]


def test_a_voter_fetch_says_it_knows_no_high_watermark_until_an_answer_brings_one():
    """KIP-1166 (4.1+, `KafkaRaftClientFetchTest.testHighWatermarkSentInFetchRequest`): a
    voter that knows no high watermark sends -1 (Kafka's empty `highWatermark()`), then the
    one an answer brought; an answer that knows none (-1) teaches it nothing. The model's
    voter sent 0, the start of its count, before it had learned any; before 4.1 the Fetch
    has no such field."""
    assert _follower_fetches("4.3", 6) == [-1, 6]
    assert _follower_fetches("4.1", -1) == [-1, -1]
    assert _follower_fetches("4.1", 0) == [-1, 0]  # 0 is a high watermark a leader can send
    assert _follower_fetches("4.0", 6) == [None, None]
