"""Scenario files: load a TOML scenario, validate every key, resolve all defaults.

Contract:
- `load_scenario(path)` / `parse_scenario(text, path)` return a `Scenario` whose `options`
  (`sim.kafka.options.Options`) hold every setting with its default filled in, each checked
  against the type, default and limit its dataclass field declares, whose `steps` are
  the scripted faults as `FaultStep`s sorted by time, and whose `mixes` are the random fault
  mixes, resolved, in file order;
- any bad input raises `ScenarioError`, whose message is one line:
  "<file>: <key path>: <what is wrong>; <how to fix>";
- `scenarios.writer` writes a scenario back out as TOML (a scripted one, for replays).
The format is documented for users in docs/scenarios.md. Parts of it are checked in their own
modules: the table reader and its error in `scenarios.tables`, fault actions and mixes in
`scenarios.actions`, producers and consumers in `scenarios.clients`, per-node versions in
`scenarios.versions`, the network in `scenarios.network_options`.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from scenarios.actions import (
    check_faults,
    check_mixes,
    check_topic_name,
    created_topics,
)
from scenarios.clients import (
    check_clients,
    clients,
    consumer,
    producer,
    release_options,
    unique_nodes,
)
from scenarios.limits import MAX_SCENARIO_BYTES, check_counts, check_partitions
from scenarios.live import live_section
from scenarios.network_options import fetch_takes_time, network
from scenarios.probe_section import probe_expect, probe_section
from scenarios.tables import (
    Bad,
    Names,
    Table,
    check_int,
    check_list,
    suggest,
    tables,
    unknown_key,
    wrap,
)
from scenarios.versions import broker_profiles, control_plane, node_versions
from sim.core.files import FileProblem, read_regular
from sim.kafka.defaults import release_default
from sim.kafka.options import ClusterOptions, Options, RunOptions, TopicOptions
from sim.kafka.probe.spec import Probe
from sim.kafka.profiles import MUTANTS, PROFILES, Protocol, resolve_protocol, switch_names

ALL_INVARIANTS: list[str] = [
    "single_leader_per_epoch", "leader_epoch_monotonic", "stale_leader_append",
    "stop_replica_out_of_order", "stray_replica", "under_replicated_after_heal",
    "produce_stalled_after_heal", "consume_stalled_after_heal", "acked_write_lost",
    "log_divergence", "high_watermark_monotonic", "duplicate_append", "out_of_order_append",
    "spurious_out_of_order_sequence", "unreported_data_loss", "idempotence_mode_violated",
    "client_leader_epoch_regression", "leader_hint_misapplied", "consumer_skipped_record",
    "metadata_log_safety", "metadata_applied_in_order", "fenced_broker_ack",
    "demoted_leader_append", "isr_answer_before_commit", "broker_metadata_stalled",
    "voter_changes_one_at_a_time",
]
# checked by default only in KRaft mode (a ZooKeeper-mode run's default list stays as it was)
KRAFT_INVARIANTS = ("metadata_log_safety", "metadata_applied_in_order", "fenced_broker_ack",
                    "demoted_leader_append", "isr_answer_before_commit", "broker_metadata_stalled",
                    "voter_changes_one_at_a_time")


def default_invariants(mode: str) -> list[str]:
    """The invariants a scenario in `mode` ("zk" or "kraft") checks when it lists none."""
    return [i for i in ALL_INVARIANTS if mode == "kraft" or i not in KRAFT_INVARIANTS]
SECTIONS = ("run", "protocol", "cluster", "topics", "producers", "consumers", "network",
            "faults", "mix", "probe", "live", "live_clients")
_TABLES = ("run", "protocol", "cluster", "network")  # the other sections are arrays of tables


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
    options: Options
    steps: list
    mixes: list
    invariants: list
    probe: Probe | None = None  # one Kafka unit test posed to the model (docs/scenarios.md)
    live: Any = None  # scenarios.live.LiveOptions: what `epochsim serve` runs beside it


def load_scenario(path: str, overrides: dict | None = None) -> Scenario:
    """Read and validate the scenario file at `path`, with dotted-key `overrides` applied
    (e.g. `{"protocol.profile": "2.5", "producers.0.acks": 1}`) before validation."""
    try:
        text = read_regular(path, MAX_SCENARIO_BYTES).decode("utf-8")
    except FileProblem as err:
        raise ScenarioError(path, "file", err.problem, err.fix) from None
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
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        raise ScenarioError(path, "file", f"cannot read: {getattr(err, 'strerror', None) or err}",
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
    except ValueError:  # tomllib: an integer of more digits than Python converts (4300)
        raise ScenarioError(path, "file", "holds an integer too long to read (over 4300 "
                            "digits)", "scenario numbers stop at 2**53; write a smaller one") from None
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
    is_probe = raw["probe"] is not None
    invariants = _invariants(top, default=[] if is_probe else ALL_INVARIANTS)
    expect = probe_expect(top) if is_probe else _expect(top, invariants)
    seed = top.int("seed", 1, lo=0)
    top.done()  # before the sections: a misspelled [[faults]] is named, not silently empty
    check_counts(raw)
    run = _run(raw["run"])
    cluster = _cluster(raw["cluster"])
    topics = _topics(raw["topics"], cluster.brokers, nonempty=not is_probe)
    declared = Names(cluster.brokers, cluster.controllers, [],
                     {t.name: t.partitions for t in topics})
    producers, producer_profiles = clients(raw["producers"], "producers", "p", producer,
                                           declared, run)
    consumers, consumer_profiles = clients(raw["consumers"], "consumers", "k", consumer,
                                           declared, run)
    client_names = [c.name for c in producers + consumers]
    unique_nodes(client_names, producers, consumers, declared)
    names = Names(cluster.brokers, cluster.controllers, client_names, dict(declared.topics),
                  cluster.log_dirs)
    for topic, parts in created_topics(raw["faults"], raw["mix"]).items():
        names.topics[topic] = max(names.topics.get(topic, 0), parts)
    check_partitions(names.topics)
    protocol, profile, brokers, ibp = _protocol(raw["protocol"], cluster.brokers)
    cluster = control_plane(cluster, profile, brokers)
    invariants = _mode_invariants(invariants, expect, cluster.mode, given=top.raw("invariants",
                                                                                  None) is not None)
    own = [(c.name, p) for c, p in zip(producers + consumers, producer_profiles + consumer_profiles)]
    nodes, ibp = node_versions(profile, brokers, own, ibp, cluster.brokers)
    options = Options(run=run, protocol=protocol, profile=profile, cluster=cluster,
                      topics=tuple(topics), producers=tuple(producers),
                      consumers=tuple(consumers), network=network(raw["network"], names),
                      nodes=nodes, inter_broker_protocol=ibp)
    options = release_options(options, raw)
    names.message_format, names.elect_leaders = (release_default("topics", "message_format", profile),
                                                  protocol.admin_elect_leaders)
    check_clients(options)
    fetch_takes_time(options)
    steps = check_faults(tables(raw["faults"], "faults", False), names, run)
    mixes = check_mixes(tables(raw["mix"], "mix", False), names, run)
    probe = probe_section(raw["probe"], options, steps + mixes) if is_probe else None
    live = live_section(raw["live"], raw["live_clients"], names)
    return Scenario(name, path, description, expect, seed, options, steps, mixes, invariants,
                    probe, live)


def _invariants(top: Table, default: list[str] = ALL_INVARIANTS) -> list[str]:
    """The invariants to check: names from ALL_INVARIANTS, each once (default: `default`)."""
    value = top.raw("invariants", None)
    if value is None:
        return list(default)
    for i, item in enumerate(check_list(value, "invariants")):
        key = f"invariants[{i}]"
        if item not in ALL_INVARIANTS:
            raise Bad(key, f"unknown invariant {item!r}", suggest(str(item), ALL_INVARIANTS))
        if item in value[:i]:
            raise Bad(key, f"{item!r} is listed twice", "list each invariant once")
    return list(value)


def _mode_invariants(invariants: list[str], expect: str, mode: str, given: bool) -> list[str]:
    """The default list without the KRaft invariants in ZooKeeper mode (a list written in the
    file is kept as written)."""
    if given or mode == "kraft":
        return invariants
    if expect.partition(":")[2] in KRAFT_INVARIANTS:
        raise Bad("expect", f"{expect!r} is a KRaft invariant and the run is in ZooKeeper mode",
                  'set cluster.mode = "kraft", or list the invariants to check')
    return [i for i in invariants if i not in KRAFT_INVARIANTS]  # a probe's [] stays []


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


def _section(t: Table, cls) -> dict:
    """Every field of the options dataclass `cls` read from table `t`, in field order."""
    return {f.name: t.option(cls, f.name) for f in fields(cls)}


def _run(raw: Any) -> RunOptions:
    """[run]: duration, event cap and the quiet settle time at the end."""
    t = Table(raw, "run")
    out = RunOptions(**_section(t, RunOptions))
    t.done()
    if out.settle_ms >= out.duration_ms:
        raise Bad("run.settle_ms", f"{out.settle_ms} is not below run.duration_ms = "
                  f"{out.duration_ms}", "lower settle_ms or raise duration_ms")
    return out


_PROTOCOL_KEYS = ("profile", "mutant", "inter_broker_protocol", "brokers")


def _protocol(raw: Any, brokers: int) -> tuple[Protocol, str, dict, Any]:
    """[protocol]: profile, mutant and switch overrides, resolved to every switch's value;
    returns the switches, the profile, the [protocol.brokers] profiles and the raw
    inter_broker_protocol (None when absent; `scenarios.versions` checks it)."""
    t = Table(raw, "protocol")
    profile = t.str("profile", "proposed", choices=list(PROFILES))
    mutant = t.str("mutant", "")
    if mutant and mutant not in MUTANTS:
        raise Bad("protocol.mutant", f"unknown mutant {mutant!r}", suggest(mutant, list(MUTANTS)))
    overrides = {k: v for k, v in t.data.items() if k not in _PROTOCOL_KEYS}
    for key in overrides:
        if key not in switch_names():
            raise unknown_key(f"protocol.{key}", key, [*_PROTOCOL_KEYS, *switch_names()])
    try:
        protocol = resolve_protocol(profile, overrides, mutant)
    except ValueError as err:
        raise wrap(err, "protocol", "see docs/profiles.md for each switch") from None
    return (protocol, profile, broker_profiles(t.raw("brokers", None), brokers),
            t.raw("inter_broker_protocol", None))


def _cluster(raw: Any) -> ClusterOptions:
    """[cluster]: sizes and the timeouts of brokers and controllers (ms, ints)."""
    t = Table(raw, "cluster")
    out = ClusterOptions(**_section(t, ClusterOptions))
    t.done()
    return out


def _topics(value: Any, brokers: int, nonempty: bool = True) -> list[TopicOptions]:
    """[[topics]]: at least one (a probe may have none), unique names, replica assignment
    filled in."""
    out: list[TopicOptions] = []
    for i, item in enumerate(tables(value, "topics", nonempty=nonempty)):
        t, key = Table(item, f"topics[{i}]"), f"topics[{i}]"
        name = check_topic_name(t.str("name"), f"{key}.name")
        if name in [o.name for o in out]:
            raise Bad(f"{key}.name", f"duplicate topic {name!r}", "give each topic its own name")
        given = t.raw("assignment", None)
        # an explicit assignment implies the replication factor, as kafka-topics'
        # --replica-assignment does; every list must then have that many replicas
        implied = (len(given[0]) if isinstance(given, list) and given
                   and isinstance(given[0], list) and given[0] else min(3, brokers))
        partitions = t.option(TopicOptions, "partitions")
        rf = t.option(TopicOptions, "replication_factor", implied)
        if rf > brokers:
            raise Bad(f"{key}.replication_factor", f"{rf} exceeds the broker count (cluster has "
                      f"{brokers} brokers: b1..b{brokers})", "lower it or raise cluster.brokers")
        rest = {name: t.option(TopicOptions, name)
                for name in ("message_format", "retention_ms", "segment_ms")}
        assignment = _assignment(given, f"{key}.assignment", partitions, rf, brokers)
        t.done()
        out.append(TopicOptions(name=name, partitions=partitions, replication_factor=rf, **rest,
                                assignment=tuple(tuple(r) for r in assignment)))
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
