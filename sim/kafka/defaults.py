"""Kafka's defaults by release: the value a config takes when a scenario leaves it out.

Contract:
- `RELEASE_DEFAULTS[(section, key)]` lists (first profile, value) pairs in release order: a
  node on a profile takes the value of the last row at or before its release. Only the
  options whose Kafka default changed between the releases the profiles stand for are listed;
  every other option's default is its field's in `sim.kafka.options`, the same for every
  release. A KRaft-mode value (`KRAFT_DEFAULTS`) replaces the row where the mode has its own.
- `release_default(section, key, profile, kraft=False)` is that value. The cluster's and the
  topics' options follow the run's profile, but a broker on another profile takes its own
  release's default for the options it reads from its own config (`NODE_CLUSTER`,
  `node_cluster_defaults`, through `Options.cluster_on`); a client's follow its own profile.
- `explicit_idempotence_defaults(...)`: an idempotent producer's `acks` and `retries` when
  the scenario leaves them out, as Kafka's producer overrides them.
- `library_defaults(client, given, idempotent)`: what a real client library's producer runs
  with for the options it takes that the scenario leaves out (its own defaults, not the Java
  client's).
Pure data and functions: the scenario loader applies them (`scenarios.schema`), and the trace
header records the values a run used, so a trace replays the same whatever this table says.
"""

from __future__ import annotations

from typing import Any

from sim.kafka.profiles import newer

MAX_RETRIES = 2**31 - 1  # Integer.MAX_VALUE

# Each row read at the release tags on both sides of the change (KafkaConfig.scala's Defaults,
# ProducerConfig.java, ConsumerConfig.java).
RELEASE_DEFAULTS: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {
    # unclean.leader.election.enable: true up to 0.10.2, false from 0.11 (KIP-106)
    ("cluster", "unclean_leader_election"): (("0.10.2", True), ("0.11", False)),
    # zookeeper.session.timeout.ms, which is both the controller's and every broker's ZooKeeper
    # session, and replica.lag.time.max.ms: raised in 2.5 (KIP-537)
    ("cluster", "zk_session_timeout_ms"): (("0.10.2", 6000), ("2.5", 18000)),
    ("cluster", "broker_session_timeout_ms"): (("0.10.2", 6000), ("2.5", 18000)),
    ("cluster", "replica_lag_time_max_ms"): (("0.10.2", 10000), ("2.5", 30000)),
    # log.message.format.version follows the inter-broker protocol: 0.10.2 writes v1, and v2
    # came with 0.11 (KIP-98)
    ("topics", "message_format"): (("0.10.2", 1), ("0.11", 2)),
    # acks: "1" up to 2.8, "all" from 3.0 (KIP-679)
    ("producers", "acks"): (("0.10.2", 1), ("3.0", "all")),
    # retries: 0 up to 2.0, Integer.MAX_VALUE from 2.1, bounded by delivery.timeout.ms (KIP-91)
    ("producers", "retries"): (("0.10.2", 0), ("2.1", MAX_RETRIES)),
    # the consumer's request.timeout.ms: 305000 up to 1.1, 30000 from 2.0 (KIP-266)
    ("consumers", "request_timeout_ms"): (("0.10.2", 305_000), ("2.0", 30_000)),
}

# KRaft mode's own defaults: broker.session.timeout.ms is the controller's heartbeat deadline
# for a broker (9000 since KRaft came, 2.8), where ZooKeeper mode's is the broker's session
KRAFT_DEFAULTS: dict[tuple[str, str], Any] = {("cluster", "broker_session_timeout_ms"): 9000}


def release_default(section: str, key: str, profile: str, kraft: bool = False) -> Any:
    """The default of option `key` of `section` for a node on `profile`; KeyError when the
    option's default is the same in every release (not in `RELEASE_DEFAULTS`)."""
    if kraft and (section, key) in KRAFT_DEFAULTS:
        return KRAFT_DEFAULTS[(section, key)]
    rows = RELEASE_DEFAULTS[(section, key)]
    return [value for first, value in rows if not newer(first, profile)][-1]


def release_defaults(section: str, given: dict, profile: str, kraft: bool = False) -> dict:
    """The release defaults of `section`'s options for a node on `profile`, for each listed
    option that `given` (the table as written) leaves out."""
    return {key: release_default(section, key, profile, kraft)
            for (sec, key) in RELEASE_DEFAULTS if sec == section and key not in given}


# The [cluster] options a broker reads from its own configuration, so a broker on another
# release than the run's takes its own release's default where the scenario leaves one out:
# its ISR lag limit and unclean-election setting (the fetcher's out-of-range handling), and in
# ZooKeeper mode its ZooKeeper session (in KRaft mode broker.session.timeout.ms is the
# controller's, which runs the run's profile)
NODE_CLUSTER = ("replica_lag_time_max_ms", "unclean_leader_election", "broker_session_timeout_ms")


def node_cluster_defaults(defaulted: tuple, profile: str, kraft: bool) -> dict:
    """The values of the `NODE_CLUSTER` options in `defaulted` (those the scenario left to
    their release default) for a broker on `profile`."""
    return {key: release_default("cluster", key, profile, kraft) for key in defaulted
            if key in NODE_CLUSTER and not (kraft and key == "broker_session_timeout_ms")}


def explicit_idempotence_defaults(given: dict) -> dict:
    """An explicitly idempotent producer's `acks` and `retries` where `given` leaves them
    out: "all" and Integer.MAX_VALUE whatever the release's defaults, as Kafka's producer
    overrides them (0.11's `KafkaProducer.configureAcks`/`configureRetries`,
    `ProducerConfig.maybeOverrideAcksAndRetries` from 2.1)."""
    out: dict[str, Any] = {}
    if "acks" not in given:
        out["acks"] = "all"
    if "retries" not in given:
        out["retries"] = MAX_RETRIES
    return out


def library_defaults(client: str, given: dict, idempotent: bool) -> dict:
    """The defaults of a producer running real library `client` ("model": none) for the
    options `given` leaves out: aiokafka 0.14's `AIOKafkaProducer` sends with acks=1 unless
    idempotence is on, then acks=all (its `__init__`, `acks=_missing`)."""
    if client != "aiokafka" or "acks" in given:
        return {}
    return {"acks": "all" if idempotent else 1}
