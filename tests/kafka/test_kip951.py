"""KIP-951 leader discovery: the client rules of ref §3.1/§3.3, the broker hint of §1.3, the
connection model, the scenario pair with its planted mutants, and the study's determinism."""

from __future__ import annotations

import random
from collections import deque
from types import SimpleNamespace

import pytest

from epochsim.runner import header_for, run_scenario, schedule_for
from scenarios.schema import load_scenario, parse_scenario
from sim.core.trace import Trace
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.cluster import Cluster
from sim.kafka.connection import RequestQueue, least_loaded_node
from sim.kafka.messages import MetadataResponse
from sim.kafka.options import ClusterOptions
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules.client_producer import in_flight_stops_drain, retry_backoff_us, should_backoff
from sim.kafka.rules.leader_discovery import current_leader_hint, node_endpoints
from tests.conftest import scenario_path
from tests.kafka import build_cluster


class _Owner:
    def __init__(self):
        self.events = []

    def emit(self, kind, fields):
        self.events.append((kind, fields))


def _meta(mutant: str = "") -> ClientMetadata:
    """A client that knows t-0 at (b1, epoch 3), t-1 at (b2, epoch 0), brokers 1..3."""
    meta = ClientMetadata(_Owner(), resolve_protocol("3.7", mutant=mutant))
    meta.apply_response(MetadataResponse(1, (1, 2, 3), (("t-0", 7, 1, 3), ("t-1", 7, 2, 0))), "b1")
    return meta


# -- ClientMetadata.apply_hint (ref §3.3.2) ----------------------------------------------
def test_hint_accepted_when_strictly_newer_and_node_known():
    meta = _meta()
    assert meta.apply_hint("t-0", 2, 4, (), "b1")
    assert meta.current_leader("t-0") == (2, 4)
    kind, fields = meta.owner.events[-1]
    assert kind == V.CLIENT_EPOCH and fields["source"] == "hint" and fields["previous_epoch"] == 3
    assert meta.current_leader("t-1") == (2, 0), "a hint for one partition keeps the others (KAFKA-16012)"


@pytest.mark.parametrize("epoch", [3, 2])
def test_equal_or_older_hint_is_ignored(epoch):
    meta = _meta()
    assert not meta.apply_hint("t-0", 2, epoch, (), "b1")
    assert meta.current_leader("t-0") == (1, 3)


@pytest.mark.parametrize("leader,epoch,endpoints,tp", [
    (9, 4, (), "t-0"),     # node in neither the cluster nodes nor the NodeEndpoints
    (-1, 4, (), "t-0"),    # leader unknown to the broker
    (2, -1, (), "t-0"),    # epoch unknown to the broker
    (2, 4, (), "t-9"),     # partition not cached
])
def test_incomplete_or_unusable_hint_is_ignored(leader, epoch, endpoints, tp):
    meta = _meta()
    assert not meta.apply_hint(tp, leader, epoch, endpoints, "b1")


def test_hint_node_from_node_endpoints_joins_the_known_nodes():
    meta = _meta()
    assert meta.apply_hint("t-0", 4, 4, (4,), "b1")
    assert meta.current_leader("t-0") == (4, 4) and 4 in meta.brokers


def test_every_node_endpoint_joins_once_a_hint_applies():
    """`Metadata.updatePartitionLeadership` (3.7): the answer's nodes merge into the cache when
    some partition is updated, the hinted leader's or not (MetadataTest
    testUpdatePartitionLeadership adds node 999 with a hint to a known node); an answer whose
    hints are all ignored adds none."""
    meta = _meta()
    assert not meta.apply_hint("t-0", 2, 3, (2, 5), "b1")  # not newer: nothing joins
    assert meta.brokers == (1, 2, 3)
    assert meta.apply_hint("t-0", 2, 4, (2, 5), "b1")
    assert meta.brokers == (1, 2, 3, 5)


def test_mutant_hint_accepts_equal_epoch():
    assert _meta("hint_accepts_equal_epoch").apply_hint("t-0", 2, 3, (), "b1")


def test_metadata_never_moves_a_client_back_and_equal_is_accepted():
    meta = _meta()
    meta.apply_hint("t-0", 2, 4, (), "b2")
    meta.apply_response(MetadataResponse(2, (1, 2, 3), (("t-0", 7, 1, 3),)), "b3")  # lagging broker
    assert meta.current_leader("t-0") == (2, 4)
    assert [k for k, f in meta.owner.events if f["tp"] == "t-0"][-1] == V.METADATA_REJECTED
    meta.apply_response(MetadataResponse(3, (1, 2, 3), (("t-0", 7, 3, 4),)), "b2")
    assert meta.current_leader("t-0") == (3, 4), "an equal epoch is accepted (ref §3.1)"


