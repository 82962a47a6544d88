"""KIP-227 fetch sessions in whole runs: what Fetches name and answers carry, session loss on a
leader restart, the fall-back to a full Fetch after a session error, and the check that a
leader reading only its sessions' dirty partitions misses nothing a full read would find."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from sim.kafka import errors as E
from sim.kafka import fetch_session
from sim.kafka.messages import FetchPartitionData
from sim.kafka.model_bug import ModelBug
from tests.conftest import scenario_path
from tests.kafka import build_cluster

WIDE = """
name = "sessions"
expect = "pass"
seed = 1
[run]
duration_ms = {duration_ms}
settle_ms = 500
[protocol]
profile = "{profile}"
[network]
latency = {{ dist = "constant", ms = 1 }}
[[topics]]
name = "idle"
partitions = 40
replication_factor = 3
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 10
[[consumers]]
name = "k1"
topic = "t"
{faults}
"""


def _wide(profile: str, duration_ms: int = 2000, faults: str = "") -> str:
    return WIDE.format(profile=profile, duration_ms=duration_ms, faults=faults)


def _pinned(text: str, ibp: str, consumer: str = "") -> str:
    """`text` with its cluster's IBP pinned to `ibp`, and its consumer on `consumer`'s code."""
    text = text.replace("[network]", f'inter_broker_protocol = "{ibp}"\n[network]', 1)
    if consumer:
        text = text.replace('topic = "t"\n\n', f'topic = "t"\nprofile = "{consumer}"\n\n')
    return text


def _fetches(events, node_kind: str, msg: str) -> list[dict]:
    """The `send` events of `msg` from brokers (`b`) or consumers (`k`)."""
    return [e for e in events if e["kind"] == "send" and e["msg"] == msg
            and e["node"].startswith(node_kind)]


def test_after_the_first_full_fetch_a_session_names_only_what_changed():
    events = run_scenario(parse_scenario(_wide("3.7"), "s.toml"), 1, keep_events=True)["_events"]
    fetches = _fetches(events, "b", "Fetch")
    full = [e for e in fetches if e["session_epoch"] == 0]
    incremental = [e for e in fetches if e["session_epoch"] > 0]
    assert len(full) == 6  # one per follower and leader: 3 brokers x 2 leaders each
    assert max(e["n_parts"] for e in full) > 10  # ~41 partitions split over the leaders
    assert len(incremental) > 100
    assert max(e["n_parts"] for e in incremental) <= 1  # only t-0 moves
    answers = [e for e in _fetches(events, "b", "FetchResponse") if e["dst"].startswith("b")]
    assert sum(e["n_parts"] > 1 for e in answers) == 6  # only those that open the sessions
    consumer = _fetches(events, "k", "Fetch")
    assert consumer[0]["session_epoch"] == 0 and consumer[-1]["session_epoch"] > 10


def test_new_code_at_an_old_ibp_fetches_in_full_as_the_ibp_s_fetch_version_has_no_session():
    text = _pinned(_wide("3.7"), "1.0")
    events = run_scenario(parse_scenario(text, "s.toml"), 1, keep_events=True)["_events"]
    followers = _fetches(events, "b", "Fetch")
    assert followers and all("session_epoch" not in e for e in followers)
    consumer = _fetches(events, "k", "Fetch")  # a client agrees versions with each broker
    assert consumer[-1]["session_epoch"] > 10


def test_a_broker_without_sessions_answers_a_client_s_session_fetch_in_full():
    """A 2.4 consumer asks a 1.0 cluster for a session; the answer opens none, so it stays full."""
    text = _pinned(_wide("1.0"), "1.0", consumer="2.4")
    verdict = run_scenario(parse_scenario(text, "s.toml"), 1, keep_events=True)
    events = verdict["_events"]
    consumer = _fetches(events, "k", "Fetch")
    assert consumer and all(e["session_epoch"] == 0 for e in consumer)
    answers = [e for e in _fetches(events, "b", "FetchResponse") if e["dst"].startswith("k")]
    assert answers and all(not e.get("session_id") for e in answers)
    assert verdict["expectation_met"], verdict["violated"]


def test_before_1_1_every_fetch_names_every_partition():
    events = run_scenario(parse_scenario(_wide("1.0"), "s.toml"), 1, keep_events=True)["_events"]
    fetches = _fetches(events, "b", "Fetch")
    assert all("session_epoch" not in e for e in fetches)
    by_pair = {}
    for e in fetches:
        by_pair.setdefault((e["node"], e["dst"]), set()).add(e["n_parts"])
    assert all(len(sizes) == 1 for sizes in by_pair.values()), by_pair  # always all of them


def _replicated(verdict) -> dict:
    """The final HW of t-0 on each broker."""
    hws = {}
    for e in verdict["_events"]:
        if e["kind"] == "hw":
            for tp, _tid, hw, _epoch in e["hws"]:
                if tp == "t-0":
                    hws[e["node"]] = hw
    return hws


@pytest.mark.parametrize("profile", ["1.0", "3.7"])
def test_both_ways_replicate_and_consume_alike(profile):
    verdict = run_scenario(parse_scenario(_wide(profile), "s.toml"), 1, keep_events=True)
    assert not verdict["violations"]
    hws = _replicated(verdict)  # the followers' trail the leader's by a round trip at most
    assert min(hws.values()) > 300 and max(hws.values()) - min(hws.values()) <= 4, hws
    consumed = sum(e["count"] for e in verdict["_events"] if e["kind"] == "consume")
    assert consumed > 300


# b1 starts again once ZooKeeper expired its session (before, its old registration would fail
# the start)
RESTART = """
[cluster]
broker_session_timeout_ms = 1000
[[faults]]
at_ms = 800
action = "crash"
target = "b1"
[[faults]]
at_ms = 1700
action = "restart"
target = "b1"
[[faults]]
at_ms = 2100
action = "preferred_election"
"""


def test_a_restarted_leader_has_lost_its_sessions_and_opens_new_ones():
    events = run_scenario(parse_scenario(_wide("3.7", 4000, RESTART), "s.toml"), 1,
                          keep_events=True)["_events"]
    opened = [e for e in _fetches(events, "b", "FetchResponse") if e["node"] == "b1"
              and e.get("session_id")]
    before = {e["session_id"] for e in opened if e["t"] < 800_000}
    after = {e["session_id"] for e in opened if e["t"] > 1_700_000}
    assert before and after and min(after) > max(before)  # ids are not reused
    to_b1 = [e for e in _fetches(events, "b", "Fetch") if e["dst"] == "b1" and e["t"] > 1_700_000]
    assert to_b1 and to_b1[0]["session_epoch"] == 0  # the followers start over with a full Fetch
    assert max(e["session_epoch"] for e in to_b1) > 10  # and go on in the new sessions


@pytest.mark.parametrize("error", [E.FETCH_SESSION_ID_NOT_FOUND, E.INVALID_FETCH_SESSION_EPOCH])
def test_after_a_session_error_the_follower_fetches_in_full_and_carries_on(error):
    """At 1 s the leader b1 forgets its followers' sessions (as a cache eviction would) or
    moves their epochs on (as a duplicate would): each follower's next incremental Fetch is
    refused, its next one is full, and replication goes on in a new session."""
    cluster, trace = build_cluster(_wide("3.7", 2000))
    b1 = cluster.world.actors["b1"]

    def spoil():
        sessions = b1.fetch_sessions.sessions
        assert sessions
        for sid in sorted(sessions):
            if error == E.FETCH_SESSION_ID_NOT_FOUND:
                b1.close_session(sid)
            else:
                sessions[sid].epoch += 5
    cluster.kernel.call_later(1_000_000, spoil)
    cluster.run()
    later = [e for e in trace.events if e["t"] >= 1_000_000]
    refused = [e for e in later if e["kind"] == "send" and e["msg"] == "FetchResponse"
               and e.get("error") == error and e["dst"] == "b2"]
    assert refused and all(e["n_parts"] == 0 for e in refused)
    after = [e for e in later if e["kind"] == "send" and e["msg"] == "Fetch"
             and e["node"] == "b2" and e["dst"] == "b1" and e["seq"] > refused[0]["seq"]]
    closes = 0 if error == E.FETCH_SESSION_ID_NOT_FOUND else refused[0]["session_id"]
    assert after[0]["session_epoch"] == 0 and after[0]["session_id"] == closes
    assert after[1]["session_epoch"] == 1
    copied = [e for e in later if e["kind"] == "replicate" and e["node"] == "b2"
              and e["leader"] == 1 and e["seq"] > after[1]["seq"]]
    assert len(copied) > 10


def test_a_duplicated_fetch_is_refused_with_invalid_fetch_session_epoch():
    dup = """
