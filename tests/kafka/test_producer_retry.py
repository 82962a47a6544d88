"""The producer's retries in whole runs (ref §2.5, §3.2); the decision itself is a rule
(`complete_batch`, tested in tests/kafka/rules/test_clients.py)."""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario

SCENARIO = """
name = "retry"
expect = "pass"
[[topics]]
name = "t"
[[producers]]
topic = "t"
"""


SLOW_ANSWERS = """
name = "inflight-expiry"
expect = "pass"
seed = 1
[run]
duration_ms = 6000
settle_ms = 2000
[protocol]
profile = "3.7"
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 20
linger_ms = 1
request_timeout_ms = 1000
delivery_timeout_ms = 1501
[[faults]]          # every answer takes longer than the request timeout for 2 s
at_ms = 1000
action = "rule"
rule = "delay"
kind = "ProduceResponse"
src = "b1"
delay_ms = 1200
duration_ms = 2000
"""


def test_a_batch_in_flight_expires_at_its_delivery_timeout():
    """KIP-91 (`Sender.getExpiredInflightBatches`): a batch whose retry is still in flight fails
    with DELIVERY_TIMEOUT when delivery.timeout.ms passes, not when its answer comes back; the
    late answer is not the application's any more, so no batch is acknowledged or failed later
    than its delivery timeout (plus one linger tick)."""
    events = run_scenario(parse_scenario(SLOW_ANSWERS, "slow.toml"), 1, keep_events=True)["_events"]
    created = {e["bid"]: e["created_us"] for e in events if e["kind"] == "batch"}
    ended = [(e["t"] - created[e["bid"]], e["kind"]) for e in events
             if e["kind"] in ("ack", "produce_failed")]
    assert ("produce_failed" in {kind for _, kind in ended}) and ("ack" in {k for _, k in ended})
    assert max(age for age, _ in ended) <= (1501 + 1) * 1000
    appended = {b["bid"] for e in events if e["kind"] == "append" for b in e["batches"]}
    failed = {e["bid"] for e in events if e["kind"] == "produce_failed"}
    assert failed & appended  # written, yet reported as timed out: the application cannot know
