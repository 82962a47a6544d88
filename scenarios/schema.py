"""Scenario files: load a TOML scenario, validate every key, resolve all defaults.

Contract:
- `load_scenario(path)` / `parse_scenario(text, path)` return a `Scenario` whose `options`
  hold every setting with its default filled in (JSON-native values only), whose `steps` are
  the scripted faults as `FaultStep`s sorted by time, and whose `mixes` are the random fault
  mixes, resolved, in file order;
- any bad input raises `ScenarioError`, whose message is one line:
  "<file>: <key path>: <what is wrong>; <how to fix>";
- `scenario_to_toml(sc, steps)` writes a scripted scenario (same options, `steps` as its
  faults, no mixes) that parses back to equal options and steps.
The format is documented for users in docs/scenarios.md; fault actions live in
`scenarios.actions`.
"""

from __future__ import annotations

import math
import re
import tomllib
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.actions import (
    NAME_RE,
    Bad,
    Names,
    Table,
    check_faults,
    check_int,
    check_list,
    check_mixes,
    check_node,
    check_topic,
    check_topic_name,
    created_topics,
    suggest,
    unknown_key,
)
from scenarios.toml_text import key_text, value_text
from sim.core.faults import FaultStep
from sim.core.latency import MAX_MS, LatencyDist
from sim.core.network import PARTITION_MODES
from sim.core.trace import RESERVED_NODES
from sim.kafka.profiles import MUTANTS, PROFILES, resolve_protocol, switch_names
from sim.kafka.vocab import CONSUMER_REQUEST_TIMEOUT_MS

ALL_INVARIANTS: list[str] = [
    "single_leader_per_epoch", "leader_epoch_monotonic", "stale_leader_append",
    "stop_replica_out_of_order", "stray_replica", "under_replicated_after_heal",
    "produce_stalled_after_heal", "consume_stalled_after_heal", "acked_write_lost",
    "log_divergence",
    "high_watermark_monotonic", "duplicate_append", "out_of_order_append",
    "spurious_out_of_order_sequence", "unreported_data_loss", "idempotence_mode_violated",
    "client_leader_epoch_regression", "leader_hint_misapplied", "consumer_skipped_record",
]
SECTIONS = ("run", "protocol", "cluster", "topics", "producers", "consumers", "network",
            "faults", "mix")
_TABLES = ("run", "protocol", "cluster", "network")  # the other sections are arrays of tables
_LEADER_DISCOVERY = ("", "metadata", "kip951", "refresh_no_backoff")
_IDEMPOTENCE = {"default": "default", "off": "off", "requested": "requested",
                "required": "required", True: "required", False: "off"}


class ScenarioError(ValueError):
    """An invalid scenario: `file`, `key` (path such as faults[2].target), `problem`, `fix`."""

    def __init__(self, file: str, key: str, problem: str, fix: str):
        self.file, self.key, self.problem, self.fix = file, key, problem, fix
        # One line even if a value quoted in the message held a newline.
        super().__init__(" ".join(f"{file}: {key}: {problem}; {fix}".split("\n")))


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    description: str
    expect: str
    seed: int
    options: dict
    steps: list
    mixes: list
    invariants: list