[[faults]]
at_ms = 500
action = "rule"
rule = "duplicate"
kind = "Fetch"
duration_ms = 200
"""
    verdict = run_scenario(parse_scenario(_wide("3.7", 2000, dup), "s.toml"), 1,
                           keep_events=True)
    refused = [e for e in _fetches(verdict["_events"], "b", "FetchResponse")
               if e.get("error") == E.INVALID_FETCH_SESSION_EPOCH]
    assert refused
    assert not verdict["violations"]


CHECKED = [("mix-client-liveness", 1), ("mix-reassignment-churn", 1),
           ("mix-controller-failover-storm", 1), ("kip101-power-loss-divergence-fixed", 1),
           ("kip320-consumer-truncation-legacy", 1), ("kafka13972-stray-replica-fixed", 1),
           ("kip570-stop-replica-reorder-legacy", 1),
           ("kafka14704-follower-hw-before-truncation-legacy", 1),
           ("idem-retention-spurious-2.5", 1),
           # a session opened by a full Fetch whose own read moved a partition's HW
           ("mix-connection-resets", 2)]


@pytest.mark.parametrize("name, seed", CHECKED)
def test_reading_only_dirty_partitions_misses_nothing_a_full_read_finds(name, seed, monkeypatch):
    """Every incremental Fetch also reads each partition it skips, as Kafka's leader does;
    a skipped partition with anything to carry or change is a `ModelBug`."""
    monkeypatch.setattr(fetch_session, "CHECK_AGAINST_FULL_READS", True)
    verdict = run_scenario(load_scenario(scenario_path(name)), seed)
    assert verdict["expectation_met"], verdict["violated"]


def test_the_check_finds_a_partition_left_clean_when_it_had_news(monkeypatch):
    """Without marking a partition dirty when its HW moves, the check must fail: a follower
    that already has a partition's records learns its new HW only from an answer that
    carries the partition."""
    from sim.kafka.broker import Broker
    monkeypatch.setattr(fetch_session, "CHECK_AGAINST_FULL_READS", True)
    original = Broker.maybe_advance_hw

    def hw_without_touch(self, p):
        self.touch_sessions = lambda tp: None
        try:
            original(self, p)
        finally:
            del self.touch_sessions
    monkeypatch.setattr(Broker, "maybe_advance_hw", hw_without_touch)
    with pytest.raises(ModelBug, match="skipped orders-.*its read has news"):
        run_scenario(load_scenario(scenario_path("smoke")), 1)


def test_a_follower_reads_nothing_of_an_answer_out_of_its_session_and_starts_over():
    """`FetchSessionHandler.handleResponse` refuses an incremental answer carrying a partition
    outside the session (`verifyIncrementalFetchResponsePartitions`), and the follower reads
    none of it (`RemoteLeaderEndPoint.fetch` at 3.7.0: an empty map): the first answer from b1
    to b2 with records after 1 s also carries `idle-99`, which b2's session does not hold. b2
    takes none of its records, and its next Fetch closes the session and asks for a new one
    (the session's id, INITIAL_EPOCH); replication goes on."""
    cluster, trace = build_cluster(_wide("3.7", 2000))
    b2 = cluster.world.actors["b2"]
    seen: dict = {}
    dispatch = b2.dispatch

    def spoil(msg):
        body = msg.body
        if (not seen and msg.kind == "FetchResponse" and msg.src == "b1" and b2.now_us >= 1_000_000
                and body.session_id and any(d.entries for d in body.partitions)):
            msg = msg._replace(body=body._replace(
                partitions=body.partitions + (FetchPartitionData("idle-99", E.NONE),)))
            seen["leo"] = b2.partitions["t-0"].log.leo
            seen["session"] = body.session_id
            dispatch(msg)
            seen["after"] = b2.partitions["t-0"].log.leo
            return
        dispatch(msg)
    b2.dispatch = spoil
    cluster.run()
    assert seen and seen["after"] == seen["leo"]  # nothing of it was read
    t = [e["t"] for e in trace.events if e["kind"] == "send" and e["msg"] == "FetchResponse"
         and e["node"] == "b1" and e["dst"] == "b2" and e["t"] >= 1_000_000
         and e["n_batches"]][0]
    after = [e for e in trace.events if e["kind"] == "send" and e["msg"] == "Fetch"
             and e["node"] == "b2" and e["dst"] == "b1" and e["t"] > t]
    assert (after[0]["session_id"], after[0]["session_epoch"]) == (seen["session"], 0)
    assert after[1]["session_epoch"] == 1
    assert b2.partitions["t-0"].log.leo > seen["leo"]
