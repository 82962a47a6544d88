"""The KIP-951 study on KRaft clusters: the same scenarios, with a controller quorum whose
metadata log each broker fetches and applies at its own pace (docs/kip-951-study.md, "On KRaft").

Contract: `KraftSettings` names the variant (`apply_us`, `fetch_wait_ms`: the cluster's
`metadata_apply_us` / `metadata_fetch_wait_ms` when given; `slow`: (broker, delay_ms) for a
`slow_metadata` step at 0 ms; `profile`: the release profile, when given). `kraft_text(text, path, settings)` validates the study scenario
TOML `text` as that variant, `kraft_scenario(path, settings)` the file at `path`: the scenario
as written, with `cluster.mode = "kraft"`, `cluster.controllers = 3`, its own profile (3.7 for
the study's, the first release with KIP-951) or the one `profile` names, and every `[[network.links]]` to or from a
controller dropped. Those links gave the ZooKeeper-mode controller a constant latency so that
every broker learned a leadership change at the same instant (assumption 4 of the study); on
KRaft there is nothing to hold constant: a broker learns a change when its own Fetch of the
metadata log returns and it has applied the records. The variant's name says what it is
(`<name>-kraft`, `<name>-kraft-slow-b2-200ms`, `<name>-kraft-4.1`), so its rows never merge with the
ZooKeeper-mode rows. The variant's timeline starts `START_SHIFT_MS` later (its faults, its
clients' start and stop, its end; `warmup_us` gives its warm-up). A bad value is a `ScenarioError` naming the key, as any scenario's.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

from scenarios.limits import MAX_SCENARIO_BYTES
from scenarios.schema import load_scenario, parse_scenario
from sim.core.files import read_regular

VOTERS = 3
# A KRaft cluster comes up later than a ZooKeeper-mode one: the voters elect a leader after
# quorum.election.timeout.ms (1-2 s), then brokers register, catch up and are unfenced, then the
# topic's records commit (about 1.5 s in the study's clusters). Followers that learn of a
# partition before its leader get UNKNOWN_TOPIC_OR_PARTITION and back off
# replica.fetch.backoff.ms (1 s). The variant's whole timeline (faults, clients, the run, the
# warm-up) moves this much later, so that what is measured starts on a settled cluster.
START_SHIFT_MS = 3000
CONTROLLER = re.compile(r"c\d+\Z")


@dataclass(frozen=True)
class KraftSettings:
    apply_us: int | None = None  # cluster.metadata_apply_us (None: the scenario's or default)
    fetch_wait_ms: int | None = None  # cluster.metadata_fetch_wait_ms
    slow: tuple[str, float] | None = None  # (broker, delay_ms): slow_metadata from 0 ms
    profile: str | None = None  # protocol.profile (None: the scenario's own)

    def suffix(self) -> str:
        """What the variant adds to a scenario's name."""
        out = "-kraft" if self.profile is None else f"-kraft-{self.profile}"
        if self.apply_us is not None:
            out += f"-apply-{self.apply_us}us"
        if self.fetch_wait_ms is not None:
            out += f"-wait-{self.fetch_wait_ms}ms"
        if self.slow is not None:
            out += f"-slow-{self.slow[0]}-{self.slow[1]:g}ms"
        return out


def overrides(data: dict, name: str, settings: KraftSettings) -> dict:
    """The dotted-key overrides that turn the raw study scenario `data`, named `name`, into
    its variant."""
    out: dict = {"name": name + settings.suffix(), "cluster.mode": "kraft",
                 "cluster.controllers": VOTERS}
    if settings.apply_us is not None:
        out["cluster.metadata_apply_us"] = settings.apply_us
    if settings.fetch_wait_ms is not None:
        out["cluster.metadata_fetch_wait_ms"] = settings.fetch_wait_ms
    if settings.profile is not None:
        out["protocol.profile"] = settings.profile
    network = data.get("network")
    if isinstance(network, dict) and isinstance(network.get("links"), list):
        out["network.links"] = [link for link in network["links"]
                                if not _touches_controller(link)]
    out.update(_shifted(data))
    if settings.slow is not None:
        broker, delay_ms = settings.slow
        out["faults"] = [{"at_ms": 0, "action": "slow_metadata", "target": broker,
                          "delay_ms": delay_ms}] + out.get("faults", [])
    return out


def _shifted(data: dict) -> dict:
    """Overrides that move the scenario's faults, clients and end START_SHIFT_MS later."""
    out: dict = {}
    run = data.get("run") if isinstance(data.get("run"), dict) else {}
    if isinstance(run.get("duration_ms"), int):
        out["run.duration_ms"] = run["duration_ms"] + START_SHIFT_MS
    faults = data.get("faults") if isinstance(data.get("faults"), list) else []
    out["faults"] = [{**f, "at_ms": f["at_ms"] + START_SHIFT_MS}
                     if isinstance(f, dict) and isinstance(f.get("at_ms"), (int, float)) else f
                     for f in faults]
    for section in ("producers", "consumers"):
        clients = data.get(section) if isinstance(data.get(section), list) else []
        for i, client in enumerate(clients):
            for key in ("start_ms", "stop_ms"):
                value = client.get(key, 0)
                if isinstance(value, (int, float)) and (value or key == "start_ms"):
                    out[f"{section}.{i}.{key}"] = value + START_SHIFT_MS
    return out


def warmup_us(base_us: int) -> int:
    """The warm-up of a KRaft variant whose ZooKeeper-mode scenario warms up `base_us`."""
    return base_us + START_SHIFT_MS * 1000


def _touches_controller(link) -> bool:
    return isinstance(link, dict) and any(isinstance(link.get(end), str)
                                          and CONTROLLER.match(link[end])
                                          for end in ("src", "dst"))


def kraft_text(text: str, path: str, settings: KraftSettings):
    """The KRaft variant of the study scenario TOML `text` (`path` names it in errors)."""
    base = parse_scenario(text, path)  # the scenario as written must be valid first
    return parse_scenario(text, path, overrides(tomllib.loads(text), base.name, settings))


def kraft_scenario(path: str, settings: KraftSettings):
    """The KRaft variant of the study scenario file at `path`."""
    load_scenario(path)  # a missing or unreadable file is named as the loader names it
    return kraft_text(read_regular(path, MAX_SCENARIO_BYTES).decode("utf-8"), path, settings)
