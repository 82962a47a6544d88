"""A scenario's `[probe]` table and its `expect`, checked for the scenario loader.

Contract: `probe_section(raw, cluster, producers, protocol, faults)` returns the `Probe` of a `[probe]` table
(`sim.kafka.probe.spec`), turning its problems into the loader's `Bad` under `probe.<key>`;
`probe_expect(top)` reads a probe's `expect`, which can only be "agree" (its default).
"""

from __future__ import annotations

from typing import Any

from scenarios.tables import Bad, Table
from sim.kafka.probe.fields import FieldProblem
from sim.kafka.probe.run import check_probe_state
from sim.kafka.probe.spec import Probe, parse_probe


def probe_section(raw: Any, options, faults: list) -> Probe:
    """The `[probe]` table, checked as far as a run would check it: its fields, and the
    starting state built on the node under test (nothing runs)."""
    if faults:
        raise Bad("faults", "a probe runs no faults or mixes",
                  "remove them, or drop [probe] to make it a scenario")
    cluster = options.cluster
    try:
        probe = parse_probe(raw, cluster.brokers, cluster.controllers,
                            [p.name for p in options.producers], options.protocol,
                            [c.name for c in options.consumers], options.kraft,
                            options.protocol_of)
        check_probe_state(options, probe)
    except FieldProblem as err:
        raise Bad(_key(err.key), err.problem, err.fix) from None
    return probe


def _key(key: str) -> str:
    """A problem's key as the scenario writes it: the state's `node.` is `probe.state.`."""
    if key.startswith("node."):
        return "probe.state." + key[len("node."):]
    return key if key.startswith("probe") else f"probe.{key}"


def probe_expect(top: Table) -> str:
    """A probe's `expect` is "agree" (every expectation of its steps holds), the default."""
    expect = top.str("expect", "agree")
    if expect != "agree":
        raise Bad("expect", f"a probe expects {expect!r}", 'write expect = "agree", or leave it out')
    return expect
