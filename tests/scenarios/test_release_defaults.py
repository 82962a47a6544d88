"""Kafka's defaults that changed between releases (`sim.kafka.defaults`): what an option left
out of a scenario resolves to on each profile, that a written value wins, that an explicitly
idempotent producer gets Kafka's overrides, that a client follows its own profile, and that
the model acts on the resolved value (a ZooKeeper-mode broker restarted within its old
session fails to start on 2.5, not on 2.4)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.defaults import MAX_RETRIES, RELEASE_DEFAULTS, release_default
from sim.kafka.modes import ZK, modes
from sim.kafka.profiles import PROFILES

BASE = """
expect = "pass"
[protocol]
profile = "{profile}"
[cluster]
{cluster}
[[topics]]
name = "t"
{topic}
[[producers]]
topic = "t"
{producer}
[[consumers]]
topic = "t"
{consumer}
"""


def options(profile: str, cluster: str = "", topic: str = "", producer: str = "",
            consumer: str = ""):
    text = BASE.format(profile=profile, cluster=cluster, topic=topic, producer=producer,
                       consumer=consumer)
    return parse_scenario(text, "defaults.toml").options


def resolved(o, section: str, key: str):
    record = {"cluster": o.cluster, "topics": o.topics[0], "producers": o.producers[0],
              "consumers": o.consumers[0]}[section]
    return getattr(record, key)


# (section, key, last profile with the old value, first with the new, old, new), as read in
# Kafka's code at those tags
CHANGES = [
    ("cluster", "unclean_leader_election", "0.10.2", "0.11", True, False),
    ("cluster", "zk_session_timeout_ms", "2.4", "2.5", 6000, 18000),
    ("cluster", "broker_session_timeout_ms", "2.4", "2.5", 6000, 18000),
    ("cluster", "replica_lag_time_max_ms", "2.4", "2.5", 10000, 30000),
    ("topics", "message_format", "0.10.2", "0.11", 1, 2),
    ("producers", "acks", "2.8", "3.0", 1, "all"),
    ("producers", "retries", "2.0", "2.1", 0, MAX_RETRIES),
    ("consumers", "request_timeout_ms", "1.1", "2.0", 305_000, 30_000),
]


def test_every_release_default_is_checked_here():
    assert sorted((s, k) for s, k, *_ in CHANGES) == sorted(RELEASE_DEFAULTS)


@pytest.mark.parametrize("section, key, before, after, old, new", CHANGES,
                         ids=[f"{s}.{k}" for s, k, *_ in CHANGES])
def test_a_left_out_option_takes_its_releases_default(section, key, before, after, old, new):
    assert resolved(options(before), section, key) == old
    assert resolved(options(after), section, key) == new
    for profile in PROFILES:  # and every profile takes the table's value
        if ZK in modes(profile)[1]:
            assert resolved(options(profile), section, key) == release_default(
                section, key, profile), profile


def test_a_written_value_wins_over_the_releases_default():
    o = options("3.7", cluster="zk_session_timeout_ms = 6000\nreplica_lag_time_max_ms = 10000",
                producer="acks = 1\nretries = 0", consumer="request_timeout_ms = 1000")
    assert (o.cluster.zk_session_timeout_ms, o.cluster.broker_session_timeout_ms) == (6000, 18000)
    assert o.cluster.replica_lag_time_max_ms == 10000
    assert (o.producers[0].acks, o.producers[0].retries) == (1, 0)
    assert o.consumers[0].request_timeout_ms == 1000
    assert options("0.10.2", cluster="unclean_leader_election = false").cluster \
        .unclean_leader_election is False


def test_kraft_brokers_take_kraft_s_own_session_default():
    o = options("3.7", cluster='mode = "kraft"')
    assert o.cluster.broker_session_timeout_ms == 9000
    assert options("4.1").cluster.broker_session_timeout_ms == 9000  # KRaft only
    assert options("3.7").cluster.broker_session_timeout_ms == 18000


@pytest.mark.parametrize("profile", ["0.11", "2.0", "2.8"])
def test_an_explicitly_idempotent_producer_gets_acks_all_and_unlimited_retries(profile):
    """Kafka's producer overrides an unset acks and retries when idempotence is asked for, so
    `enable_idempotence = true` alone is a valid config on every release that has it."""
    p = options(profile, producer="enable_idempotence = true").producers[0]
    assert (p.acks, p.retries) == ("all", MAX_RETRIES)
    plain = options(profile).producers[0]
    assert plain.acks == 1 and plain.retries == release_default("producers", "retries", profile)


def test_a_client_on_its_own_profile_takes_its_releases_defaults():
    o = options("3.7", producer='profile = "2.8"', consumer='profile = "1.1"')
    assert o.producers[0].acks == 1 and o.consumers[0].request_timeout_ms == 305_000
    assert o.cluster.zk_session_timeout_ms == 18000  # the cluster follows the run's profile


RESTART = """
expect = "pass"
[run]
duration_ms = 12000
settle_ms = 2000
[protocol]
profile = "{profile}"
[[topics]]
name = "t"
[[faults]]
at_ms = 1000
action = "crash"
target = "b2"
[[faults]]
at_ms = 8000
action = "restart"
target = "b2"
"""


@pytest.mark.parametrize("profile, fails", [("2.4", False), ("2.5", True)])
def test_a_broker_restarted_within_its_releases_session_fails_to_start(profile, fails):
    """7 s after the crash: past 2.4's 6 s ZooKeeper session, within 2.5's 18 s (KIP-537),
    where the old session still holds the broker's znode (NODEEXISTS)."""
    verdict = run_scenario(parse_scenario(RESTART.format(profile=profile), "r.toml"), 1,
                           keep_events=True)
    failed = [e for e in verdict["_events"] if e["kind"] == "broker_start_failed"]
    assert bool(failed) is fails


