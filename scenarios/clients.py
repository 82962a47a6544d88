"""[[producers]] and [[consumers]] of a scenario file: each client's settings, validated.

Contract: `clients(value, key, prefix, read, names, run)` returns the clients of one array as
`ProducerOptions` or `ConsumerOptions` with every setting filled in (`read` is `producer` or
`consumer`; types, defaults and limits are those the dataclass fields declare), and beside
them each client's own `profile` (None: the run's; `Options.nodes` holds it);
`unique_nodes` refuses a client name taken by another node; `release_options` fills in the
defaults that depend on a node's Kafka release; `idempotence_supported` refuses the producer
configs Kafka refuses. Errors are `scenarios.tables.Bad`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from scenarios.tables import NAME_RE, Bad, Names, Table, tables
from scenarios.targets import check_topic
from scenarios.versions import check_profile
from sim.core.trace import RESERVED_NODES
from sim.kafka.defaults import (
    NODE_CLUSTER,
    explicit_idempotence_defaults,
    library_defaults,
    release_defaults,
)
from sim.kafka.modes import oldest_client
from sim.kafka.options import (
    IDEMPOTENCE,
    ConsumerOptions,
    Options,
    ProducerOptions,
    RunOptions,
)
from sim.kafka.profiles import Protocol, newer

# enable_idempotence as written: one of IDEMPOTENCE, or a boolean (Kafka's own true / false)
_IDEMPOTENCE = {**{mode: mode for mode in IDEMPOTENCE}, True: "required", False: "off"}
_CLASSES = {"producers": ProducerOptions, "consumers": ConsumerOptions}


def idempotence_explicit(producer: ProducerOptions, protocol: Protocol) -> bool:
    """True when the producer asks for idempotence in a way Kafka holds it to: `required`
    (`true`), or `requested` under a profile without the KIP-185 modes, where it means `true`."""
    mode = producer.enable_idempotence
    return mode == "required" or (mode == "requested" and not protocol.idempotence_modes)


def release_options(options: Options, raw: dict) -> Options:
    """`options` with Kafka's defaults by release (`sim.kafka.defaults`) for every option that
    the file's tables (`raw`: section -> the parsed TOML) leave out: the cluster's and the
    topics' by the run's profile and control-plane mode (`_release_cluster`), each client's by
    its own profile (`_release_producer` for a producer's overrides)."""
    profile = options.profile
    topics = tuple(replace(t, **release_defaults("topics", _written(raw, "topics", i), profile))
                   for i, t in enumerate(options.topics))
    producers = tuple(_release_producer(options, p, _written(raw, "producers", i))
                      for i, p in enumerate(options.producers))
    consumers = tuple(replace(c, **release_defaults("consumers", _written(raw, "consumers", i),
                                                    options.node_profile(c.name)))
                      for i, c in enumerate(options.consumers))
    written = _written(raw, "cluster")
    return replace(options, cluster=_release_cluster(options, written),
                   cluster_defaulted=tuple(k for k in NODE_CLUSTER if k not in written),
                   topics=topics, producers=producers, consumers=consumers)


def _written(raw: dict, section: str, i: int | None = None) -> dict:
    """The table a scenario file wrote for `section` (its `i`-th entry of an array), {} when
    it wrote none."""
    value = raw.get(section)
    if i is not None:
        value = value[i] if isinstance(value, list) and i < len(value) else None
    return value if isinstance(value, dict) else {}


def _release_cluster(options: Options, written: dict):
    """[cluster] with its release defaults. In ZooKeeper mode the controllers' session follows
    a written broker session: one config in Kafka (zookeeper.session.timeout.ms), which the
    controller, a broker, uses too."""
    cluster = replace(options.cluster, **release_defaults("cluster", written, options.profile,
                                                          options.kraft))
    if (not options.kraft and "broker_session_timeout_ms" in written
            and "zk_session_timeout_ms" not in written):
        cluster = replace(cluster, zk_session_timeout_ms=cluster.broker_session_timeout_ms)
    return cluster


def _release_producer(options: Options, p: ProducerOptions, written: dict) -> ProducerOptions:
    """A producer with its release's defaults, an explicitly idempotent producer's `acks` and
    `retries` as Kafka's producer sets them, and a real library's `acks` as it sets it."""
    p = replace(p, **release_defaults("producers", written, options.node_profile(p.name)))
    if idempotence_explicit(p, options.protocol_of(p.name)):
        p = replace(p, **explicit_idempotence_defaults(written))
    return replace(p, **library_defaults(p.client, written, p.enable_idempotence == "required"))


def check_clients(options: Options) -> None:
    """Refuse the clients Kafka would not run: too old for the brokers, or a producer config
    Kafka refuses (`clients_supported`, `idempotence_supported`)."""
    clients_supported(options)
    idempotence_supported(options)


def clients_supported(options: Options) -> None:
    """Refuse a client older than the brokers answer (`sim.kafka.modes.oldest_client`): a 0.10.2
    client cannot produce to or fetch from Kafka 4.0+ brokers (KIP-896), so a run with one
    would model a cluster Kafka does not have."""
    oldest = oldest_client(options.profile)
    if oldest is None:
        return
    for kind, group in (("producers", options.producers), ("consumers", options.consumers)):
        for i, client in enumerate(group):
            own = options.node_profile(client.name)
            if newer(oldest, own):
                raise Bad(f"{kind}[{i}].profile",
                          f"'{own}' clients send only requests that profile "
                          f"'{options.profile}' brokers no longer take (Kafka 4.0 removed "
                          "Produce v0-v2 and Fetch v0-v3, KIP-896)",
                          f'give it profile "{oldest}" or newer, or run a profile before 4.0')


def idempotence_supported(options: Options) -> None:
    """Refuse the producer configs Kafka refuses. A protocol without KIP-98
    (`idempotent_producer` off, Kafka before 0.11) has no idempotent producer to offer: asking
    for one explicitly is an error, not a silent "off", and so is a producer whose idempotence
    would be on (explicitly, or by its profile's default) while a broker runs such a profile
    (its InitProducerId and Produce v3 do not exist there). Asking for one explicitly with acks
    other than all, or with retries = 0, is Kafka's own ConfigException ("Must set acks to all
    in order to use the idempotent producer", "Must set retries to non-zero when using the
    idempotent producer"; `ProducerConfig.postProcessAndValidateIdempotenceConfigs`, since
    0.11). Only an explicit request is refused: the default, and the KIP-185 design's best-effort
    `requested`, quietly turn idempotence off instead (KIP-679)."""
    old_brokers = [f"b{i}" for i in range(1, options.cluster.brokers + 1)
                   if not options.protocol_of(f"b{i}").idempotent_producer]
    for i, producer in enumerate(options.producers):
        protocol = options.protocol_of(producer.name)
        mode = producer.enable_idempotence
        explicit = idempotence_explicit(producer, protocol)
        if mode in ("requested", "required") and not protocol.idempotent_producer:
            raise Bad(f"producers[{i}].enable_idempotence",
                      f"{mode!r} under profile {options.node_profile(producer.name)!r}, which "
                      "has no idempotent producer (KIP-98 came with Kafka 0.11)",
                      'use "off" or "default", or a profile from 0.11 on')
        on = mode in ("requested", "required") or (mode == "default"
                                                   and protocol.idempotence_default)
        if old_brokers and protocol.idempotent_producer and on:
            name = old_brokers[0]
            raise Bad(f"producers[{i}].enable_idempotence",
                      f"{mode!r} turns idempotence on, but {name} runs "
                      f"{options.node_profile(name)!r}, which has no idempotent producer "
                      "(KIP-98 came with Kafka 0.11)",
                      f'set enable_idempotence = "off", or give {name} a profile from 0.11 on')
        if explicit and producer.acks != "all":
            raise Bad(f"producers[{i}].acks",
                      f"acks = {producer.acks} with enable_idempotence = {mode!r}: Kafka refuses "
                      "this producer config (\"Must set acks to all in order to use the idempotent "
                      "producer\")", 'set acks = "all", or enable_idempotence = "off"')
        if explicit and producer.retries == 0:
            raise Bad(f"producers[{i}].retries",
                      f"0 with enable_idempotence = {mode!r}: Kafka refuses this producer config "
                      "(\"Must set retries to non-zero when using the idempotent producer\")",
                      'raise retries, or set enable_idempotence = "off"')


def clients(value: Any, key: str, prefix: str, read, names: Names,
            run: RunOptions) -> tuple[list, list]:
    """[[producers]] or [[consumers]]: each read by `read`, default names prefix1, prefix2...;
    and each one's `profile` (None when it runs the scenario's)."""
    cls = _CLASSES[key]
    out, profiles = [], []
    for i, item in enumerate(tables(value, key, nonempty=False)):
        t = Table(item, f"{key}[{i}]")
        name = t.str("name", f"{prefix}{i + 1}")
        if not NAME_RE.fullmatch(name) or name == "controller":
            raise Bad(t.path("name"), f"invalid client name {name!r}",
                      "use letters, digits, '.', '_' or '-' (and not the role 'controller')")
        client = {"name": name, "topic": check_topic(t.raw("topic"), t.path("topic"), names)}
        client.update(read(t, run))
        client["leader_discovery"] = t.option(cls, "leader_discovery")
        own = t.raw("profile", None)
        profiles.append(None if own is None else check_profile(own, t.path("profile")))
        t.done()
        out.append(cls(**client))
    return out, profiles


def producer(t: Table, run: RunOptions) -> dict:
    """The settings of one producer (Kafka producer configs, *_ms in ints)."""
    acks = t.raw("acks", ProducerOptions.acks)
    if acks not in ("all", -1, 0, 1) or type(acks) not in (str, int):  # not true, not 1.0
        raise Bad(t.path("acks"), f"invalid acks {acks!r}", 'use "all" (or -1), 1 or 0')
    idem = t.raw("enable_idempotence", ProducerOptions.enable_idempotence)
    if not isinstance(idem, str | bool) or idem not in _IDEMPOTENCE:
        raise Bad(t.path("enable_idempotence"), f"invalid value {idem!r}",
                  'use "default", "off", "requested", "required", true or false')
    out = {"acks": "all" if acks in ("all", -1) else acks,
           "records_per_sec": t.option(ProducerOptions, "records_per_sec"),
           "linger_ms": t.option(ProducerOptions, "linger_ms"),
           "enable_idempotence": _IDEMPOTENCE[idem]}
    for key in ("max_in_flight", "batch_size", "record_bytes", "retries", "delivery_timeout_ms",
                "request_timeout_ms", "retry_backoff_ms", "retry_backoff_max_ms",
                "metadata_max_age_ms"):
        out[key] = t.option(ProducerOptions, key)
    _batches_per_linger(t, out)
    if out["delivery_timeout_ms"] < out["linger_ms"] + out["request_timeout_ms"]:
        raise Bad(t.path("delivery_timeout_ms"), "must be >= linger_ms + request_timeout_ms "
                  "(Kafka rejects the producer config otherwise)", "raise delivery_timeout_ms")
    out["start_ms"] = t.option(ProducerOptions, "start_ms", hi=run.duration_ms - 1)
    out["stop_ms"] = t.option(ProducerOptions, "stop_ms")
    out["client"] = t.option(ProducerOptions, "client")
    if out["client"] == "aiokafka" and idem == "requested":
        raise Bad(t.path("enable_idempotence"), "aiokafka has no KIP-185 modes",
                  'use "required" (enable_idempotence=True), "off" or "default" (off in aiokafka)')
    if out["stop_ms"] and out["stop_ms"] <= out["start_ms"]:
        raise Bad(t.path("stop_ms"), f"{out['stop_ms']} is not after start_ms {out['start_ms']}",
                  "use 0 (until the end) or a time after start_ms")
    return out


# Batches one producer may make in one linger_ms. A linger's records become batches in one step
# of the model, which run.max_events does not count, so a rate far beyond any real producer
# (records_per_sec = 1e9) would hang the run and fill the disk however low max_events is.
# The shipped scenarios make at most a few hundred.
MAX_BATCHES_PER_LINGER = 10_000


def _batches_per_linger(t: Table, producer: dict) -> None:
    """Refuse a producer whose every linger_ms would make more than MAX_BATCHES_PER_LINGER
    batches (a batch holds batch_size / record_bytes records, at least one)."""
    per_linger = producer["records_per_sec"] * producer["linger_ms"] / 1000
    per_batch = max(1, producer["batch_size"] // producer["record_bytes"])
    batches = math.ceil(per_linger / per_batch)
    if batches > MAX_BATCHES_PER_LINGER:
        raise Bad(t.path("records_per_sec"),
                  f"{producer['records_per_sec']:g} records/s make about {batches:,} batches "
                  f"every linger_ms = {producer['linger_ms']} ({per_batch:,} "
                  f"record{'s' if per_batch > 1 else ''} to a batch), more than the "
                  f"{MAX_BATCHES_PER_LINGER:,} one linger may make",
                  "lower records_per_sec or linger_ms, or raise batch_size")


def consumer(t: Table, run: RunOptions) -> dict:
    """The settings of one consumer (Kafka consumer configs, *_ms in ints)."""
    out = {key: t.option(ConsumerOptions, key)
           for key in ("fetch_max_wait_ms", "metadata_max_age_ms", "request_timeout_ms",
                       "auto_offset_reset")}
    out["start_ms"] = t.option(ConsumerOptions, "start_ms", hi=run.duration_ms - 1)
    out["client"] = t.option(ConsumerOptions, "client")
    if out["client"] == "aiokafka" and out["auto_offset_reset"] == "none":
        # its application loop takes records and has no answer to the exceptions `none` raises
        raise Bad(t.path("auto_offset_reset"), '"none" raises in aiokafka\'s getmany, which '
                  "the library consumer does not handle", 'use "earliest" or "latest"')
    return out


def unique_nodes(clients: list[str], producers: list, consumers: list, names: Names) -> None:
    """Client names must differ from each other and from broker/controller names."""
    keys = [f"producers[{i}].name" for i in range(len(producers))]
    keys += [f"consumers[{i}].name" for i in range(len(consumers))]
    for i, (name, key) in enumerate(zip(clients, keys)):
        if name in RESERVED_NODES:
            raise Bad(key, f"node name {name!r} is reserved: the trace writes the harness's own "
                      "events (faults, the end of the run) as that node", "choose another name")
        if name == "zk":
            raise Bad(key, "node name 'zk' is reserved: it is the metadata store's place on the "
                      "network (partition groups, block dst)", "choose another name")
        if name in names.nodes() or name in clients[:i]:
            owner = "a broker or controller" if name in names.nodes() else "another client"
            raise Bad(key, f"node name {name!r} is already taken by {owner}",
                      "give every node a unique name (producers default to p1.., "
                      "consumers to k1..)")