def test_mutant_client_accepts_stale_metadata():
    meta = _meta("client_accepts_stale_metadata")
    meta.apply_response(MetadataResponse(2, (1, 2, 3), (("t-0", 7, 1, 2),)), "b3")
    assert meta.current_leader("t-0") == (1, 2)


# -- the producer's retry timing (ref §3.3.4, §0) ------------------------------------------
def test_first_retry_after_an_epoch_advance_skips_the_backoff_later_ones_do_not():
    """`RecordAccumulator.shouldBackoff` with KIP-951: a batch whose first try went at epoch 3
    and failed (attempts 1) waits its backoff until the leader's epoch advances, which the
    drain records as `attempts_when_leader_changed` = attempts; its next retry waits again."""
    wait = should_backoff
    assert not wait("kip951", 0, 0, 0, 0), "a first send never backs off"
    assert wait("kip951", 1, 0, 0, 100_000), "no newer leader: wait the backoff"
    assert not wait("kip951", 1, 1, 0, 100_000), "first retry after the advance goes now"
    assert wait("kip951", 2, 1, 0, 300_000), "later retries to that epoch back off"
    assert not wait("kip951", 2, 1, 300_000, 300_000), "the backoff is over"


def test_metadata_mode_always_waits_the_backoff():
    assert should_backoff("metadata", 1, 1, 0, 100_000)
    assert should_backoff("refresh_no_backoff", 1, 1, 0, 100_000)


@pytest.mark.parametrize("drains", [False, True])
def test_a_new_batch_waits_for_batches_in_flight_to_an_old_leader_only_when_draining(drains):
    """`client_drains_on_leader_change`: a partition whose earlier batch is in flight to
    broker 1 sends nothing to its new leader 2 until that batch is answered or times out."""
    proto = resolve_protocol("3.7", {"client_drains_on_leader_change": drains})
    assert not in_flight_stops_drain(proto, False, 1, 1), "the same leader: pipelined"
    assert in_flight_stops_drain(proto, False, 1, 2) is drains
    assert in_flight_stops_drain(proto, True, 1, 1), "max.in.flight 1 mutes the partition"


def test_backoff_is_exponential_with_jitter_and_capped():
    stream = random.Random(5)
    proto = resolve_protocol("3.7")

    def draw():
        return stream.uniform(0.8, 1.2)
    first = [retry_backoff_us(proto, 100, 1000, 1, draw) for _ in range(200)]
    assert 80_000 <= min(first) and max(first) <= 120_000
    capped = [retry_backoff_us(proto, 100, 1000, 9, draw) for _ in range(200)]
    assert max(capped) <= 1_000_000 and min(capped) >= 800_000


# -- the broker's hint (ref §1.3) and NodeEndpoints ----------------------------------------
def _hint(err, produce=False, hosted=(2, 5), cached=(3, 8), **switches):
    proto = resolve_protocol("3.7", switches)
    return current_leader_hint(proto, err, produce, hosted, cached)


def test_hint_comes_from_the_hosted_partition_then_the_metadata_cache():
    assert _hint(E.NOT_LEADER_OR_FOLLOWER) == (2, 5)
    assert _hint(E.FENCED_LEADER_EPOCH, hosted=None) == (3, 8)
    assert _hint(E.NOT_LEADER_OR_FOLLOWER, hosted=None, cached=None) == (-1, -1)
    assert _hint(E.UNKNOWN_LEADER_EPOCH) is None
    assert _hint(E.NOT_LEADER_OR_FOLLOWER, leader_discovery="metadata") is None


def test_produce_hints_fenced_only_under_kip359():
    assert _hint(E.FENCED_LEADER_EPOCH, produce=True) is None
    assert _hint(E.FENCED_LEADER_EPOCH, produce=True, produce_epoch_check=True) == (2, 5)
    assert _hint(E.NOT_LEADER_OR_FOLLOWER, produce=True) == (2, 5)


def test_node_endpoints_name_only_leaders_the_broker_knows_alive():
    assert node_endpoints([(2, 5), (3, 8), None, (-1, -1)], (1, 2)) == (2,)