def load_scenario(path: str, overrides: dict | None = None) -> Scenario:
    """Read and validate the scenario file at `path`, with dotted-key `overrides` applied
    (e.g. `{"protocol.profile": "2.5", "producers.0.acks": 1}`) before validation."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ScenarioError(path, "file", "file not found", "check the path") from None
    except IsADirectoryError:
        raise ScenarioError(path, "file", "is a directory", "give a .toml file") from None
    except PermissionError:
        raise ScenarioError(path, "file", "not readable (permission denied)",
                            "check the file's permissions") from None
    except UnicodeDecodeError as err:
        raise ScenarioError(path, "file", f"not UTF-8 text ({err.reason})",
                            "save the file as UTF-8") from None
    except OSError as err:
        raise ScenarioError(path, "file", f"cannot read: {err.strerror}",
                            "check the path") from None
    return parse_scenario(text, path, overrides)


def apply_overrides(data: dict, overrides: dict, path: str) -> dict:
    """Set each dotted key of `overrides` in the raw TOML `data` (list items by index). A
    missing table is made on the way; a missing array is not (its items have no defaults)."""
    for dotted, value in overrides.items():
        node: Any = data
        parts = dotted.split(".")
        if not all(parts):
            raise ScenarioError(path, dotted, "a part of the key is empty",
                                "write a dotted key such as run.duration_ms")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if not (part.isascii() and part.isdigit()) or int(part) >= len(node):
                    raise ScenarioError(path, dotted, f"no item {part} in {'.'.join(parts[:i])}",
                                        "use an index of an existing table, e.g. producers.0.acks")
                part = int(part)
            elif not isinstance(node, dict):
                raise ScenarioError(path, dotted, f"{'.'.join(parts[:i])} is not a table",
                                    "override a key inside a table")
            if last:
                node[part] = value
            else:
                if isinstance(node, dict) and part not in node:
                    if parts[i + 1].isascii() and parts[i + 1].isdigit():
                        raise ScenarioError(path, dotted, f"no item {parts[i + 1]} in {part}: "
                                            "the scenario has none", f"add [[{part}]] to the "
                                            "scenario, or set the whole array")
                    node[part] = {}
                node = node[part]
    return data


def parse_scenario(text: str, path: str = "<string>", overrides: dict | None = None) -> Scenario:
    """Validate scenario TOML `text`; `path` names it in errors and gives the default name."""
    if text.startswith("\ufeff"):  # tomllib says only "Invalid statement" at line 1
        raise ScenarioError(path, "file", "starts with a byte-order mark (BOM), which TOML does "
                            "not allow", "save the file as UTF-8 without a BOM")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        found = re.search(r"at line (\d+)", str(err))
        line = found.group(1) if found else str(text.count("\n") + 1)
        raise ScenarioError(path, f"line {line}", f"invalid TOML: {err}",
                            f"fix the TOML syntax on line {line}") from None
    except RecursionError:
        raise ScenarioError(path, "file", "nested too deeply to read",
                            "a scenario needs only a few levels of tables and arrays") from None
    if overrides:
        apply_overrides(data, overrides, path)
    try:
        return _resolve(data, path)
    except Bad as bad:
        raise ScenarioError(path, bad.key, bad.problem, bad.fix) from None


_OUTPUT_SUFFIXES = (".json", ".jsonl", ".html", ".png", ".svg")


def _control(c: str) -> bool:
    """A control character (C0, DEL and C1, such as NEL) or a line or paragraph separator:
    nothing a directory name should hold."""
    return unicodedata.category(c) in ("Cc", "Zl", "Zp")


def _scenario_name(name: str) -> str:
    """A scenario's name names its output directory (runs/<name>/..., a suite's <out>/<name>),
    so it must be one path component that no output file of epochsim could collide with."""
    if (not name.strip() or name != name.strip() or len(name) > 120 or name in (".", "..")
            or name.endswith(_OUTPUT_SUFFIXES)
            or any(c in name for c in "/\\") or any(_control(c) for c in name)):
        raise Bad("name", f"{name!r} cannot name an output directory",
                  "use up to 120 letters, digits, '.', '_', '-' or inner spaces, and no "
                  "file extension such as .json")
    return name


def _resolve(data: dict, path: str) -> Scenario:
    """The Scenario for parsed TOML `data`; raises Bad."""
    top = Table(data, "")
    raw = {name: top.raw(name, {} if name in _TABLES else None) for name in SECTIONS}
    name = _scenario_name(top.str("name", Path(path).stem))
    description = top.str("description", "")
    invariants = _invariants(top)
    expect = _expect(top, invariants)
    seed = top.int("seed", 1, lo=0)
    top.done()  # before the sections: a misspelled [[faults]] is named, not silently empty
    run = _run(raw["run"])
    cluster = _cluster(raw["cluster"])
    topics = _topics(raw["topics"], cluster["brokers"])
    declared = Names(cluster["brokers"], cluster["controllers"], [],
                     {t["name"]: t["partitions"] for t in topics})
    producers = _clients(raw["producers"], "producers", "p", _producer, declared, run)
    consumers = _clients(raw["consumers"], "consumers", "k", _consumer, declared, run)
    clients = [c["name"] for c in producers + consumers]
    _unique_nodes(clients, producers, consumers, declared)
    names = Names(cluster["brokers"], cluster["controllers"], clients, dict(declared.topics))
    for topic, parts in created_topics(raw["faults"], raw["mix"]).items():
        names.topics[topic] = max(names.topics.get(topic, 0), parts)
    options = {"run": run, "protocol": _protocol(raw["protocol"]), "cluster": cluster,
               "topics": topics, "producers": producers, "consumers": consumers,
               "network": _network(raw["network"], names)}
    _idempotence_supported(options["protocol"], producers)
    _fetch_takes_time(options)
    steps = check_faults(_tables(raw["faults"], "faults", False), names, run)
    mixes = check_mixes(_tables(raw["mix"], "mix", False), names, run)
    return Scenario(name, path, description, expect, seed, options, steps, mixes, invariants)


def idempotence_explicit(producer: dict, protocol: dict) -> bool:
    """True when the producer asks for idempotence in a way Kafka holds it to: `required`
    (`true`), or `requested` under a profile without the KIP-185 modes, where it means `true`."""
    mode = producer["enable_idempotence"]
    return mode == "required" or (mode == "requested" and not protocol["idempotence_modes"])


def _idempotence_supported(protocol: dict, producers: list[dict]) -> None:
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


def _invariants(top: Table) -> list[str]:
    """The invariants to check: names from ALL_INVARIANTS, each once (default: all)."""
    value = top.raw("invariants", None)
    if value is None:
        return list(ALL_INVARIANTS)
    for i, item in enumerate(check_list(value, "invariants")):
        key = f"invariants[{i}]"
        if item not in ALL_INVARIANTS:
            raise Bad(key, f"unknown invariant {item!r}", suggest(str(item), ALL_INVARIANTS))
        if item in value[:i]:
            raise Bad(key, f"{item!r} is listed twice", "list each invariant once")
    return list(value)


def _expect(top: Table, invariants: list[str]) -> str:
    """`expect`: "pass" or "violation:<invariant>", the invariant among those checked."""
    expect = top.str("expect")
    if expect == "pass":
        return expect
    kind, sep, inv = expect.partition(":")
    if kind != "violation" or not sep:
        raise Bad("expect", f"unknown value {expect!r}",
                  'write "pass" or "violation:<invariant>"')
    if inv not in ALL_INVARIANTS:
        raise Bad("expect", f"unknown invariant {inv!r}", suggest(inv, ALL_INVARIANTS))
    if inv not in invariants:
        raise Bad("expect", f"expects {inv!r} but invariants does not check it",
                  f"add {inv!r} to invariants")
    return expect


def _run(raw: Any) -> dict:
    """[run]: duration, event cap and the quiet settle time at the end."""
    t = Table(raw, "run")
    out = {"duration_ms": t.int("duration_ms", 30000, lo=1),
           "max_events": t.int("max_events", 5_000_000, lo=1),
           "settle_ms": t.int("settle_ms", 5000, lo=0)}
    t.done()
    if out["settle_ms"] >= out["duration_ms"]:
        raise Bad("run.settle_ms", f"{out['settle_ms']} is not below run.duration_ms = "
                  f"{out['duration_ms']}", "lower settle_ms or raise duration_ms")
    return out


def _protocol(raw: Any) -> dict:
    """[protocol]: profile, mutant and switch overrides, resolved to every switch's value."""
    t = Table(raw, "protocol")
    profile = t.str("profile", "proposed", choices=list(PROFILES))
    mutant = t.str("mutant", "")
    if mutant and mutant not in MUTANTS:
        raise Bad("protocol.mutant", f"unknown mutant {mutant!r}", suggest(mutant, list(MUTANTS)))
    overrides = {k: v for k, v in t.data.items() if k not in ("profile", "mutant")}
    for key in overrides:
        if key not in switch_names():
            raise unknown_key(f"protocol.{key}", key, ["profile", "mutant", *switch_names()])
    try:
        out = resolve_protocol(profile, overrides, mutant).to_json()
    except ValueError as err:
        raise _wrap(err, "protocol", "see docs/profiles.md for each switch") from None
    out["profile"] = profile
    return out


