"""Model bugs the self-test's search of the correct model found on the KRaft base of
`broker_applies_uncommitted`, each posed as the search drew it (the base, its planted bug
removed, with the counterexample's fault steps and seed)."""

from __future__ import annotations

import re

from scenarios.schema import parse_scenario
from tests.conftest import scenario_path


def _run(faults: str, seed: int, base: str = "broker_applies_uncommitted") -> dict:
    """The self-test base `base` with no planted bug and `faults` for its own, at `seed`."""
    from epochsim.runner import run_scenario
    text = open(scenario_path(f"selftest/{base}")).read()
    text = re.sub(r'mutant = "[a-z_]+"', 'mutant = ""', text)
    text = text[:text.index("[[faults]]")] if "[[faults]]" in text else text
    text = re.sub(r'expect = "violation:[a-z_]+"', 'expect = "pass"', text)
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
    """b1 applies every metadata batch 400 ms late, so for a while it leads the partition in
    the others' metadata but not in its own: it answers the consumer's ListOffsets
    UNKNOWN_TOPIC_OR_PARTITION and its Metadata without the partition. The position keeps its
    last leader (2.6+), so `fetch` asked for no metadata, and the reset, which reads the
    metadata's current leader, waited for metadata nobody asked for: the consumer never read a
    record. It now asks, as `groupListOffsetRequests` does. (Found with b1 restarted and cut
    from the quorum leader while the records reached each broker one by one; with a
    controller's records in one batch, a slow broker is what lags now.)"""
    faults = """
[[faults]]
at_ms = 0
action = "slow_metadata"
target = "b1"
delay_ms = 400
"""
    result = _run(faults, 1)
    assert "consume_stalled_after_heal" not in result["violated"], result["violations"][:2]
    events = [e for e in result["_events"] if e["node"] == "k1"]
    unknown = [i for i, e in enumerate(events) if e["kind"] == "client_epoch"
               and e["leader"] == -1 and e.get("dropped")]
    assert unknown, "the consumer's metadata never lost the partition's leader"
    after = events[unknown[0]:]
    assert any(e["kind"] == "send" and e["msg"] == "Metadata" for e in after)
    assert any(e["kind"] == "reset_position" and e["action"] == "reset" for e in after)


def test_an_alter_partition_lost_with_its_controller_goes_to_the_same_node_restarted():
    """A quorum of one: c1 crashes just as b2, leading t-0, sends the AlterPartition that would
    take the restarted b1 back into the ISR; c1 restarts and leads again 1.5 s later. The KRaft
    broker sent unanswered AlterPartitions again only to a controller of another name, so
    nothing went to c1 and t-0 stayed short of b1 to the end (under_replicated_after_heal,
    found by the self-test's correct-model search). It now forgets a dead controller, as
    `NodeToControllerRequestThread` does, and sends them to whichever it learns of next."""
    faults = """
[network]
latency = { dist = "constant", ms = 1.0 }

[[faults]]
at_ms = 2300
action = "crash"
target = "b1"

[[faults]]
at_ms = 2300
action = "restart"
target = "b1"

[[faults]]
at_ms = 3700
action = "crash"
target = "controller"

[[faults]]
at_ms = 3800
action = "restart"
target = "controller"
"""
    result = _run(faults, 1, base="leader_counts_pending_shrink")
    events = result["_events"]
    elected = next(e["t"] for e in events if e["kind"] == "controller_elected"
                   and e["controller_epoch"] == 2)
    assert any(e["kind"] == "send" and e.get("msg") == "AlterPartition" and e["t"] >= elected
               for e in events)
    assert any(e["kind"] == "partition_state" and e["t"] > elected and e["isr"] == [1, 2, 3]
               for e in events)
    assert "under_replicated_after_heal" not in result["violated"]
