"""[[producers]] and [[consumers]] of a scenario file: each client's settings, validated.

Contract: `clients(value, key, prefix, read, names, run)` returns the clients of one array as
dicts with every setting filled in (`read` is `producer` or `consumer`); `unique_nodes` refuses
a client name taken by another node; `idempotence_supported` refuses the producer configs Kafka
refuses. Errors are `scenarios.tables.Bad`.
"""

from __future__ import annotations

import math
from typing import Any

from scenarios.tables import NAME_RE, Bad, Names, Table, tables
from scenarios.targets import check_topic
from sim.core.trace import RESERVED_NODES
from sim.kafka.vocab import CONSUMER_REQUEST_TIMEOUT_MS

_LEADER_DISCOVERY = ("", "metadata", "kip951", "refresh_no_backoff")
_IDEMPOTENCE = {"default": "default", "off": "off", "requested": "requested",
                "required": "required", True: "required", False: "off"}


def idempotence_explicit(producer: dict, protocol: dict) -> bool:
    """True when the producer asks for idempotence in a way Kafka holds it to: `required`
    (`true`), or `requested` under a profile without the KIP-185 modes, where it means `true`."""
    mode = producer["enable_idempotence"]
    return mode == "required" or (mode == "requested" and not protocol["idempotence_modes"])


def idempotence_supported(protocol: dict, producers: list[dict]) -> None:
    """Refuse the producer configs Kafka refuses. A protocol without KIP-98
    (`idempotent_producer` off, Kafka before 0.11) has no idempotent producer to offer: asking
    for one explicitly is an error, not a silent "off". Asking for one explicitly with acks
    other than all, or with retries = 0, is Kafka's own ConfigException ("Must set acks to all
    in order to use the idempotent producer", "Must set retries to non-zero when using the
    idempotent producer"; `ProducerConfig.postProcessAndValidateIdempotenceConfigs`, since
    0.11). Only an explicit request is refused: the default, and the KIP-185 design's best-effort
    `requested`, quietly turn idempotence off instead (KIP-679)."""
    for i, producer in enumerate(producers):
        mode = producer["enable_idempotence"]
        explicit = idempotence_explicit(producer, protocol)
        if mode in ("requested", "required") and not protocol["idempotent_producer"]:
            raise Bad(f"producers[{i}].enable_idempotence",
                      f"{mode!r} under profile {protocol['profile']!r}, which has no idempotent "
                      "producer (KIP-98 came with Kafka 0.11)",
                      'use "off" or "default", or a profile from 0.11 on')
        if explicit and producer["acks"] != "all":
            raise Bad(f"producers[{i}].acks",
                      f"acks = {producer['acks']} with enable_idempotence = {mode!r}: Kafka refuses "
                      "this producer config (\"Must set acks to all in order to use the idempotent "
                      "producer\")", 'set acks = "all", or enable_idempotence = "off"')
        if explicit and producer["retries"] == 0:
            raise Bad(f"producers[{i}].retries",
                      f"0 with enable_idempotence = {mode!r}: Kafka refuses this producer config "
                      "(\"Must set retries to non-zero when using the idempotent producer\")",
                      'raise retries, or set enable_idempotence = "off"')


def clients(value: Any, key: str, prefix: str, read, names: Names, run: dict) -> list[dict]:
    """[[producers]] or [[consumers]]: each read by `read`, default names prefix1, prefix2..."""
    out = []
    for i, item in enumerate(tables(value, key, nonempty=False)):
        t = Table(item, f"{key}[{i}]")
        name = t.str("name", f"{prefix}{i + 1}")
        if not NAME_RE.fullmatch(name) or name == "controller":
            raise Bad(t.path("name"), f"invalid client name {name!r}",
                      "use letters, digits, '.', '_' or '-' (and not the role 'controller')")
        client = {"name": name, "topic": check_topic(t.raw("topic"), t.path("topic"), names)}
        client.update(read(t, run))
        client["leader_discovery"] = t.str("leader_discovery", "", _LEADER_DISCOVERY)
        t.done()
        out.append(client)
    return out


def producer(t: Table, run: dict) -> dict:
    """The settings of one producer (Kafka producer configs, *_ms in ints)."""
    acks = t.raw("acks", "all")
    if acks not in ("all", -1, 0, 1) or type(acks) not in (str, int):  # not true, not 1.0
        raise Bad(t.path("acks"), f"invalid acks {acks!r}", 'use "all" (or -1), 1 or 0')
    idem = t.raw("enable_idempotence", "default")
    if not isinstance(idem, str | bool) or idem not in _IDEMPOTENCE:
        raise Bad(t.path("enable_idempotence"), f"invalid value {idem!r}",
                  'use "default", "off", "requested", "required", true or false')
    out = {"acks": "all" if acks in ("all", -1) else acks,
           "records_per_sec": t.number("records_per_sec", 1000, above=0),
           "linger_ms": t.int("linger_ms", 5, lo=1),
           "enable_idempotence": _IDEMPOTENCE[idem],
           "max_in_flight": t.int("max_in_flight", 5, 1, 5),
           # batch.size in bytes (0 turns batching off, as in Kafka) and the records' size,
           # which Kafka does not configure: together they cap the records of one batch
           "batch_size": t.int("batch_size", 16384, lo=0),
           "record_bytes": t.int("record_bytes", 100, lo=1),
           "retries": t.int("retries", 2147483647, lo=0)}
    for key, default in (("delivery_timeout_ms", 120000), ("request_timeout_ms", 30000),
                         ("retry_backoff_ms", 100), ("retry_backoff_max_ms", 1000),
                         ("metadata_max_age_ms", 300000)):
        # a zero request timeout or metadata age would spin the run at one instant
        out[key] = t.int(key, default,
                         lo=1 if key in ("request_timeout_ms", "metadata_max_age_ms") else 0)
    _batches_per_linger(t, out)
    if out["delivery_timeout_ms"] < out["linger_ms"] + out["request_timeout_ms"]:
        raise Bad(t.path("delivery_timeout_ms"), "must be >= linger_ms + request_timeout_ms "
                  "(Kafka rejects the producer config otherwise)", "raise delivery_timeout_ms")
    out["start_ms"] = t.int("start_ms", 0, lo=0, hi=run["duration_ms"] - 1)
    out["stop_ms"] = t.int("stop_ms", 0, lo=0)
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


def consumer(t: Table, run: dict) -> dict:
    """The settings of one consumer (Kafka consumer configs, *_ms in ints)."""
    return {"fetch_max_wait_ms": t.int("fetch_max_wait_ms", 500, lo=0),
            "metadata_max_age_ms": t.int("metadata_max_age_ms", 300000, lo=1),
            "request_timeout_ms": t.int("request_timeout_ms", CONSUMER_REQUEST_TIMEOUT_MS, lo=1),
            "start_ms": t.int("start_ms", 0, lo=0, hi=run["duration_ms"] - 1)}


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