def _wrap(err: ValueError, prefix: str, fix: str) -> Bad:
    """A ValueError of the form "key: problem[; fix]" as a Bad under `prefix`."""
    key, _, rest = str(err).partition(": ")
    problem, _, own_fix = rest.partition("; ")
    return Bad(f"{prefix}.{key}", problem or str(err), own_fix or fix)


def _cluster(raw: Any) -> dict:
    """[cluster]: sizes and the timeouts of brokers and controllers (ms, ints)."""
    t = Table(raw, "cluster")
    out = {"brokers": t.int("brokers", 3, 1, 64), "controllers": t.int("controllers", 2, 1, 5),
           "min_insync_replicas": t.int("min_insync_replicas", 1, lo=1),
           "unclean_leader_election": t.bool("unclean_leader_election", False)}
    for key, default in (("controller_failover_delay_ms", 2000), ("zk_session_timeout_ms", 6000),
                         ("broker_session_timeout_ms", 6000), ("replica_lag_time_max_ms", 10000),
                         ("replica_fetch_wait_max_ms", 500), ("controller_request_retry_ms", 3000),
                         ("request_service_us", 50),
                         ("replica_high_watermark_checkpoint_interval_ms", 5000),
                         ("producer_id_expiration_check_interval_ms", 600000)):
        # a zero session, lag, retry or check time would spin the run at one instant
        positive = key in ("zk_session_timeout_ms", "broker_session_timeout_ms",
                           "replica_lag_time_max_ms", "controller_request_retry_ms",
                           "producer_id_expiration_check_interval_ms")
        out[key] = t.int(key, default, lo=1 if positive else 0)
    t.done()
    return out