# -- connections (HOL blocking) ------------------------------------------------------------
class _Base:
    def send(self, dst, kind, body):
        self.sent.append((dst, kind))
        return len(self.sent)


class _QueueStub(RequestQueue, _Base):
    def __init__(self):
        self.cluster = ClusterOptions(request_service_us=100)
        self.sent, self.timers, self.handled = [], deque(), []
        self.init_request_queue()

    def set_timer(self, delay_us, name, data):
        self.timers.append((delay_us, data))

    def dispatch(self, msg):
        self.handled.append(msg.body.corr)

    def serve(self):
        _delay, msg = self.timers.popleft()
        self.on_request_served(msg)


def _msg(kind, src, corr, batches=0, acks=-1):
    body = SimpleNamespace(corr=corr, acks=acks, partitions=tuple(range(batches)))
    return SimpleNamespace(kind=kind, src=src, body=body)


def test_metadata_waits_behind_a_parked_produce_on_the_same_connection():
    q = _QueueStub()
    assert q.enqueue_request(_msg("Produce", "p1", 1, batches=10))
    assert q.enqueue_request(_msg("Metadata", "p1", 2))
    assert q.enqueue_request(_msg("Metadata", "k1", 3))
    assert not q.enqueue_request(_msg("LeaderAndIsr", "c1", 4)), "control requests bypass"
    assert q.timers[0][0] == 100 * (1 + 0.2 * 10), "service grows with the batches"
    q.serve()
    q.serve()  # k1's Metadata: its connection is free
    assert q.handled == [1, 3] and not q.timers, "p1's Metadata waits for the Produce answer"
    q.send("p1", "ProduceResponse", SimpleNamespace(corr=1))  # the parked Produce completes
    q.serve()
    assert q.handled == [1, 3, 2]


def test_a_closed_connection_loses_its_unread_requests_and_the_new_one_starts_unmuted():
    q = _QueueStub()
    q.enqueue_request(_msg("Produce", "p1", 1))
    q.enqueue_request(_msg("Metadata", "p1", 2))  # unread behind the Produce
    q.serve()  # the Produce is handled and parks (acks=all)
    q.connection_closed("p1")  # the network resets p1's connection
    q.enqueue_request(_msg("Produce", "p1", 3))  # the retry, on a new connection
    q.enqueue_request(_msg("Metadata", "p1", 4))
    q.serve()
    assert q.handled == [1, 3], "request 2 went with its connection; 3 needs no answer to 1"
    q.send("p1", "ProduceResponse", SimpleNamespace(corr=1))  # the old answer: no connection
    assert not q.timers, "the old connection's answer unmutes nothing on the new one"
    q.send("p1", "ProduceResponse", SimpleNamespace(corr=3))
    q.serve()
    assert q.handled == [1, 3, 4]


@pytest.mark.parametrize("rule, busy, idle_connected, none_connected", [
    # b1 and b3 connected (2 and 1 in flight), b2 not: before 2.3 a node without a connection
    # counts as idle; from 2.3 an open connection comes first
    ("fewest_in_flight", 2, 3, 1),
    # without any connection, 2.3-2.6 take the last node the scan finds, 2.7+ the one
    # attempted longest ago (b2 at 100 µs)
    ("established_first", 3, 3, 3),
    ("oldest_attempt", 3, 3, 2),
])
def test_least_loaded_node_by_release(rule, busy, idle_connected, none_connected):
    """`NetworkClient.leastLoadedNode` at 2.2.0, 2.3.0 (KAFKA-8376) and 3.7.0 (KIP-601)."""
    def pick(load, connected, attempts=None):
        return least_loaded_node((1, 2, 3), load.get, 5, 0, rule, connected, attempts)
    assert pick({1: 2, 2: 0, 3: 1}, {1, 3}) == busy
    assert pick({1: 2, 2: 0, 3: 0}, {1, 3}) == idle_connected  # connected and idle: at once
    assert pick({1: 0, 2: 0, 3: 0}, set(), {1: 500, 2: 100, 3: 300}) == none_connected
    assert least_loaded_node((1, 3), lambda n: 5, 5, 1, rule, {1, 3}) is None  # all full


