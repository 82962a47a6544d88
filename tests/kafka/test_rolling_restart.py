"""A rolling restart runs one broker at a time, each stopping once the controller lets it go,
and the next only once the cluster is whole again; `controlled_shutdown` with
`stop = "when_allowed"` stops when the controller lets it, in both modes."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, parse_scenario
from sim.kafka import errors as E

BASE = """
name = "rolling"
expect = "pass"
[run]
duration_ms = {duration}
settle_ms = 1000
[cluster]
brokers = 3
{mode}
[[topics]]
name = "t"
partitions = 3
replication_factor = 3
[[producers]]
topic = "t"
records_per_sec = 200
"""
KRAFT = 'mode = "kraft"\ncontrollers = 3'
ROLLING = ('[[faults]]\nat_ms = {at}\naction = "rolling_restart"\ndown_ms = 200\n'
           'check_ms = 100\n{extra}')


def events(text: str) -> list[dict]:
    verdict = run_scenario(parse_scenario(text, "r.toml"), 1, keep_events=True)
    return verdict["_events"]


def lifecycle(evs: list[dict]) -> list[tuple]:
    """(what, broker) in trace order: the rolling restart's parts and each broker's stop and
    start."""
    out = []
    for e in evs:
        if e["kind"] == "fault" and e.get("part_of") == "rolling_restart":
            out.append((e["action"], e["target"]))
        elif e["kind"] in ("crash", "restart") and e["node"].startswith("b"):
            out.append((e["kind"], e["node"]))
    return out


def one_at_a_time(order: list[str]) -> list[tuple]:
    return [row for b in order for row in (("controlled_shutdown", b), ("crash", b),
                                           ("restart", b), ("restart", b))]


@pytest.mark.parametrize("mode, at", [("", 1000), (KRAFT, 5000)])
def test_each_broker_stops_and_starts_before_the_next_begins(mode, at):
    text = BASE.format(duration=30000, mode=mode) + ROLLING.format(at=at, extra="")
    assert lifecycle(events(text)) == one_at_a_time(["b1", "b2", "b3"])


def test_kraft_broker_stops_only_when_a_heartbeat_answer_says_should_shut_down():
    text = BASE.format(duration=30000, mode=KRAFT) + ROLLING.format(at=5000, extra="")
    evs = events(text)
    stops = [e for e in evs if e["kind"] == "crash" and e["node"].startswith("b")]
    for stop in stops:
        told = [e for e in evs if e["kind"] == "send" and e.get("should_shutdown")
                and e["dst"] == stop["node"] and e["t"] <= stop["t"]]
        assert told, f"{stop['node']} stopped before the controller let it"
    refused = [e for e in evs if e["kind"] == "send" and e.get("msg") == "BrokerRegistrationResponse"
               and e.get("error") == E.DUPLICATE_BROKER_REGISTRATION]
    assert not refused  # a broker the controller let go registers again at once


def test_the_next_broker_waits_for_the_cluster_to_be_whole():
    # b3 crashes for good: its partitions stay under-replicated, so after b1 the operator
    # never sees the cluster whole and b2 is left alone
    crash = '[[faults]]\nat_ms = 500\naction = "crash"\ntarget = "b3"\n'
    text = (BASE.format(duration=8000, mode="") + crash
            + ROLLING.format(at=1000, extra='brokers = ["b1", "b2"]\n'))
    rows = lifecycle(events(text))
    assert rows[0] == ("crash", "b3")
    assert rows[1:] == one_at_a_time(["b1"])


def test_zk_shutdown_without_a_controller_retries_then_stops_anyway():
    # no controller answers: KafkaServer.controlledShutdown makes controlled.shutdown.max.retries
    # (3) attempts, 5 s apart, then stops
    stop = ('[[faults]]\nat_ms = 500\naction = "crash"\ntarget = "c1"\n'
            '[[faults]]\nat_ms = 1000\naction = "controlled_shutdown"\ntarget = "b1"\n'
            'stop = "when_allowed"\n')
    evs = events(BASE.format(duration=20000, mode="controllers = 1") + stop)
    stopped = [e["t"] for e in evs if e["kind"] == "crash" and e["node"] == "b1"]
    assert stopped == [1_000_000 + 2 * 5_000_000 + 1_000]


def test_zk_shutdown_when_allowed_stops_after_the_answer():
    stop = '[[faults]]\nat_ms = 1000\naction = "controlled_shutdown"\ntarget = "b1"\nstop = "when_allowed"\n'
    evs = events(BASE.format(duration=5000, mode="") + stop)
    assert [e["t"] for e in evs if e["kind"] == "crash" and e["node"] == "b1"] == [1_001_000]


@pytest.mark.parametrize("extra, key", [
    ('brokers = ["b1", "b9"]\n', "brokers[1]"),
    ('brokers = ["b1", "b1"]\n', "brokers[1]"),
    ('brokers = []\n', "brokers"),
    ('down_ms = -1\n', "down_ms"),
    ('check_ms = 0\n', "check_ms"),
])
def test_bad_rolling_restart_params_are_named(extra, key):
    text = BASE.format(duration=5000, mode="") + ROLLING.format(at=1000, extra="").replace(
        "down_ms = 200\ncheck_ms = 100\n", "") + extra
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "r.toml")
    assert f"faults[0].{key}" in str(err.value)


def test_bad_stop_mode_is_named():
    text = BASE.format(duration=5000, mode="") + (
        '[[faults]]\nat_ms = 1000\naction = "controlled_shutdown"\ntarget = "b1"\nstop = "later"\n')
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "r.toml")
    assert "faults[0].stop" in str(err.value)