def _tables(value: Any, key: str, nonempty: bool) -> list:
    """An array of tables [[key]]."""
    if value is None and not nonempty:
        return []
    if value is None:
        raise Bad(key, "missing required section", f"add at least one [[{key}]] table")
    if not isinstance(value, list):
        raise Bad(key, "expected an array of tables", f"write each entry as [[{key}]]")
    return check_list(value, key, nonempty)


def _topics(value: Any, brokers: int) -> list[dict]:
    """[[topics]]: at least one, unique names, replica assignment filled in."""
    out: list[dict] = []
    for i, item in enumerate(_tables(value, "topics", nonempty=True)):
        t, key = Table(item, f"topics[{i}]"), f"topics[{i}]"
        name = check_topic_name(t.str("name"), f"{key}.name")
        if name in [o["name"] for o in out]:
            raise Bad(f"{key}.name", f"duplicate topic {name!r}", "give each topic its own name")
        given = t.raw("assignment", None)
        # an explicit assignment implies the replication factor, as kafka-topics'
        # --replica-assignment does; every list must then have that many replicas
        implied = (len(given[0]) if isinstance(given, list) and given
                   and isinstance(given[0], list) and given[0] else min(3, brokers))
        topic = {"name": name, "partitions": t.int("partitions", 1, 1, 1000),
                 "replication_factor": t.int("replication_factor", implied, lo=1)}
        rf = topic["replication_factor"]
        if rf > brokers:
            raise Bad(f"{key}.replication_factor", f"{rf} exceeds the broker count (cluster has "
                      f"{brokers} brokers: b1..b{brokers})", "lower it or raise cluster.brokers")
        topic.update(message_format=t.int("message_format", 2, 0, 2),
                     retention_ms=t.int("retention_ms", 0, lo=0),
                     segment_ms=t.int("segment_ms", 10000, lo=1))
        topic["assignment"] = _assignment(given, f"{key}.assignment", topic["partitions"], rf,
                                          brokers)
        t.done()
        out.append(topic)
    return out


