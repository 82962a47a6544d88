"""min.insync.replicas with acks=all: a batch is refused before it is appended while the ISR is
too small (NOT_ENOUGH_REPLICAS), and before 3.7 a batch appended before the ISR shrank is
answered NOT_ENOUGH_REPLICAS_AFTER_APPEND when the HW covers it, never acknowledged
(`Partition.checkEnoughReplicasReachOffset`). Both are retriable: the producer's retry is
acknowledged once the ISR is large enough again. From 3.7 (KAFKA-15583) the HW does not move
while the ISR is too small, so such a batch waits instead."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

# b1 leads t-0 (RF 3, min.insync.replicas 2). Both followers crash at 2 s, while batches wait
# for them; b1 shrinks the ISR to itself after replica.lag.time.max.ms and its HW then covers
# the waiting batches. b2 comes back at 6 s, after ZooKeeper expired its session (before, its
# old registration would fail the start).
SCENARIO = """
name = "min-insync"
expect = "pass"
[run]
duration_ms = 10000
settle_ms = 2000
[protocol]
profile = "{profile}"
[cluster]
min_insync_replicas = 2
replica_lag_time_max_ms = 2000
broker_session_timeout_ms = 3000
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 200
linger_ms = 10
retries = 2147483647  # retried on every profile (0.10.2's default is 0)
[[faults]]
at_ms = 2000
action = "crash"
target = "b2"
[[faults]]
at_ms = 2000
action = "crash"
target = "b3"
[[faults]]
at_ms = 6000
action = "restart"
target = "b2"
"""


def events_of(profile: str) -> list[dict]:
    verdict = run_scenario(parse_scenario(SCENARIO.format(profile=profile), "m.toml"), 1,
                           keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def isr_at(events: list[dict], t_us: int) -> list[int]:
    """The controller's ISR of t-0 at `t_us`."""
    return [e["isr"] for e in events if e["kind"] == "partition_state" and e["t"] <= t_us][-1]


def test_batches_committed_below_min_isr_are_not_acknowledged():
    for profile in ("0.10.2", "3.4.1"):
        events = events_of(profile)
        errors = [e for e in events if e["kind"] == "produce_error"]
        after = [e for e in errors if e["error"] == 20]  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert after, profile
        assert any(e["error"] == 19 for e in errors), profile  # NOT_ENOUGH_REPLICAS
        acks = {e["bid"]: e for e in events if e["kind"] == "ack"}
        for e in after:
            # answered when the shrunken ISR let the HW cover it, then retried and
            # acknowledged once b2 was back in the ISR
            assert isr_at(events, e["t"]) == [1], profile
            assert e["bid"] in acks and len(isr_at(events, acks[e["bid"]]["t"])) >= 2, profile
        # no batch is acknowledged while the ISR is below min.insync.replicas (the leader's
        # view trails the controller's by a request at most)
        late = [a for a in acks.values() if len(isr_at(events, a["t"] - 10_000)) < 2
                and len(isr_at(events, a["t"])) < 2]
        assert late == [], (profile, late[:2])


def test_from_3_7_the_hw_waits_while_the_isr_is_below_min_isr():
    """KAFKA-15583 (3.7): `maybeIncrementLeaderHW` returns early while the partition is under
    min ISR, so the batches parked when the followers died are neither answered
    NOT_ENOUGH_REPLICAS_AFTER_APPEND nor visible: the HW stays where it was until b2 is back in
    the ISR, and they are acknowledged then."""
    events = events_of("3.7")
    errors = {e["error"] for e in events if e["kind"] == "produce_error"}
    assert 20 not in errors, errors
    shrunk = next(e["t"] for e in events if e["kind"] == "partition_state" and e["isr"] == [1])
    grown = next(e["t"] for e in events if e["kind"] == "partition_state" and e["t"] > shrunk
                 and len(e["isr"]) >= 2)
    moves = [e for e in events if e["kind"] == "hw" and e["node"] == "b1"
             and shrunk <= e["t"] < grown]
    assert moves == [], moves[:2]
    acks = [e["t"] for e in events if e["kind"] == "ack"]
    assert not [t for t in acks if shrunk + 10_000 < t < grown] and max(acks) > grown


def test_from_3_7_min_isr_counts_at_most_the_replicas():
    """`effectiveMinIsr` (3.7): min.insync.replicas = 2 on a topic of one replica no longer
    refuses every acks=all write with NOT_ENOUGH_REPLICAS."""
    text = SCENARIO.split("[[faults]]")[0].replace("assignment = [[1, 2, 3]]", "assignment = [[1]]")
    for profile, refused in (("3.4.1", True), ("3.7", False)):
        verdict = run_scenario(parse_scenario(text.format(profile=profile), "rf1.toml"), 1,
                               keep_events=True)
        errors = {e["error"] for e in verdict["_events"] if e["kind"] == "produce_error"}
        assert (19 in errors) is refused and (verdict["metrics"]["acked"] > 0) is not refused, \
            (profile, errors)
