"""A scenario's resolved options: one frozen dataclass per section, each limit written once.

Contract:
- `Options` holds what one run is built from: `run`, `protocol` (the `Protocol` switches, with
  the `profile` they started from), `cluster`, `topics`, `producers`, `consumers`, `network`,
  and the per-node versions: `nodes` (the brokers and clients on another profile than the
  run's) and `inter_broker_protocol` (the IBP's profile, "" for the run's). `protocol_of(name)`
  and `protocol_on(profile)` resolve their switches (`sim.kafka.profiles.node_protocol`),
  `cluster_on(profile)` a broker's [cluster].
  Every field is filled in (the loader resolves defaults); the actors read attributes.
- Each bounded field carries its `Limit` in its metadata (`option(default, lo=..., hi=...)`).
  The scenario loader reads a field's type, default and limit from there to check user input
  (`scenarios.tables.Table.option`); the model asserts them when an options record is built
  (`__post_init__` raises ValueError: a value out of bounds here is a bug of whoever built it,
  since the loader refused it already); the invariants read the bounds of the trace header's
  options from here too (`invariants.registry.options_problem`).
- `to_json()` gives the JSON the trace header stores (keys in field order, numbers as given:
  the trace's bytes depend on it) and `from_json(data)` reads it back, equal to the original.
Knows no actor (the loader, the model and the invariants import it).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

from sim.core.latency import MAX_MS, LatencyDist
from sim.core.network import PARTITION_MODES
from sim.kafka.defaults import node_cluster_defaults
from sim.kafka.profiles import CHOICES, PROFILES, Protocol, ibp_protocol, node_protocol
from sim.kafka.vocab import CONSUMER_REQUEST_TIMEOUT_MS

# No option needs more than this (2**53, ~285 years in microseconds); larger numbers overflow
# what the model converts them to (C longs, float times).
MAX_NUMBER = 2**53


@dataclass(frozen=True)
class Limit:
    """The values an option may take: lo <= value <= hi (hi at most MAX_NUMBER), value > `above`,
    value one of `choices`; None bounds nothing."""

    lo: int | float | None = None
    hi: int | float | None = None
    above: int | float | None = None
    choices: tuple | None = None

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value`, or None."""
        if self.choices is not None:
            # by type too: True (== 1) is not acks = 1
            found = any(type(c) is type(value) and c == value for c in self.choices)
            return None if found else f"not one of {list(self.choices)}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if self.above is not None and value <= self.above:
            return f"not above {self.above}"
        if self.lo is not None and value < self.lo:
            return f"below {self.lo}"
        hi = MAX_NUMBER if self.hi is None else min(self.hi, MAX_NUMBER)
        return f"above {hi}" if value > hi else None


NO_LIMIT = Limit()


def option(default: Any = MISSING, lo=None, hi=None, above=None, choices=None):
    """A dataclass field with its default and its `Limit`."""
    return field(default=default, metadata={"limit": Limit(lo, hi, above, choices)})


def option_field(cls, name: str):
    """The dataclass field `name` of the options class `cls` (KeyError if it has none)."""
    return {f.name: f for f in fields(cls)}[name]


def limit(cls, name: str) -> Limit:
    """The limit of option `name` of `cls`."""
    return option_field(cls, name).metadata.get("limit", NO_LIMIT)


def default(cls, name: str) -> Any:
    """The default of option `name` of `cls` (MISSING if it must be given)."""
    return option_field(cls, name).default