def test_a_real_library_s_producer_takes_the_library_s_acks_default():
    """aiokafka's producer sends with acks=1 unless it is idempotent, whatever the Java
    client's default on the run's release."""
    library = options("3.7", producer='client = "aiokafka"').producers[0]
    assert library.acks == 1
    idempotent = options("3.7", producer='client = "aiokafka"\nenable_idempotence = true')
    assert idempotent.producers[0].acks == "all"
    assert options("3.7", producer='client = "aiokafka"\nacks = "all"').producers[0].acks == "all"
    assert options("3.7").producers[0].acks == "all"


def test_a_written_zookeeper_session_is_the_controllers_too():
    """zookeeper.session.timeout.ms is one config, which the controller (a broker) uses too:
    a ZooKeeper-mode scenario that writes only broker_session_timeout_ms gives the controller
    the same session; KRaft mode has no ZooKeeper session to follow it."""
    o = options("3.7", cluster="broker_session_timeout_ms = 1500")
    assert (o.cluster.broker_session_timeout_ms, o.cluster.zk_session_timeout_ms) == (1500, 1500)
    both = options("3.7", cluster="broker_session_timeout_ms = 1500\nzk_session_timeout_ms = 4000")
    assert both.cluster.zk_session_timeout_ms == 4000
    kraft = options("3.7", cluster='mode = "kraft"\nbroker_session_timeout_ms = 1500')
    assert kraft.cluster.zk_session_timeout_ms == 18000


@pytest.mark.parametrize("profile, written, format_", [
    ("0.10.2", "", 1), ("0.11", "", 2), ("0.10.2", "message_format = 0", 0)])
def test_a_created_topic_takes_its_releases_message_format(profile, written, format_):
    """A `create_topic` step that names no format gets the brokers' default on the run's
    release, as a topic created by a 0.10.2 cluster is written in v1."""
    text = BASE.format(profile=profile, cluster="", topic="", producer="", consumer="")
    text += f'[[faults]]\nat_ms = 10\naction = "create_topic"\nname = "u"\n{written}\n'
    step = parse_scenario(text, "defaults.toml").steps[0]
    assert step.params["message_format"] == format_
