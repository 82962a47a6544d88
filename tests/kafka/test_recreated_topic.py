"""A topic deleted and recreated under the same name (ref §4 row 10): its partitions start
again at leader epoch 0. The Metadata answers of the deletion drop the topic from the
producer's cache but not its last seen epochs, so up to 2.6 the producer rejects the new
metadata (an epoch older than the last it saw) and, with nothing cached, hangs whichever broker
leads the new topic (KAFKA-12257, KAFKA-13488: `client_accepts_recreated_topic`); 3.7 takes the
topic id its cache no longer holds as new. An epoch the producer knew of the old incarnation
makes no broker a stale leader."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

# Leadership of t-0 moves `moves` times (b1 -> b2 -> b3 -> b1 ...), then t is deleted at 5 s
# and recreated at 8 s, led again by b1 at epoch 0.
SCENARIO = """
name = "recreated"
expect = "pass"
[run]
duration_ms = 30000
settle_ms = 5000
[protocol]
profile = "{profile}"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 100
delivery_timeout_ms = 10000
request_timeout_ms = 3000
{moves}
[[faults]]
at_ms = 5000
action = "delete_topic"
target = "t"
[[faults]]
at_ms = 8000
action = "create_topic"
name = "t"
"""
MOVE = '[[faults]]\nat_ms = {at}\naction = "move_leader"\ntarget = "t-0"\n'


def run(profile: str, moves: int, violated: tuple = ()) -> tuple[dict, list[dict]]:
    text = SCENARIO.format(profile=profile,
                           moves="".join(MOVE.format(at=1000 * (i + 1)) for i in range(moves)))
    verdict = run_scenario(parse_scenario(text, "r.toml"), 1, keep_events=True)
    assert verdict["violated"] == list(violated), verdict["violated"]
    return verdict, verdict["_events"]


def acked_after(events: list[dict], t_us: int) -> int:
    return sum(1 for e in events if e["kind"] == "ack" and e["t"] > t_us)


def test_a_2_6_producer_hangs_when_the_new_leader_is_another_broker():
    # two moves: the producer knew b3 at epoch 2; the new topic's leader is b1 at epoch 0
    # the hang is a liveness violation: batches created long after the topic came back, to a
    # partition whose replicas are all up, expire unacknowledged
    verdict, events = run("2.6", moves=2, violated=("produce_stalled_after_heal",))
    assert "although replicas [1, 2, 3] are all up" in verdict["violations"][0]["message"]
    rejected = [e for e in events if e["kind"] == "metadata_rejected"]
    assert rejected and {e["known_epoch"] for e in rejected} == {2}
    assert acked_after(events, 8_500_000) == 0
    # it keeps failing: batches expire one after the other (fuller ones now, as records join
    # a partition's unsent batch up to batch.size while it hangs)
    failed = [e["t"] for e in events if e["kind"] == "produce_failed"]
    assert len(failed) >= 10 and max(failed) > 15_000_000
    _, events = run("3.7", moves=2)  # a changed topic id is accepted: the producer recovers
    assert acked_after(events, 15_000_000) > 1000


def test_a_2_6_producer_that_saw_the_deletion_hangs_whichever_broker_leads_the_new_topic():
    """Three moves: b1 led the old topic last (epoch 3) and leads the new one (epoch 0). The
    answers during the deletion no longer list t, so `Metadata.handleMetadataResponse` builds a
    cache without t-0 while `lastSeenLeaderEpochs` keeps 3; the new topic's epoch 0 is then
    rejected with nothing cached to fall back on, and the producer knows no leader at all.
    (A model whose cache kept unlisted partitions went on sending to b1 and never hung.)"""
    verdict, events = run("2.6", moves=3, violated=("produce_stalled_after_heal",))
    dropped = [e for e in events if e["kind"] == "client_epoch" and e.get("dropped")]
    assert [(e["leader"], e["leader_epoch"]) for e in dropped] == [(-1, 3)]
    assert 5_000_000 <= dropped[0]["t"] < 8_000_000  # while t was deleted
    rejected = [e for e in events if e["kind"] == "metadata_rejected"]
    assert rejected and {e["known_epoch"] for e in rejected} == {3}
    assert not [e for e in events if e["kind"] == "append" and e["t"] > 8_000_000]
    assert acked_after(events, 8_500_000) == 0
    _, events = run("3.7", moves=3)  # the topic id the cache lost counts as new
    assert acked_after(events, 15_000_000) > 1000


# Metadata answers to p1 are lost from 4.5 s to 8.5 s: it learns nothing of the deletion
BLIND = """
[[faults]]
at_ms = 4500
action = "rule"
rule = "drop"
kind = "MetadataResponse"
dst = "p1"
duration_ms = 4000
"""


def test_an_epoch_of_the_deleted_topic_makes_no_stale_leader():
    # three moves, and a producer that never saw the deletion: it keeps t-0 at (b1, epoch 3) of
    # the old topic and sends there, and b1, now leading the new topic at epoch 0, appends
    # (Produce names topics, not topic ids); the new topic's metadata is rejected later and the
    # cached entry kept ("use the previously cached info")
    text = SCENARIO.format(profile="2.6", moves="".join(MOVE.format(at=1000 * (i + 1))
                                                        for i in range(3))) + BLIND
    verdict = run_scenario(parse_scenario(text, "r.toml"), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    events = verdict["_events"]
    batches = [b for e in events if e["kind"] == "append" for b in e["batches"]
               if b["topic_id"] == 2]
    assert batches and all(b["sender_topic_id"] == 1 and b["sender_epoch"] == 3
                           and b["leader_epoch"] == 0 for b in batches)
    assert not [e for e in events if e["kind"] == "client_epoch" and e.get("dropped")]
    assert [e for e in events if e["kind"] == "metadata_rejected"]
    assert acked_after(events, 15_000_000) > 1000  # no hang: the cached leader is right


def test_a_consumer_of_a_recreated_topic_starts_it_over():
    """A consumer cut off while t is deleted and recreated asks the new leader about the epoch
    of the last batch it read (2), which the new incarnation never had: the answer is
    UNDEFINED ("The requested epoch is larger than any known epoch",
    `LeaderEpochFileCache.endOffsetFor`), and the consumer resets to the log start with a
    ListOffsets round trip (`requestOffsetReset`, auto.offset.reset = earliest). Answering
    with the latest epoch's end instead let it go on at its old position, past records of the
    new topic it never read (`consumer_skipped_record`)."""
    moves = MOVE.format(at=1000) + MOVE.format(at=2000)
    text = SCENARIO.format(profile="3.7", moves=moves).replace("duration_ms = 30000", "duration_ms = 15000") + """
[[consumers]]
name = "k1"
topic = "t"
fetch_max_wait_ms = 100
metadata_max_age_ms = 1000
auto_offset_reset = "earliest"
[[faults]]
at_ms = 4000
action = "isolate"
target = "k1"
[[faults]]
at_ms = 12000
action = "heal"
"""
    verdict = run_scenario(parse_scenario(text, "recreated-consumer.toml"), 1, keep_events=True)
    last = [e for e in verdict["_events"] if e["kind"] == "validate_position"][-1]
    assert (last["offset_epoch"], last["end_epoch"], last["end_offset"]) == (2, -1, -1), last
    assert last["action"] == "reset", last
    reset = next(e for e in verdict["_events"]
                 if e["kind"] == "reset_position" and e["seq"] > last["seq"])
    assert (reset["timestamp"], reset["action"], reset["position"]) == (-2, "reset", 0), reset
    assert verdict["violated"] == [], verdict["violated"]
