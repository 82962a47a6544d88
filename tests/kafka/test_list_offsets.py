"""ListOffsets in whole runs: the consumer resets its position with it (`auto.offset.reset`),
and the broker answers as `Partition.fetchOffsetForTimestamp` does (KIP-320's epoch check,
KIP-207's OFFSET_NOT_AVAILABLE)."""

from __future__ import annotations

import functools

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario, parse_scenario
from sim.kafka import errors as E
from tests.conftest import scenario_path

BASE = """
name = "{name}"
expect = "pass"
seed = 1
[run]
duration_ms = {duration}
settle_ms = 2000
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
acks = "all"
records_per_sec = 500
linger_ms = 5
"""


def _events(text: str, name: str, overrides: dict | None = None) -> list:
    verdict = run_scenario(parse_scenario(text, f"{name}.toml", overrides), 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def _kind(events, kind: str, node: str = "k1") -> list:
    return [e for e in events if e["kind"] == kind and e["node"] == node]


@functools.lru_cache(maxsize=None)
def _stale_leader(fetch_epoch_check: bool) -> list:
    sc = load_scenario(scenario_path("kip320-list-offsets-stale-leader"),
                       {"protocol.fetch_epoch_check": fetch_epoch_check})
    verdict = run_scenario(sc, 1, keep_events=True)
    assert verdict["violated"] == [], verdict["violated"]
    return verdict["_events"]


def test_a_leader_behind_the_consumer_answers_unknown_leader_epoch_until_it_catches_up():
    """KIP-320 (ListOffsets v4): b1 still at epoch 0 refuses a reset that names epoch 2; the
    consumer asks again after retry.backoff.ms until b1's LeaderAndIsr arrives, then resets
    to the HW of b1's epoch 2."""
    events = _stale_leader(True)
    resets = _kind(events, "reset_position")
    refused = [r for r in resets if r["error"]]
    assert refused and {(r["error"], r["leader_epoch"], r["action"]) for r in refused} == \
        {(E.UNKNOWN_LEADER_EPOCH, 2, "retry")}
    done = resets[-1]
    assert (done["error"], done["action"], done["offset_epoch"]) == (E.NONE, "reset", 2), done
    became = next(e for e in events if e["kind"] == "replica_state" and e["node"] == "b1"
                  and e["leader_epoch"] == 2)
    assert done["t"] > became["t"] > refused[-1]["t"]
    assert done["position"] == done["offset"] > 0


def test_without_the_epoch_check_the_stale_leader_answers_at_once():
    """Before KIP-320 (fetch_epoch_check off) b1 answers from its epoch-0 state, before it has
    heard of epochs 1 and 2, and names no epoch."""
    resets = _kind(_stale_leader(False), "reset_position")
    first = resets[0]
    assert (first["error"], first["action"], first["offset_epoch"]) == (E.NONE, "reset", -1)
    assert first["t"] < 2_100_000


def test_the_consumer_starts_with_a_reset_to_the_log_start():
    """No committed offsets: the first position of an `earliest` consumer comes from
    ListOffsets EARLIEST, so a log
    whose start retention moved is read from there, with no OFFSET_OUT_OF_RANGE first."""
    text = BASE.format(name="start", duration=4000, profile="3.7") + """
[[consumers]]
name = "k1"
topic = "t"
start_ms = 1500
auto_offset_reset = "earliest"
[[faults]]
at_ms = 1000
action = "retention"
target = "t-0"
log_start_offset = 100
"""
    events = _events(text, "start")
    resets = _kind(events, "reset_position")
    assert [(r["timestamp"], r["error"], r["offset"]) for r in resets] == [(-2, E.NONE, 100)]
    assert _kind(events, "consume")[0]["offset"] == 100
    assert not _kind(events, "fetch_error")


def test_out_of_range_resets_with_list_offsets():
    """OFFSET_OUT_OF_RANGE (`handleOffsetOutOfRange`): the position waits for a reset, and a
    ListOffsets EARLIEST moves it to the leader's log start, which retention moved past it
    while the consumer was cut off (an `earliest` consumer)."""
    text = BASE.format(name="oor", duration=8000, profile="3.7") + """
[[consumers]]
name = "k1"
topic = "t"
auto_offset_reset = "earliest"
[[faults]]
at_ms = 1000
action = "isolate"
target = "k1"
[[faults]]
at_ms = 2000
action = "retention"
target = "t-0"
log_start_offset = 900
[[faults]]
at_ms = 3000
action = "heal"
"""
    events = _events(text, "oor")
    oor = next(e for e in _kind(events, "fetch_error") if e["error"] == E.OFFSET_OUT_OF_RANGE)
    assert oor["action"] == "reset" and oor["position"] < 900
    reset = next(r for r in _kind(events, "reset_position") if r["seq"] > oor["seq"])
    assert (reset["timestamp"], reset["offset"], reset["position"]) == (-2, 900, 900)
    assert next(c for c in _kind(events, "consume") if c["seq"] > reset["seq"])["offset"] == 900


def _lagging_hw(profile: str, **overrides) -> list:
    """A latest reset just as leadership moves to b2 under load: the new leader's HW trails
    the start of its epoch until its followers have fetched up to it, which their Fetches,
    held 300 ms, make it do for a while."""
    text = BASE.format(name="lagging-hw", duration=5000, profile=profile) + """
[[consumers]]
name = "k1"
topic = "t"
start_ms = 2000
auto_offset_reset = "latest"
[[faults]]
at_ms = 2000
action = "rule"
rule = "delay"
kind = "Fetch"
dst = "b2"
delay_ms = 300
duration_ms = 100
[[faults]]
at_ms = 2000
action = "move_leader"
target = "t-0"
to = "b2"
"""
    return _events(text, "lagging-hw", overrides)


def test_a_new_leader_whose_hw_lags_its_epoch_start_answers_offset_not_available():
    """KIP-207 (2.2+): the reset is refused with OFFSET_NOT_AVAILABLE and tried again until the
    HW reaches the epoch's start; the offset it gets is then at least that start."""
    events = _lagging_hw("3.7")
    resets = _kind(events, "reset_position")
    refused = [r for r in resets if r["error"] == E.OFFSET_NOT_AVAILABLE]
    assert refused and all(r["action"] == "retry" for r in refused)
    assert resets[-1]["error"] == E.NONE and resets[-1]["broker"] == 2
    assert resets[-1]["offset"] >= _epoch_start(events)


def _epoch_start(events) -> int:
    """The offset b2's epoch 1 starts at: the log end it had when it became leader."""
    became = next(e for e in events if e["kind"] == "replica_state" and e["node"] == "b2"
                  and e["role"] == "leader")
    return max(row[2] + row[3] for ev in events if ev["kind"] == "replicate"
               and ev["node"] == "b2" and ev["t"] <= became["t"] for row in ev["batches"])


def test_before_kip_207_the_lagging_hw_is_answered():
    """Without KIP-207 the lagging HW is the answer: below the offsets the old leader had
    already committed, so a latest reset goes back across the leader change."""
    events = _lagging_hw("3.7", **{"protocol.list_offsets_hw_lag_error": False})
    resets = _kind(events, "reset_position")
    assert [(r["error"], r["action"]) for r in resets] == [(E.NONE, "reset")]
    assert resets[0]["offset"] < _epoch_start(events)
