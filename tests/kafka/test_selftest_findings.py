"""Model bugs the self-test's search of the correct model found on the KRaft base of
`broker_applies_uncommitted`, each posed as the search drew it (the base, its planted bug
removed, with the counterexample's fault steps and seed)."""

from __future__ import annotations

from scenarios.schema import parse_scenario
from tests.conftest import scenario_path


def _run(faults: str, seed: int) -> dict:
    from epochsim.runner import run_scenario
    text = open(scenario_path("selftest/broker_applies_uncommitted")).read()
    text = text.replace('mutant = "broker_applies_uncommitted"', 'mutant = ""')
    text = text[:text.index("[[faults]]")] if "[[faults]]" in text else text
    text = text.replace('expect = "violation:metadata_applied_in_order"', 'expect = "pass"')
    return run_scenario(parse_scenario(text + faults, "inline.toml"), seed, keep_events=True)


def test_a_peer_cut_off_when_a_broker_died_learns_of_it_at_the_heal():
    """b1 is cut off, crashes and is healed at once, while the consumer's Fetch waits there.
    The close's news (the FIN its OS retransmits) reached nobody while the link was cut, and
    the model dropped it: the consumer waited out its 30 s request timeout and fell behind
    (consume_stalled_after_heal). Under `stall` it now arrives once the link heals."""
    faults = """
[[faults]]
at_ms = 3000
action = "isolate"
target = "b1"
cut = "e3"

[[faults]]
at_ms = 3000
action = "crash"
target = "b1"

[[faults]]
at_ms = 3000
action = "heal"
target = "b1"
cut = "e3"

[[faults]]
at_ms = 6000
action = "restart"
target = "b1"
"""
    result = _run(faults, 1)
    assert "consume_stalled_after_heal" not in result["violated"], result["violations"][:2]
    told = [e for e in result["_events"] if e["kind"] == "disconnect" and e["node"] == "k1"
            and e["peer"] == "b1" and 3_000_000 <= e["t"] < 3_100_000]
    assert told


def test_a_consumer_resetting_its_position_asks_for_metadata_when_the_leader_is_unknown():
    """b1 restarts with c1 cut from it, so its metadata lags: it answers the consumer's
    ListOffsets UNKNOWN_TOPIC_OR_PARTITION and its Metadata without the partition. The
    position keeps its last leader (2.6+), so `fetch` asked for no metadata, and the reset,
    which reads the metadata's current leader, waited for metadata nobody asked for: the
    consumer never read a record. It now asks, as `groupListOffsetRequests` does."""
    faults = """
[[faults]]
at_ms = 0
action = "crash"
target = "b1"

[[faults]]
at_ms = 100
action = "restart"
target = "b1"

[[faults]]
at_ms = 100
action = "block"
target = "c1"
dst = "b1"
cut = "e2"

[[faults]]
at_ms = 300
action = "heal"
target = "c1"
cut = "e2"
"""
    result = _run(faults, 150)
    assert "consume_stalled_after_heal" not in result["violated"], result["violations"][:2]
    events = [e for e in result["_events"] if e["node"] == "k1"]
    unknown = [i for i, e in enumerate(events) if e["kind"] == "client_epoch"
               and e["leader"] == -1 and e.get("dropped")]
    assert unknown, "the consumer's metadata never lost the partition's leader"
    after = events[unknown[0]:]
    assert any(e["kind"] == "send" and e["msg"] == "Metadata" for e in after)
    assert any(e["kind"] == "reset_position" and e["action"] == "reset" for e in after)
