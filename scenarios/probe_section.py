"""A scenario's `[probe]` table and its `expect`, checked for the scenario loader.

Contract: `probe_section(raw, cluster, producers, protocol, faults)` returns the `Probe` of a `[probe]` table
(`sim.kafka.probe.spec`), turning its problems into the loader's `Bad` under `probe.<key>`;
`probe_expect(top)` reads a probe's `expect`, which can only be "agree" (its default).
"""

from __future__ import annotations

from typing import Any

from scenarios.tables import Bad, Table
from sim.kafka.options import ClusterOptions
from sim.kafka.probe.fields import FieldProblem
from sim.kafka.probe.spec import Probe, parse_probe


def probe_section(raw: Any, cluster: ClusterOptions, producers: list, protocol,
                  faults: list) -> Probe:
    if faults:
        raise Bad("faults", "a probe runs no faults or mixes",
                  "remove them, or drop [probe] to make it a scenario")
    try:
        return parse_probe(raw, cluster.brokers, cluster.controllers, [p.name for p in producers],
                           protocol)
    except FieldProblem as err:
        key = err.key if err.key.startswith("probe") else f"probe.{err.key}"
        raise Bad(key, err.problem, err.fix) from None


def probe_expect(top: Table) -> str:
    """A probe's `expect` is "agree" (every expectation of its steps holds), the default."""
    expect = top.str("expect", "agree")
    if expect != "agree":
        raise Bad("expect", f"a probe expects {expect!r}", 'write expect = "agree", or leave it out')
    return expect
