"""A client's two metadata maps, as Kafka's `Metadata` keeps them (ref §3.1): the cache each
Metadata answer builds anew, which drops what the answer no longer lists, and the last seen
leader epochs, which outlive it and which epochs learnt out of band (a ListOffsets answer)
raise, making the cached entry stale; and what producers and consumers do with a partition
whose leader they no longer know."""

from __future__ import annotations

import pytest

from sim.kafka import vocab as V
from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.messages import MetadataResponse
from sim.kafka.profiles import resolve_protocol
from tests.kafka import build_cluster


class _Owner:
    def __init__(self):
        self.events = []

    def emit(self, kind, fields):
        self.events.append((kind, fields))


def _meta(profile: str = "3.7") -> ClientMetadata:
    """A client that knows t-0 at (b1, epoch 3), t-1 at (b2, epoch 0), u-0 at (b3, 5)."""
    meta = ClientMetadata(_Owner(), resolve_protocol(profile))
    meta.apply_response(_resp(("t-0", 7, 1, 3), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b1")
    return meta


def _resp(*parts, brokers=(1, 2, 3)) -> MetadataResponse:
    return MetadataResponse(1, brokers, tuple(parts))


# -- the cache is built anew from each answer ------------------------------------------------
def test_an_answer_that_no_longer_lists_a_topic_drops_it_and_keeps_its_last_seen_epochs():
    meta = _meta()
    meta.apply_response(_resp(("t-0", 7, 1, 3), ("t-1", 7, 2, 0)), "b2")
    assert meta.entry("u-0") == (-1, -1, -1) and meta.current_leader("u-0") == (-1, 5)
    assert meta.epoch("u-0") == 5, "lastSeenLeaderEpochs outlives the cache"
    kind, fields = meta.owner.events[-1]
    assert kind == V.CLIENT_EPOCH and fields["dropped"] and fields["tp"] == "u-0"
    assert (fields["leader"], fields["leader_epoch"], fields["topic_id"]) == (-1, 5, 8)
    assert meta.current_leader("t-0") == (1, 3), "what the answer lists stays"


def test_a_dropped_partition_listed_again_at_its_epoch_comes_back():
    meta = _meta()
    meta.apply_response(_resp(("t-0", 7, 1, 3)), "b2")  # t-1 and u-0 dropped
    meta.apply_response(_resp(("t-0", 7, 1, 3), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b3")
    assert meta.current_leader("t-1") == (2, 0) and meta.current_leader("u-0") == (3, 5)


@pytest.mark.parametrize("profile,accepted", [("2.6", False), ("3.4.0", True)])
def test_a_dropped_topic_listed_again_at_an_older_epoch(profile, accepted):
    """Up to 2.6 the last seen epoch rejects it and nothing cached is left to fall back on;
    3.2+ (KAFKA-13488) takes a topic id its cache does not hold as new, even the old id."""
    meta = _meta(profile)
    meta.apply_response(_resp(("t-0", 7, 1, 3)), "b2")
    meta.apply_response(_resp(("t-0", 7, 1, 3), ("u-0", 8, 1, 4)), "b3")
    assert meta.current_leader("u-0") == ((1, 4) if accepted else (-1, 5))
    assert (meta.owner.events[-1][0] == V.METADATA_REJECTED) is not accepted


def test_a_rejected_entry_keeps_the_cached_one():
    meta = _meta("2.6")
    meta.apply_response(_resp(("t-0", 7, 2, 2), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b3")
    assert meta.current_leader("t-0") == (1, 3)  # "use the previously cached info"


def test_an_answer_without_brokers_changes_nothing():
    """A broker that has had no UpdateMetadata yet answers with no brokers and no topics:
    `NetworkClient` counts it a failed update (`Metadata.failedUpdate`), so the cache keeps
    every partition and the refresh backs off and asks again."""
    from tests.kafka.test_client_backoff import _Client
    client = _Client("3.7")
    client.request_update()
    client.answer(4)
    client.request_update()
    before = dict(client.meta.parts)
    client._on_metadata_response(type("Msg", (), {
        "body": MetadataResponse(client.meta_inflight, (), ()), "src": "b2"})())
    assert client.meta.parts == before and client.meta.current_leader("t-0") == (1, 4)
    assert client.meta_inflight is None and client.meta_failures == 1 and client.need_update
    assert client.timers[-1][0] == "refresh"


# -- leader epochs learnt out of band --------------------------------------------------------
def test_a_newer_epoch_learnt_out_of_band_makes_the_cached_entry_stale():
    meta = _meta()
    assert meta.update_last_seen_epoch_if_newer("t-0", 4, "list_offsets", "b2")
    assert meta.entry("t-0") == (7, 1, 3), "the cache is left as it is"
    assert meta.current_leader("t-0") == (-1, 4), "but names no current leader"
    kind, fields = meta.owner.events[-1]
    assert kind == V.CLIENT_EPOCH and fields["source"] == "list_offsets"
    assert (fields["leader"], fields["leader_epoch"], fields["previous_epoch"]) == (-1, 4, 3)
    meta.apply_response(_resp(("t-0", 7, 1, 3), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b3")
    assert meta.current_leader("t-0") == (-1, 4)
    assert meta.owner.events[-1][0] == V.METADATA_REJECTED  # a lagging broker's epoch 3
    meta.apply_response(_resp(("t-0", 7, 2, 4), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b2")
    assert meta.current_leader("t-0") == (2, 4)
    assert meta.owner.events[-1][1]["leader"] == 2


def test_the_same_leader_at_the_learnt_epoch_is_news_to_the_view():
    """A Metadata answer that brings the cached leader back at the learnt epoch changes the
    client's current leader from none to it: a `client_epoch` event."""
    meta = _meta()
    meta.update_last_seen_epoch_if_newer("t-0", 4, "list_offsets", "b1")
    meta.apply_response(_resp(("t-0", 7, 1, 4), ("t-1", 7, 2, 0), ("u-0", 8, 3, 5)), "b1")
    assert meta.owner.events[-1] == (V.CLIENT_EPOCH, {
        "tp": "t-0", "topic_id": 7, "leader": 1, "leader_epoch": 4, "source": "metadata",
        "from": "b1"})


@pytest.mark.parametrize("epoch", [3, 2, -1])
def test_an_epoch_not_newer_than_the_last_seen_is_ignored(epoch):
    meta = _meta()
    assert not meta.update_last_seen_epoch_if_newer("t-0", epoch, "list_offsets", "b1")
    assert meta.current_leader("t-0") == (1, 3)


def test_an_epoch_of_a_partition_never_seen_is_ignored():
    assert not _meta().update_last_seen_epoch_if_newer("t-9", 4, "list_offsets", "b1")


def test_no_out_of_band_epochs_before_kafka_7738():
    meta = _meta("1.0")
    assert not meta.update_last_seen_epoch_if_newer("t-0", 4, "list_offsets", "b1")
    assert meta.current_leader("t-0") == (1, 3)


def test_a_hint_is_judged_against_the_last_seen_epoch():
    meta = _meta()
    meta.update_last_seen_epoch_if_newer("t-0", 5, "list_offsets", "b2")
    assert not meta.apply_hint("t-0", 2, 5, (), "b2")  # not newer than 5
    assert meta.apply_hint("t-0", 2, 6, (), "b2") and meta.current_leader("t-0") == (2, 6)


# -- the clients -----------------------------------------------------------------------------
MOVE_UNSEEN = """
name = "oob"
expect = "pass"
[run]
duration_ms = 6000
settle_ms = 2000
[protocol]
profile = "{profile}"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 200
[[consumers]]
name = "k1"
topic = "t"
fetch_max_wait_ms = 100
# every broker's metadata lags the move by 2 s
[[faults]]
at_ms = 900
action = "rule"
rule = "delay"
kind = "UpdateMetadata"
delay_ms = 2000
duration_ms = 400
[[faults]]
at_ms = 1000
action = "move_leader"
target = "t-0"
"""


def _learn_at(profile: str, t_us: int):
    """Run MOVE_UNSEEN; at `t_us`, hand the consumer the new leader's epoch as a ListOffsets
    answer would (the hook `Consumer.learn_leader_epoch`). Returns the events and what was
    handed."""
    cluster, trace = build_cluster(MOVE_UNSEEN.format(profile=profile))
    consumer = next(c for c in cluster.clients if c.name == "k1")
    learnt = {}

    def learn():
        st = cluster.store.partition("t-0")[1]
        learnt.update(leader=st.leader, epoch=st.leader_epoch)
        consumer.learn_leader_epoch("t-0", st.leader_epoch, "list_offsets", st.leader)

    cluster.kernel.call_later(t_us, learn)
    cluster.run()
    return trace.events, learnt


def _fetches(events, lo_us, hi_us):
    """(broker, CurrentLeaderEpoch) of k1's Fetches naming t-0 in [lo, hi)."""
    return [(e["dst"], e) for e in events if e["kind"] == "send" and e["node"] == "k1"
            and e.get("msg") == "Fetch" and lo_us <= e["t"] < hi_us]


@pytest.mark.parametrize("profile", ["2.5", "3.4.1"])
def test_a_consumer_that_learns_a_newer_epoch_waits_for_metadata_at_it(profile):
    """After the hook the cached (b1, 0) is stale: the consumer asks for metadata, rejects the
    lagging brokers' epoch 0, and validates against the new leader once the delayed
    UpdateMetadata lets a broker name it. Meanwhile a 2.5 consumer fetches nothing of t-0 (its
    position took the epoch without a leader), while from 2.6 (KAFKA-9840) it fetches on from
    the leader its position had, which fences the old epoch."""
    events, learnt = _learn_at(profile, 1_500_000)
    assert learnt == {"leader": 2, "epoch": 1}
    seen = [e for e in events if e["kind"] == V.CLIENT_EPOCH and e["node"] == "k1"
            and e["source"] == "list_offsets"]
    assert [(e["leader"], e["leader_epoch"], e["previous_epoch"]) for e in seen] == [(-1, 1, 0)]
    asked = [e["t"] for e in events if e["kind"] == "send" and e["node"] == "k1"
             and e.get("msg") == "Metadata" and e["t"] >= 1_500_000]
    assert asked and asked[0] <= 1_600_000, "the update flag asks for metadata"
    rejected = [e for e in events if e["kind"] == V.METADATA_REJECTED and e["node"] == "k1"]
    assert rejected and {(e["leader_epoch"], e["known_epoch"]) for e in rejected} == {(0, 1)}
    named = [e for e in events if e["kind"] == V.CLIENT_EPOCH and e["node"] == "k1"
             and e["source"] == "metadata" and e["leader_epoch"] == 1]
    assert named and named[0]["leader"] == 2 and named[0]["t"] > 2_900_000
    validated = [e for e in events if e["kind"] == V.VALIDATE_POSITION and e["node"] == "k1"]
    assert validated and validated[0]["broker"] == 2 and validated[0]["leader_epoch"] == 1
    during = _fetches(events, 1_500_001, named[0]["t"])
    fenced = [e for e in events if e["kind"] == V.FETCH_ERROR and e["node"] == "k1"
              and 1_500_000 < e["t"] < named[0]["t"]]
    if profile == "2.5":
        assert during == [] and fenced == []
    else:
        assert during and {dst for dst, _ in during} == {"b1"}
        assert fenced and {e["leader_epoch"] for e in fenced} == {0}


DELETED = """
name = "deleted"
expect = "pass"
[run]
duration_ms = 9000
settle_ms = 2000
[protocol]
profile = "{profile}"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 200
stop_ms = 2000
[[consumers]]
name = "k1"
topic = "t"
fetch_max_wait_ms = 100
[[faults]]
at_ms = 3000
action = "delete_topic"
target = "t"
"""


@pytest.mark.parametrize("profile", ["2.5", "2.6"])
def test_a_consumer_of_a_deleted_topic(profile):
    """The Metadata answers after the deletion drop t-0 from the consumer's cache, which then
    names no leader at its last seen epoch 0. A 2.5 consumer's position takes that and it
    fetches nothing more, asking for metadata; a 2.6 one (KAFKA-9840) keeps its position's
    leader b1 and fetches on from it, which answers UNKNOWN_TOPIC_OR_PARTITION."""
    cluster, trace = build_cluster(DELETED.format(profile=profile))
    cluster.run()
    events = trace.events
    dropped = [e for e in events if e["kind"] == V.CLIENT_EPOCH and e["node"] == "k1"
               and e.get("dropped")]
    assert [(e["tp"], e["leader"], e["leader_epoch"]) for e in dropped] == [("t-0", -1, 0)]
    after = dropped[0]["t"] + 1
    fetches = _fetches(events, after, 9_000_000)
    errors = {e["error"] for e in events if e["kind"] == V.FETCH_ERROR and e["t"] >= after}
    if profile == "2.5":
        assert fetches == [] and errors == set()
    else:
        assert fetches and {dst for dst, _ in fetches} == {"b1"}
        assert errors == {3}  # UNKNOWN_TOPIC_OR_PARTITION
    refreshes = [e for e in events if e["kind"] == "send" and e["node"] == "k1"
                 and e.get("msg") == "Metadata" and e["t"] >= after]
    assert len(refreshes) > 10, "it keeps asking for the partition's metadata"
