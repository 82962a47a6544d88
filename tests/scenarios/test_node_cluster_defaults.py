"""A broker on another release than the run's takes its own release's default for the
[cluster] options it reads from its own configuration (`sim.kafka.defaults.NODE_CLUSTER`),
where the scenario leaves them out: mid-upgrade across 2.5 (KIP-537), a 2.4 broker's ISR lag
limit is 10 s and its ZooKeeper session 6 s while a 2.5 broker's are 30 s and 18 s."""

from __future__ import annotations

from scenarios.schema import parse_scenario
from scenarios.writer import scenario_to_toml
from sim.kafka.options import Options
from tests.kafka import build_cluster

MIXED = """
name = "mixed"
expect = "pass"
[run]
duration_ms = {duration}
[protocol]
profile = "2.5"
inter_broker_protocol = "2.4"
[protocol.brokers]
b1 = "2.4"
[cluster]
brokers = 3
{cluster}
[[topics]]
name = "t"
partitions = 2
assignment = [[1, 2, 3], [2, 1, 3]]
[[producers]]
topic = "t"
acks = 1
{faults}
"""


def _text(cluster: str = "", faults: str = "", duration: int = 8000) -> str:
    return MIXED.format(cluster=cluster, faults=faults, duration=duration)


def _scenario(cluster: str = "", faults: str = ""):
    return parse_scenario(_text(cluster, faults), "mixed.toml")


def _brokers(sc):
    return build_cluster(scenario_to_toml(sc))[0].brokers


def test_a_broker_on_an_older_release_takes_its_own_defaults():
    b = _brokers(_scenario())
    assert (b[1].cluster.replica_lag_time_max_ms, b[1].cluster.broker_session_timeout_ms) == \
        (10000, 6000)
    assert (b[2].cluster.replica_lag_time_max_ms, b[2].cluster.broker_session_timeout_ms) == \
        (30000, 18000)
    assert b[1].cluster.brokers == 3  # the rest is the run's


def test_a_written_value_serves_every_broker():
    b = _brokers(_scenario("replica_lag_time_max_ms = 20000"))
    assert b[1].cluster.replica_lag_time_max_ms == b[2].cluster.replica_lag_time_max_ms == 20000
    assert b[1].cluster.broker_session_timeout_ms == 6000


def test_each_broker_acts_on_its_own_release_defaults():
    """b3 is cut off at 1 s. By 17 s the 2.4 leader b1 has dropped it from t-0's ISR (lag
    limit 10 s) while the 2.5 leader b2 still counts it in t-1's (30 s), and ZooKeeper still
    holds b3's 18 s session; each session keeps the timeout its broker asked for."""
    faults = '[[faults]]\nat_ms = 1000\naction = "isolate"\ntarget = "b3"\n'
    cluster, _trace = build_cluster(_text(faults=faults, duration=17000))
    cluster.run()
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    assert 3 not in b1.partitions["t-0"].isr
    assert 3 in b2.partitions["t-1"].isr
    assert [cluster.store.brokers[b].timeout_us for b in (1, 2, 3)] == \
        [6_000_000, 18_000_000, 18_000_000]


def test_the_defaulted_options_survive_the_header_and_a_written_scenario():
    sc = _scenario()
    assert "replica_lag_time_max_ms" in sc.options.cluster_defaulted
    assert Options.from_json(sc.options.to_json()) == sc.options
    again = parse_scenario(scenario_to_toml(sc), "again.toml")
    assert again.options == sc.options
    assert _brokers(again)[1].cluster.replica_lag_time_max_ms == 10000


def test_an_upgraded_broker_runs_its_new_release_defaults():
    sc = _scenario()
    b1 = _brokers(sc)[1]
    assert b1.cluster.replica_lag_time_max_ms == 10000
    b1.run_profile("2.5", sc.options.protocol_on("2.5"))
    assert b1.cluster.replica_lag_time_max_ms == 30000
