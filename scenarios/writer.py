"""Writing a scenario back out as TOML: the scripted scenario a replay or a shrunk case runs.

Contract: `scenario_to_toml(sc, steps)` writes a scripted scenario (same options, `steps` as
its faults, no mixes) that `scenarios.schema.parse_scenario` reads back to equal options and
steps; `scripted_toml` does so from the parts a trace header records (options as JSON, as
`sim.kafka.options.Options.to_json` writes them, per-node versions included).
"""

from __future__ import annotations

from scenarios.schema import Scenario, default_invariants
from scenarios.toml_text import key_text, value_text
from sim.core.faults import FaultStep
from sim.kafka.profiles import PROFILES


def scenario_to_toml(sc: Scenario, steps: list[FaultStep] | None = None) -> str:
    """`sc` as TOML with `steps` (default: its own) as [[faults]] and no mixes."""
    top = {"name": sc.name, "description": sc.description, "expect": sc.expect, "seed": sc.seed}
    return scripted_toml(top, sc.invariants, sc.options.to_json(),
                         sc.steps if steps is None else steps)


def scripted_toml(top: dict, invariants: list[str], o: dict, steps: list[FaultStep]) -> str:
    """A scripted scenario as TOML: the `top` keys (name, description, expect, seed), the
    `invariants`, the options `o` as `Options.to_json` writes them, `steps` as [[faults]]."""
    top = dict(top)
    if invariants != default_invariants(o["cluster"].get("mode", "zk")):
        top["invariants"] = invariants
    lines = [f"{k} = {value_text(v)}" for k, v in top.items()]
    _table(lines, "[run]", o["run"])
    protocol = o["protocol"]
    base = PROFILES[protocol["profile"]].to_json(kraft=True)
    proto = {"profile": protocol["profile"], "mutant": protocol["mutant"]}
    if "inter_broker_protocol" in protocol:
        proto["inter_broker_protocol"] = protocol["inter_broker_protocol"]
    proto.update({k: v for k, v in protocol.items() if k in base and v != base[k]})
    _table(lines, "[protocol]", proto)
    nodes = {name: node["profile"] for name, node in protocol.get("nodes", {}).items()}
    brokers = {name: profile for name, profile in nodes.items() if name not in _clients(o)}
    if brokers:
        _table(lines, "[protocol.brokers]", brokers)
    # the options left to their release default stay left out, so that a broker on another
    # profile still takes its own release's (`Options.cluster_on`)
    defaulted = {"defaulted", *o["cluster"].get("defaulted", ())}
    _table(lines, "[cluster]", {k: v for k, v in o["cluster"].items() if k not in defaulted})
    for section in ("topics", "producers", "consumers"):
        for item in o[section]:
            own = {"profile": nodes[item["name"]]} if section != "topics" and item["name"] in nodes \
                else {}
            _table(lines, f"[[{section}]]", {**item, **own})
    _table(lines, "[network]", {k: v for k, v in o["network"].items() if k != "links"})
    for link in o["network"]["links"]:
        _table(lines, "[[network.links]]", link)
    for step in steps:
        at = {"at_ms": step.at_us // 1000} if step.at_us % 1000 == 0 else {"at_us": step.at_us}
        target = {} if step.target is None else {"target": step.target}
        _table(lines, "[[faults]]", {**at, "action": step.action, **target, **step.params})
    return "\n".join(lines) + "\n"


def _clients(o: dict) -> set[str]:
    return {c["name"] for section in ("producers", "consumers") for c in o[section]}


def _table(lines: list[str], header: str, values: dict) -> None:
    """Append a table header and its key = value lines."""
    lines += ["", header] + [f"{key_text(k)} = {value_text(v)}" for k, v in values.items()]
