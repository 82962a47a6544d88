"""Property test: generated fault schedules never break a safety invariant on `proposed`."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sim.core.faults import FaultStep

SCENARIO = """
expect = "pass"
[run]
duration_ms = 9000
settle_ms = 3000
[cluster]
brokers = 3
min_insync_replicas = 2
[[topics]]
name = "t"
partitions = 2
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 150
linger_ms = 25
metadata_max_age_ms = 1000
[[producers]]
topic = "t"
acks = 1
records_per_sec = 100
linger_ms = 25
metadata_max_age_ms = 700
"""
BROKERS = ["b1", "b2", "b3"]
KINDS = ["LeaderAndIsr", "UpdateMetadata", "StopReplica", "Fetch"]
SAFETY = None


def _safety_names():
    from invariants.registry import INVARIANTS
    return [n for n, cls in INVARIANTS.items() if cls.rule == "safety"]


@st.composite
def fault(draw):
    at = draw(st.integers(500, 5500)) * 1000
    kind = draw(st.sampled_from(["crash", "move", "delay", "reassign", "isolate", "controller"]))
    broker = draw(st.sampled_from(BROKERS))
    tp = draw(st.sampled_from(["t-0", "t-1"]))
    back = at + draw(st.integers(200, 2500)) * 1000
    if kind == "crash":
        return [FaultStep(at, "crash", broker), FaultStep(back, "restart", broker)]
    if kind == "isolate":
        return [FaultStep(at, "isolate", broker), FaultStep(back, "heal")]
    if kind == "controller":
        return [FaultStep(at, "crash", "controller"), FaultStep(back, "restart", "controller")]
    if kind == "move":
        return [FaultStep(at, "move_leader", tp, {"to": "next"})]
    if kind == "reassign":
        replicas = draw(st.permutations([1, 2, 3]))
        return [FaultStep(at, "reassign", tp, {"replicas": list(replicas[:draw(st.integers(2, 3))])})]
    params = {"rule": "delay", "kind": draw(st.sampled_from(KINDS)), "dst": broker,
              "delay_ms": draw(st.integers(50, 2000)), "duration_ms": draw(st.integers(200, 3000))}
    return [FaultStep(at, "rule", None, params)]


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],  # a failure is reported as found; no long shrink
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fault(), min_size=1, max_size=5), st.integers(0, 1000))
def test_generated_schedules_hold_on_proposed(steps, seed):
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    global SAFETY
    SAFETY = SAFETY or _safety_names()
    sc = parse_scenario(SCENARIO)
    schedule = [s for group in steps for s in group]
    verdict = run_scenario(sc, seed, schedule=schedule)
    broken = [v for v in verdict["violations"] if v["invariant"] in SAFETY]
    assert not broken, (schedule, broken[:2])