def _assignment(value: Any, key: str, partitions: int, rf: int, brokers: int) -> list:
    """One replica list per partition (broker ids); default round robin over the brokers."""
    if value is None:
        return [[(p + i) % brokers + 1 for i in range(rf)] for p in range(partitions)]
    if len(check_list(value, key)) != partitions:
        raise Bad(key, f"has {len(value)} replica lists for {partitions} partitions",
                  "give one list per partition")
    for p, replicas in enumerate(value):
        if len(check_list(replicas, f"{key}[{p}]")) != rf:
            raise Bad(f"{key}[{p}]", f"has {len(replicas)} replicas, replication_factor is {rf}",
                      f"list {rf} broker ids")
        for j, broker in enumerate(replicas):
            if check_int(broker, f"{key}[{p}][{j}]", lo=1) > brokers:
                raise Bad(f"{key}[{p}][{j}]", f"no broker {broker} (cluster has b1..b{brokers})",
                          f"use broker ids 1..{brokers}")
        if len(set(replicas)) != rf:
            raise Bad(f"{key}[{p}]", f"duplicate broker id in {replicas}", "list each broker once")
    return value


def _clients(value: Any, key: str, prefix: str, read, names: Names, run: dict) -> list[dict]:
    """[[producers]] or [[consumers]]: each read by `read`, default names prefix1, prefix2..."""
    out = []
    for i, item in enumerate(_tables(value, key, nonempty=False)):
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


def _producer(t: Table, run: dict) -> dict:
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


def _consumer(t: Table, run: dict) -> dict:
    """The settings of one consumer (Kafka consumer configs, *_ms in ints)."""
    return {"fetch_max_wait_ms": t.int("fetch_max_wait_ms", 500, lo=0),
            "metadata_max_age_ms": t.int("metadata_max_age_ms", 300000, lo=1),
            "request_timeout_ms": t.int("request_timeout_ms", CONSUMER_REQUEST_TIMEOUT_MS, lo=1),
            "start_ms": t.int("start_ms", 0, lo=0, hi=run["duration_ms"] - 1)}


def _unique_nodes(clients: list[str], producers: list, consumers: list, names: Names) -> None:
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


def _fetch_takes_time(options: dict) -> None:
    """Refuse a Fetch that would be answered at the instant it is sent: a fetch wait of 0
    (a follower's replica_fetch_wait_max_ms, or a consumer's fetch_max_wait_ms), no request
    service time, and links that never take a microsecond either way between the fetcher and
    a broker. The fetcher asks again as soon as it is answered, so simulated time would never
    pass: the run would spin at t=0 until run.max_events, writing a trace of millions of events."""
    cluster, network = options["cluster"], options["network"]
    if cluster["request_service_us"]:
        return
    links = {(link["src"], link["dst"]): link for link in network["links"]}

    def instant(src: str, dst: str) -> bool:
        link = links.get((src, dst), network)
        return _max_latency_us(link["latency"]) == 0 and int(link["jitter_ms"] * 1000) == 0

    brokers = [f"b{i}" for i in range(1, cluster["brokers"] + 1)]
    fetchers = [(b, "cluster.replica_fetch_wait_max_ms") for b in brokers
                if cluster["replica_fetch_wait_max_ms"] == 0]
    fetchers += [(c["name"], f"consumers[{i}].fetch_max_wait_ms")
                 for i, c in enumerate(options["consumers"]) if c["fetch_max_wait_ms"] == 0]
    for node, key in fetchers:
        for broker in brokers:
            if broker != node and instant(node, broker) and instant(broker, node):
                raise Bad(key, f"0, with cluster.request_service_us = 0 and no latency between "
                          f"{node} and {broker}: each Fetch would be answered at the instant it "
                          "is sent and simulated time would never pass",
                          "raise it, cluster.request_service_us, or the latency of those links")


def _max_latency_us(latency: dict) -> int:
    """The longest delay (µs) a resolved latency distribution can draw; 0 means never any
    (`LatencyDist.sample` rounds to whole microseconds)."""
    dist = latency["dist"]
    if dist in ("exponential", "lognormal"):  # unbounded, unless the scale is 0
        return 0 if latency["mean_ms" if dist == "exponential" else "median_ms"] == 0 else 1
    return round(latency["ms" if dist == "constant" else "max_ms"] * 1000)


