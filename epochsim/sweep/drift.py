"""What a sweep's cells differ in beyond their grid keys: Kafka's defaults that follow the
release (`sim.kafka.defaults`), which a grid over `protocol.profile` (or a client's profile)
moves along with the switches.

Contract: `default_drift(cells)` returns one line per (scenario, option) whose resolved value
differs between the cells of one base scenario while no grid key of the cell names it, such
as `kip101-leader-moves: cluster.unclean_leader_election is true for protocol.profile =
"0.10.2", false for ...`; [] when the cells differ only in what the grid sets. A sweep reads a
difference in violation rates as what its grid keys buy, so it says which other configs moved
(the driver prints the lines and keeps them in sweep.json as `default_drift`).
"""

from __future__ import annotations

from epochsim.moved_defaults import release_values
from epochsim.sweep.spec import split_key
from scenarios.toml_text import value_text


def default_drift(cells: list) -> list[str]:
    """See the module contract. `cells` are `epochsim.sweep.cells.Cell`s (their TOML text is
    a valid scenario: `expand` checked it)."""
    by_base: dict[str, list] = {}
    for cell in cells:
        by_base.setdefault(cell.scenario, []).append(cell)
    lines = []
    for scenario, group in by_base.items():
        resolved = [(cell, _release_options(cell.toml)) for cell in group]
        for name in resolved[0][1]:
            values = {}
            for cell, found in resolved:
                seen = values.setdefault(found.get(name), [])
                label = _label(cell.params)
                if label not in seen:
                    seen.append(label)
            if len(values) > 1 and not any(_names(key, name) for key in group[0].params):
                lines.append(f"{scenario}: {name} is " + "; ".join(
                    f"{value_text(v)} for {' / '.join(cells_of)}" for v, cells_of in values.items()))
    return lines


def _release_options(text: str) -> dict:
    """The release-dependent options of the scenario `text`, by name (`cluster.x`,
    `producers[0].acks`, ...)."""
    from scenarios.schema import parse_scenario

    return release_values(parse_scenario(text, "<cell>").options)


def _names(grid_key: str, option: str) -> bool:
    """Whether the grid key sets the option (`producers.*.acks` sets `producers[0].acks`)."""
    parts, wanted = split_key(grid_key), split_key(option)
    return len(parts) == len(wanted) and all(p in ("*", w) for p, w in zip(parts, wanted))


def _label(params: dict) -> str:
    """A cell named by its profile keys (what moves the defaults), else by every key."""
    shown = {k: v for k, v in params.items() if k.endswith("profile")} or params
    return ", ".join(f"{k} = {value_text(v)}" for k, v in shown.items())