class _Checked:
    """Asserts every field's limit once the record is built; encodes fields in order."""

    def __post_init__(self) -> None:
        for f in fields(self):
            lim = f.metadata.get("limit")
            problem = lim and lim.problem(getattr(self, f.name))
            if problem:
                raise ValueError(f"{type(self).__name__}.{f.name} = {getattr(self, f.name)!r}: "
                                 f"{problem}")

    def to_json(self) -> dict:
        return {f.name: _encode(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict):
        return cls(**{f.name: data[f.name] for f in fields(cls)})


def _encode(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, _Checked | LatencyDist):
        return value.to_json()
    return value


@dataclass(frozen=True, kw_only=True)
class RunOptions(_Checked):
    """[run]: how long the run lasts, its event cap, and the quiet settle time at its end."""

    duration_ms: int = option(30000, lo=1)
    max_events: int = option(5_000_000, lo=1)
    settle_ms: int = option(5000, lo=0)


@dataclass(frozen=True, kw_only=True)
class ClusterOptions(_Checked):
    """[cluster]: sizes, and the timeouts of brokers and controllers (ms, ints). A zero session,
    lag, retry or check time would spin the run at one instant, so those start at 1."""

    brokers: int = option(3, 1, 64)  # the invariants build per-broker state: keep it bounded
    controllers: int = option(2, 1, 5)
    min_insync_replicas: int = option(1, lo=1)
    unclean_leader_election: bool = option(False)
    controller_failover_delay_ms: int = option(2000, lo=0)
    zk_session_timeout_ms: int = option(6000, lo=1)
    broker_session_timeout_ms: int = option(6000, lo=1)
    # when a broker re-registered in ZooKeeper learns its new epoch; 0: at once (KAFKA-9839)
    broker_registration_ms: int = option(0, lo=0)
    replica_lag_time_max_ms: int = option(10000, lo=1)
    replica_fetch_wait_max_ms: int = option(500, lo=0)
    max_incremental_fetch_session_cache_slots: int = option(1000, lo=0)  # Kafka's config
    min_incremental_fetch_session_eviction_ms: int = option(120_000, lo=0)  # Kafka's constant
    controller_request_retry_ms: int = option(3000, lo=1)
    request_service_us: int = option(50, lo=0)
    replica_high_watermark_checkpoint_interval_ms: int = option(5000, lo=0)
    producer_id_expiration_check_interval_ms: int = option(600000, lo=1)
    # `log.dirs`: a new log goes to the one with fewest (`LogManager.nextLogDirs`)
    log_dirs: int = option(1, 1, 16)
    # ZooKeeper mode: auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds
    # (in ms), leader.imbalance.per.broker.percentage (`controller_rebalance`)
    auto_leader_rebalance: bool = option(True)
    leader_imbalance_check_interval_ms: int = option(300_000, lo=1)
    leader_imbalance_per_broker_percentage: int = option(10, 0, 100)
    # The control plane: "zk" or "kraft" (a controller quorum and its metadata log); "": the
    # profile's (`sim.kafka.profiles.modes`). The fields below matter in KRaft mode only (a
    # ZooKeeper-mode trace header leaves them out, `KRAFT_FIELDS`).
    mode: str = option("", choices=("", "zk", "kraft"))
    broker_heartbeat_interval_ms: int = option(2000, lo=1)  # broker.heartbeat.interval.ms
    quorum_election_timeout_ms: int = option(1000, lo=1)  # quorum.election.timeout.ms
    quorum_fetch_timeout_ms: int = option(2000, lo=1)  # quorum.fetch.timeout.ms
    quorum_election_backoff_max_ms: int = option(1000, lo=1)  # quorum.election.backoff.max.ms
    quorum_request_timeout_ms: int = option(2000, lo=1)  # quorum.request.timeout.ms
    # the leader's hold of a Fetch that finds nothing new (500 ms), a broker's apply of a record
    metadata_fetch_wait_ms: int = option(500, lo=1)
    metadata_apply_us: int = option(100, lo=0)
    # controller.quorum.append.linger.ms; metadata.max.idle.interval.ms (KIP-835; 0: never)
    quorum_append_linger_ms: int = option(25, lo=0)
    metadata_max_idle_interval_ms: int = option(500, lo=0)
    # KIP-853: voters c1..cN formatted (kraft.version 1; others observe); 0: static voters
    initial_controllers: int = option(0, 0, 5)

    def to_json(self) -> dict:
        out = super().to_json()
        if not out["initial_controllers"]:  # a static quorum's header reads as before KIP-853
            del out["initial_controllers"]
        if out["mode"] != "kraft":
            for name in KRAFT_FIELDS:
                out.pop(name, None)
        return out

    @classmethod
    def from_json(cls, data: dict) -> ClusterOptions:
        return cls(**{f.name: data.get(f.name, "zk" if f.name == "mode" else f.default)
                      for f in fields(cls)})


# the [cluster] fields a ZooKeeper-mode trace header leaves out
KRAFT_FIELDS = ("mode", "broker_heartbeat_interval_ms", "quorum_election_timeout_ms",
                "quorum_fetch_timeout_ms", "quorum_election_backoff_max_ms",
                "quorum_request_timeout_ms", "metadata_fetch_wait_ms", "metadata_apply_us",
                "quorum_append_linger_ms", "metadata_max_idle_interval_ms", "initial_controllers")


@dataclass(frozen=True, kw_only=True)
class TopicOptions(_Checked):
    """[[topics]]: a topic created at the start, with one replica list (broker ids) per
    partition; `replication_factor` is each list's length."""

    name: str = option()
    partitions: int = option(1, 1, 1000)
    replication_factor: int = option(lo=1)  # default: the assignment's, or min(3, brokers)
    message_format: int = option(2, 0, 2)
    retention_ms: int = option(0, lo=0)
    segment_ms: int = option(10000, lo=1)
    assignment: tuple[tuple[int, ...], ...] = option()

    @classmethod
    def from_json(cls, data: dict) -> TopicOptions:
        topic = super().from_json(data)
        return replace(topic, assignment=tuple(tuple(r) for r in topic.assignment))


LEADER_DISCOVERY = ("", *CHOICES["leader_discovery"])  # "": the protocol's
IDEMPOTENCE = ("default", "off", "requested", "required")
# which code a producer runs: the model's own client, or a real library inside the simulation
# (docs/real-clients.md)
CLIENTS = ("model", "aiokafka")
AUTO_OFFSET_RESET = ("earliest", "latest", "none")


@dataclass(frozen=True, kw_only=True)
class ProducerOptions(_Checked):
    """[[producers]]: one producer's Kafka configs (*_ms in ints). `acks` is "all", 1 or 0;
    `batch_size` is batch.size in bytes (0 turns batching off, as in Kafka) and `record_bytes`
    the records' size, which Kafka does not configure: together they cap a batch's records.
    `stop_ms` 0 means until the end."""

    name: str = option()
    topic: str = option()
    acks: str | int = option("all", choices=("all", 1, 0))
    records_per_sec: int | float = option(1000, above=0)
    linger_ms: int = option(5, lo=1)
    enable_idempotence: str = option("default", choices=IDEMPOTENCE)
    max_in_flight: int = option(5, 1, 5)
    batch_size: int = option(16384, lo=0)
    record_bytes: int = option(100, lo=1)
    retries: int = option(2147483647, lo=0)
    delivery_timeout_ms: int = option(120000, lo=0)
    request_timeout_ms: int = option(30000, lo=1)  # 0 would spin the run at one instant
    retry_backoff_ms: int = option(100, lo=0)
    retry_backoff_max_ms: int = option(1000, lo=0)
    metadata_max_age_ms: int = option(300000, lo=1)  # 0 would spin the run at one instant
    start_ms: int = option(0, lo=0)  # and before run.duration_ms
    stop_ms: int = option(0, lo=0)
    leader_discovery: str = option("", choices=LEADER_DISCOVERY)
    client: str = option("model", choices=CLIENTS)


@dataclass(frozen=True, kw_only=True)
class ConsumerOptions(_Checked):
    """[[consumers]]: one consumer's Kafka configs (*_ms in ints)."""

    name: str = option()
    topic: str = option()
    fetch_max_wait_ms: int = option(500, lo=0)
    metadata_max_age_ms: int = option(300000, lo=1)
    request_timeout_ms: int = option(CONSUMER_REQUEST_TIMEOUT_MS, lo=1)
    start_ms: int = option(0, lo=0)  # and before run.duration_ms
    leader_discovery: str = option("", choices=LEADER_DISCOVERY)
    # `auto.offset.reset`: a position without an offset (at the start, after OFFSET_OUT_OF_RANGE,
    # a validation finding none) resets by ListOffsets EARLIEST or LATEST; "none": never, it raises
    auto_offset_reset: str = option("latest", choices=AUTO_OFFSET_RESET)
    client: str = option("model", choices=CLIENTS)


# The settings of a link: the network's defaults and each [[network.links]] share these limits.
def _jitter_ms(default=MISSING):
    return option(default, lo=0, hi=MAX_MS)


def _probability(default=MISSING):
    return option(default, lo=0, hi=1)


@dataclass(frozen=True, kw_only=True)
class LinkOptions(_Checked):
    """[[network.links]]: the settings of one directed link, overriding the network's."""

    src: str = option()
    dst: str = option()
    latency: LatencyDist = option()
    jitter_ms: int | float = _jitter_ms()
    drop: int | float = _probability()
    duplicate: int | float = _probability()

    @classmethod
    def from_json(cls, data: dict) -> LinkOptions:
        return replace(super().from_json(data), latency=LatencyDist.parse(data["latency"]))


@dataclass(frozen=True, kw_only=True)
class NetworkOptions(_Checked):
    """[network]: every link's default settings, what a partition does to messages in flight,
    and the links that differ."""

    latency: LatencyDist = option(LatencyDist("constant", 1.0))
    jitter_ms: int | float = _jitter_ms(0)
    drop: int | float = _probability(0.0)
    duplicate: int | float = _probability(0.0)
    partition: str = option("stall", choices=PARTITION_MODES)
    links: tuple[LinkOptions, ...] = ()

    @classmethod
    def from_json(cls, data: dict) -> NetworkOptions:
        return replace(super().from_json(data), latency=LatencyDist.parse(data["latency"]),
                       links=tuple(LinkOptions.from_json(link) for link in data["links"]))


@dataclass(frozen=True, kw_only=True)
class Options:
    """Everything one run is built from but the seed and the fault schedule."""

    run: RunOptions
    protocol: Protocol
    profile: str  # the profile `protocol` started from (before its overrides)
    cluster: ClusterOptions
    topics: tuple[TopicOptions, ...]
    producers: tuple[ProducerOptions, ...]
    consumers: tuple[ConsumerOptions, ...]
    network: NetworkOptions
    # (node name, profile) of each broker or client on another profile than `profile`:
    # brokers by id, then producers and consumers in file order
    nodes: tuple[tuple[str, str], ...] = ()
    inter_broker_protocol: str = ""  # the IBP as a profile; "" means `profile`
    # the [cluster] options left to their release default (`cluster_on` reads them)
    cluster_defaulted: tuple[str, ...] = ()

    def node_profile(self, name: str) -> str:
        """The profile node `name` starts on (controllers: the run's)."""
        return dict(self.nodes).get(name, self.profile)

    def protocol_of(self, name: str) -> Protocol:
        """The switches node `name` starts with."""
        return self.protocol_on(self.node_profile(name))

    def cluster_on(self, profile: str) -> ClusterOptions:
        """The [cluster] of a broker on `profile`: the run's, with its own release's defaults of
        the options a broker reads from its own config (`defaults.NODE_CLUSTER`) left out."""
        if profile == self.profile:
            return self.cluster
        return replace(self.cluster, **node_cluster_defaults(self.cluster_defaulted, profile,
                                                             self.kraft))

    def protocol_on(self, profile: str) -> Protocol:
        """The switches of a node on `profile` in this run (its overrides and mutant too)."""
        return node_protocol(self.protocol, self.profile, profile)

    def ibp_protocol(self, ibp: str) -> Protocol:
        """The switches the inter-broker protocol version `ibp` bounds brokers' requests by in
        this run (`sim.kafka.profiles.ibp_protocol`)."""
        return ibp_protocol(self.protocol, self.profile, ibp)

    @property
    def kraft(self) -> bool:
        """Whether the run's control plane is KRaft (`cluster.mode`)."""
        return self.cluster.mode == "kraft"

    @property
    def ibp(self) -> str:
        """The inter-broker protocol version the run starts with, named by its profile."""
        return self.inter_broker_protocol or self.profile

    def to_json(self) -> dict:
        """The trace header's `options`: the protocol's switches with its profile last, then,
        only when the run has them, the IBP and each node on another profile with its
        switches (so a header of a run on one version reads as before)."""
        kraft = self.kraft
        protocol = {**self.protocol.to_json(kraft), "profile": self.profile}
        if self.inter_broker_protocol:
            protocol["inter_broker_protocol"] = self.inter_broker_protocol
        if self.nodes:
            protocol["nodes"] = {name: {"profile": profile,
                                        **self.protocol_on(profile).to_json(kraft)}
                                 for name, profile in self.nodes}
        cluster = self.cluster.to_json()
        if self.cluster_defaulted:  # `from_json` reads it back; a written scenario omits them
            cluster["defaulted"] = list(self.cluster_defaulted)
        return {"run": self.run.to_json(),
                "protocol": protocol,
                "cluster": cluster,
                "topics": [t.to_json() for t in self.topics],
                "producers": [p.to_json() for p in self.producers],
                "consumers": [c.to_json() for c in self.consumers],
                "network": self.network.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> Options:
        extra = ("profile", "inter_broker_protocol", "nodes")
        protocol = {k: v for k, v in data["protocol"].items() if k not in extra}
        nodes = data["protocol"].get("nodes", {})
        # a ZooKeeper-mode header leaves the KRaft-only switches out: the profile's are meant
        base = PROFILES.get(data["protocol"]["profile"], Protocol())
        return cls(run=RunOptions.from_json(data["run"]), protocol=replace(base, **protocol),
                   profile=data["protocol"]["profile"],
                   cluster=ClusterOptions.from_json(data["cluster"]),
                   cluster_defaulted=tuple(data["cluster"].get("defaulted", ())),
                   topics=tuple(TopicOptions.from_json(t) for t in data["topics"]),
                   producers=tuple(ProducerOptions.from_json(p) for p in data["producers"]),
                   consumers=tuple(ConsumerOptions.from_json(c) for c in data["consumers"]),
                   network=NetworkOptions.from_json(data["network"]),
                   nodes=tuple((name, node["profile"]) for name, node in nodes.items()),
                   inter_broker_protocol=data["protocol"].get("inter_broker_protocol", ""))
