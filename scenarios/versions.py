"""Per-node versions of a scenario file: `[protocol.brokers]`, `[protocol]
inter_broker_protocol`, and each client's `profile`.

Contract: values are read with `scenarios.tables` and errors raised as its `Bad`; nothing here
knows the file.
- `check_profile(value, key)` returns `value` as a profile name;
- `broker_profiles(value, brokers)` reads `[protocol.brokers]` (broker name -> profile);
- `control_plane(cluster, profile, brokers)` resolves `cluster.mode` for the profile;
- `node_versions(...)` returns `Options.nodes` (the brokers and clients on another profile than
  the run's, in node order) and `Options.inter_broker_protocol` ("" when it is the run's
  profile), refusing an IBP newer than a broker's or the controllers' profile: Kafka refuses
  to start a broker whose `inter.broker.protocol.version` its release does not know.
Controllers run the run's profile: in ZK mode the controller is one of the brokers, and what its
requests carry is the IBP's to decide (`sim.kafka.rules.inter_broker`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scenarios.tables import Bad, describe, suggest
from sim.kafka.modes import KRAFT, modes
from sim.kafka.profiles import PROFILES, newer


def check_profile(value: Any, key: str) -> str:
    """`value` as the name of a profile (a string: `2.5` unquoted is a float)."""
    if not isinstance(value, str):
        raise Bad(key, f"expected a profile name, got {describe(value)}",
                  f'quote it, e.g. "{value}"' if isinstance(value, int | float)
                  and not isinstance(value, bool) else f"use one of: {', '.join(PROFILES)}")
    if value not in PROFILES:
        raise Bad(key, f"unknown profile '{value}'", suggest(value, list(PROFILES)))
    return value


def broker_profiles(value: Any, brokers: int) -> dict[str, str]:
    """`[protocol.brokers]`: broker name (b1..bN) -> profile; empty when absent."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Bad("protocol.brokers", f"expected a table, got {describe(value)}",
                  'write [protocol.brokers] with lines such as b1 = "1.0"')
    names = [f"b{i}" for i in range(1, brokers + 1)]
    for name, profile in value.items():
        key = f"protocol.brokers.{name}"
        if name not in names:
            raise Bad(key, f"no broker '{name}' (cluster has b1..b{brokers})",
                      "name a broker b1..bN, or raise cluster.brokers")
        check_profile(profile, key)
    return dict(value)


def node_versions(profile: str, brokers: dict[str, str], clients: list[tuple[str, str | None]],
                  ibp: Any, broker_count: int) -> tuple[tuple[tuple[str, str], ...], str]:
    """(`Options.nodes`, `Options.inter_broker_protocol`) from the run's `profile`, the
    `[protocol.brokers]` table, each client's (name, profile or None) and the raw
    `inter_broker_protocol` (None when absent)."""
    ibp = profile if ibp is None else check_profile(ibp, "protocol.inter_broker_protocol")
    if newer(ibp, profile):
        raise Bad("protocol.inter_broker_protocol",
                  f"'{ibp}' is newer than the controllers' profile '{profile}' (controllers run "
                  "[protocol] profile), and a node does not start on an inter-broker protocol "
                  "its release does not know", "lower it, or raise [protocol] profile")
    for name in sorted(brokers, key=lambda n: int(n[1:])):
        if newer(ibp, brokers[name]):
            raise Bad(f"protocol.brokers.{name}",
                      f"'{brokers[name]}' is older than inter_broker_protocol '{ibp}', and a "
                      "broker does not start on an inter-broker protocol its release does not "
                      "know", f'give {name} "{ibp}" or newer, or set [protocol] '
                      f'inter_broker_protocol = "{brokers[name]}"')
    nodes = [(f"b{i}", brokers[f"b{i}"]) for i in range(1, broker_count + 1)
             if brokers.get(f"b{i}", profile) != profile]
    nodes += [(name, own) for name, own in clients if own is not None and own != profile]
    return tuple(nodes), "" if ibp == profile else ibp


def control_plane(cluster, profile: str, brokers: dict[str, str]):
    """`cluster` with its `mode` resolved: "" takes the profile's default
    (`sim.kafka.modes.modes`); a mode the release does not have is refused (4.0 has no
    ZooKeeper mode, a release before 3.3 no production KRaft), and so is a broker on another
    profile in a KRaft run (the KRaft model runs every broker on the run's profile)."""
    default, allowed = modes(profile)
    mode = cluster.mode or default
    if mode not in allowed:
        raise Bad("cluster.mode", f"profile '{profile}' has no {mode!r} mode (it runs "
                  f"{' or '.join(allowed)})",
                  f'write mode = "{allowed[0]}", or pick a profile that has {mode!r} mode')
    if mode == KRAFT and brokers:
        raise Bad("protocol.brokers", "per-broker profiles are not modelled in KRaft mode",
                  'remove [protocol.brokers], or set cluster.mode = "zk"')
    _check_initial_controllers(cluster, mode, profile)
    return replace(cluster, mode=mode)


def _check_initial_controllers(cluster, mode: str, profile: str) -> None:
    """`initial_controllers` (KIP-853's `--initial-controllers`, kraft.version 1) needs a
    KRaft cluster of 3.9 or later (`raft_dynamic_voters`) and names controllers it has."""
    n = cluster.initial_controllers
    if not n:
        return
    if mode != KRAFT or not PROFILES[profile].raft_dynamic_voters:
        raise Bad("cluster.initial_controllers", "a voter set in the log (kraft.version 1, "
                  "KIP-853) needs a KRaft cluster of 3.9 or later",
                  'set cluster.mode = "kraft" and a 3.9+ profile, or leave it out (static voters)')
    if n > cluster.controllers:
        raise Bad("cluster.initial_controllers", f"{n} exceeds cluster.controllers "
                  f"({cluster.controllers})", "lower it or raise cluster.controllers")
