"""The release-dependent options of a resolved scenario, and what a profile change moved.

Contract: `release_values(options)` names each option whose Kafka default follows the release
(`sim.kafka.defaults`) with its resolved value (`cluster.x`, `producers[0].acks`, ...);
`moved_defaults(before, after)` lists `name was -> now` for those that differ between two
resolutions of one scenario (without and with a command line's `--profile`: run, suite and
explore print it as a note; a sweep's `default_drift` reads `release_values` of each cell).
"""

from __future__ import annotations

from scenarios.toml_text import value_text
from sim.kafka.defaults import KRAFT_DEFAULTS, RELEASE_DEFAULTS

_OPTIONS = tuple(dict.fromkeys([*RELEASE_DEFAULTS, *KRAFT_DEFAULTS]))  # table order, once each


def release_values(o) -> dict:
    """The release-dependent options of resolved `Options` `o`, by name (`cluster.x`,
    `producers[0].acks`, ...)."""
    records = {"cluster": [o.cluster], "topics": list(o.topics),
               "producers": list(o.producers), "consumers": list(o.consumers)}
    out = {}
    for section, key in _OPTIONS:
        for i, record in enumerate(records[section]):
            name = f"{section}.{key}" if section == "cluster" else f"{section}[{i}].{key}"
            out[name] = getattr(record, key)
    return out


def moved_defaults(before, after) -> list[str]:
    """`name was -> now` for each release-dependent option that differs between two resolved
    `Options` of one scenario (without and with a command line's profile)."""
    old, new = release_values(before), release_values(after)
    return [f"{name} {value_text(old[name])} -> {value_text(new[name])}"
            for name in new if name in old and old[name] != new[name]]