def _link(t: Table, base: dict) -> dict:
    """Latency, jitter, drop and duplicate of a link; missing keys take `base`'s values."""
    out = {}
    latency = t.raw("latency", None)
    if latency is None:
        out["latency"] = base["latency"]
    elif not isinstance(latency, dict) or not isinstance(latency.get("dist", ""), str):
        raise Bad(t.path("latency"), "expected an inline table with a string dist",
                  'write latency = { dist = "constant", ms = 1 }')
    else:
        for name, value in latency.items():
            if isinstance(value, float) and not math.isfinite(value):  # parse accepts nan
                raise Bad(f"{t.path('latency')}.{name}", f"must be finite, got {value}",
                          "write a number of milliseconds")
        try:
            out["latency"] = LatencyDist.parse(latency).to_json()
        except ValueError as err:
            raise _wrap(err, t.path("latency"), "see the latency table in the docs") from None
    out["jitter_ms"] = t.number("jitter_ms", base["jitter_ms"], lo=0, hi=MAX_MS)
    out["drop"] = t.number("drop", base["drop"], 0, 1)
    out["duplicate"] = t.number("duplicate", base["duplicate"], 0, 1)
    return out


def _network(raw: Any, names: Names) -> dict:
    """[network]: default link settings and per-link overrides [[network.links]]."""
    t = Table(raw, "network")
    out = _link(t, {"latency": {"dist": "constant", "ms": 1.0}, "jitter_ms": 0, "drop": 0.0,
                    "duplicate": 0.0})
    out["partition"] = t.str("partition", "stall", choices=PARTITION_MODES)
    out["links"] = []
    for i, item in enumerate(_tables(t.raw("links", None), "network.links", nonempty=False)):
        lt = Table(item, f"network.links[{i}]")
        link = {"src": check_node(lt.raw("src"), lt.path("src"), names),
                "dst": check_node(lt.raw("dst"), lt.path("dst"), names)}
        if link["src"] == link["dst"] or (link["src"], link["dst"]) in [
                (o["src"], o["dst"]) for o in out["links"]]:
            raise Bad(lt.path("dst"), f"link {link['src']}->{link['dst']} is a self-link or "
                      "listed twice", "give each directed link once, between two nodes")
        link.update(_link(lt, out))
        lt.done()
        out["links"].append(link)
    t.done()
    return out


# -- writing a scripted scenario back out ----------------------------------------------------
def scenario_to_toml(sc: Scenario, steps: list[FaultStep] | None = None) -> str:
    """`sc` as TOML with `steps` (default: its own) as [[faults]] and no mixes."""
    o = sc.options
    top = {"name": sc.name, "description": sc.description, "expect": sc.expect, "seed": sc.seed}
    if sc.invariants != ALL_INVARIANTS:
        top["invariants"] = sc.invariants
    lines = [f"{k} = {value_text(v)}" for k, v in top.items()]
    _table(lines, "[run]", o["run"])
    base = PROFILES[o["protocol"]["profile"]].to_json()
    proto = {"profile": o["protocol"]["profile"], "mutant": o["protocol"]["mutant"]}
    proto.update({k: v for k, v in o["protocol"].items() if k in base and v != base[k]})
    _table(lines, "[protocol]", proto)
    _table(lines, "[cluster]", o["cluster"])
    for section in ("topics", "producers", "consumers"):
        for item in o[section]:
            _table(lines, f"[[{section}]]", item)
    _table(lines, "[network]", {k: v for k, v in o["network"].items() if k != "links"})
    for link in o["network"]["links"]:
        _table(lines, "[[network.links]]", link)
    for step in sc.steps if steps is None else steps:
        at = {"at_ms": step.at_us // 1000} if step.at_us % 1000 == 0 else {"at_us": step.at_us}
        target = {} if step.target is None else {"target": step.target}
        _table(lines, "[[faults]]", {**at, "action": step.action, **target, **step.params})
    return "\n".join(lines) + "\n"


def _table(lines: list[str], header: str, values: dict) -> None:
    """Append a table header and its key = value lines."""
    lines += ["", header] + [f"{key_text(k)} = {value_text(v)}" for k, v in values.items()]