@pytest.mark.parametrize("profile, to_connected", [("2.2", False), ("3.7", True)])
def test_a_metadata_request_prefers_an_open_connection_from_2_3(profile, to_connected):
    """A producer with a request in flight to its one connected broker asks that broker for
    metadata from 2.3 on; before, a broker it has no connection to counts as idle and wins."""
    text = ("name = \"llm\"\nexpect = \"pass\"\n[protocol]\nprofile = \"" + profile + "\"\n"
            "[[topics]]\nname = \"t\"\n[[producers]]\ntopic = \"t\"\n")
    cluster, _ = build_cluster(text)
    producer = cluster.clients[0]
    producer.connected, producer.inflight = {1}, {1: {99: []}}
    producer.request_update(immediate=True)
    assert (producer.meta_node == 1) is to_connected


# -- scenarios: the lagging broker and the planted mutants ---------------------------------
def _run(name: str, seed: int = 1, overrides: dict | None = None, keep: bool = False) -> dict:
    return run_scenario(load_scenario(scenario_path(name), overrides), seed, keep_events=keep)


@pytest.mark.parametrize("mode", ["kip951", "metadata"])
def test_lagging_broker_never_moves_clients_back(mode):
    verdict = _run("kip951-lagging-broker", overrides={"protocol.leader_discovery": mode},
                   keep=True)
    assert verdict["violated"] == [], verdict["violations"][:2]
    kinds = [ev["kind"] for ev in verdict["_events"]]
    assert kinds.count(V.METADATA_REJECTED) > 0, "clients must actually meet the stale metadata"
    assert kinds.count(V.CONSUME) > 0


def test_lagging_broker_consumer_takes_the_fetch_hint():
    events = _run("kip951-lagging-broker", keep=True)["_events"]
    hints = [ev for ev in events if ev["kind"] == V.FETCH_ERROR and ev["action"] == "hint"]
    assert hints and all(ev["node"] == "k1" for ev in hints)


def test_client_accepts_stale_metadata_mutant_regresses():
    assert "client_leader_epoch_regression" in _run("client-stale-metadata-mutant")["violated"]
    verdict = _run("kip951-lagging-broker", overrides={
        "protocol.leader_discovery": "metadata", "protocol.mutant": "client_accepts_stale_metadata"})
    assert "client_leader_epoch_regression" in verdict["violated"]


def test_hint_accepts_equal_epoch_mutant_is_caught_and_the_fix_holds():
    assert _run("kip951-hint-equal-epoch-mutant")["violated"] == ["leader_hint_misapplied"]
    assert _run("kip951-hint-equal-epoch-mutant", overrides={"protocol.mutant": ""})["violated"] == []


# -- the study -----------------------------------------------------------------------------
TINY = """
name = "tiny-move"
expect = "pass"
faults = [
  { at_ms = 1700, action = "move_leader", target = "t-0" },
  { at_ms = 1700, action = "move_leader", target = "t-1" },
  { at_ms = 1700, action = "move_leader", target = "t-2" },
]
[run]
duration_ms = 2300
settle_ms = 200
[protocol]
profile = "3.7"
isr_shrink_bumps_epoch = false
[cluster]
min_insync_replicas = 2
[[topics]]
name = "t"
partitions = 3
[[producers]]
topic = "t"
records_per_sec = 3000
start_ms = 1000
stop_ms = 2100
[network]
latency = { dist = "uniform", min_ms = 0.25, max_ms = 0.75 }
"""


def test_study_table_is_deterministic_and_kip951_beats_the_backoff():
    from epochsim import study
    jobs = study.study_jobs([parse_scenario(TINY, "tiny.toml")], seeds=1)
    first, second = study.run_study(jobs), study.run_study(jobs)
    assert study.format_table(first) == study.format_table(second)
    assert [r["trace_digest"] for r in first] == [r["trace_digest"] for r in second]
    worst = {r["mode"]: r["produce"]["max"] for r in first}
    assert worst["kip951"] < worst["metadata"]


def test_the_study_probe_is_shown_every_kind_it_reads():
    """The probe observes only `Probe.KINDS`; fed every event instead, it must gather the same."""
    from epochsim import study
    sc = study.with_mode(parse_scenario(TINY, "tiny.toml"), "kip951")
    schedule = schedule_for(sc, 1)
    trace = Trace(header_for(sc, 1, schedule), None, keep=True)
    online = study.Probe()
    trace.observe(online.step, study.Probe.KINDS)
    Cluster(sc.options, schedule, 1, trace).run()
    offline = study.Probe()
    for ev in trace.events:
        offline.step(ev)
    assert online.produce and online.faults
    assert vars(online) == vars(offline)
