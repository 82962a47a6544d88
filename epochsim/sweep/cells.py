"""Grid cells, their concrete scenarios, and the deterministic chunk plan of a sweep.

Contract:
- a cell is one combination of grid values (the cartesian product, in grid order); its id is
  a stable hash of its params (`cell_id`), the same on every machine and run;
- `set_option(doc, key, value)` edits a raw scenario dict at a dotted key path with the same
  mechanism as `epochsim run --set`; under a `*` index only elements that already hold the
  rest of the path change;
- `expand(spec)` returns one `Cell` per (scenario, params) with the cell's scenario TOML text,
  validated by `scenarios.schema.parse_scenario`; a bad value raises `UsageError` naming the
  spec file, the grid key and the value. Running the cell's TOML at a seed is exactly what the
  repro line `epochsim run OUT/cells/<scenario>-<cell>.toml --seed N` runs;
- `plan_chunks(spec, cells)` splits every cell's seeds into chunks of `seeds_per_task`; a
  chunk's id and file name depend only on the spec, so a rerun finds the same chunks.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass

from epochsim.errors import UsageError
from epochsim.sweep.spec import SweepSpec, bad, split_key
from epochsim.version import __version__
from scenarios.toml_text import dumps, value_text


class KeyPathError(Exception):
    """A grid key that does not fit a scenario: what is wrong and how to fix it."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem, self.fix = problem, fix


@dataclass(frozen=True)
class Cell:
    scenario: str      # the base scenario's name
    base_path: str     # the base scenario file
    cell: str          # cell id
    params: dict       # grid key -> value
    toml: str          # the concrete scenario

    @property
    def key(self) -> str:
        return f"{self.scenario}-{self.cell}"

    def toml_relpath(self) -> str:
        return os.path.join("cells", f"{self.key}.toml")


@dataclass(frozen=True)
class Chunk:
    scenario: str
    cell: str
    lo: int  # first seed
    hi: int  # one past the last seed

    @property
    def id(self) -> str:
        return f"{self.scenario}/{self.cell}/s{self.lo}-{self.hi - 1}"

    def relpath(self) -> str:
        """Where the chunk's rows live under OUT (Hive-style partition by scenario)."""
        return os.path.join("rows", f"scenario={self.scenario}",
                            f"{self.cell}-s{self.lo}-{self.hi - 1}.parquet")

    @property
    def runs(self) -> int:
        return self.hi - self.lo


def cell_id(params: dict) -> str:
    """A stable short hash of the params (types matter: 1, 1.0 and true differ)."""
    canon = json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(canon.encode(), digest_size=5).hexdigest()


def param_column(key: str) -> str:
    """The flattened Parquet column of a grid key: `p_` + the key with non-word chars as `_`."""
    return "p_" + re.sub(r"\W+", "_", key).strip("_")


def grid_cells(grid: dict) -> list[dict]:
    """The cartesian product of the grid's values, first key varying slowest."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


_MISSING = object()


def set_option(doc: dict, key: str, value, path: str = "<scenario>") -> int:
    """Set `key` in `doc` in place through `scenarios.schema.apply_overrides` (the mechanism
    behind `epochsim run --set`); returns how many places changed. `[N]` is read as `.N`, and
    each `*` stands for every element that already holds the rest of the path. Raises
    KeyPathError for a `*` that matches nothing, ScenarioError for a path that does not fit."""
    from scenarios.schema import apply_overrides

    keys = [".".join(parts) for parts in _expand(doc, split_key(key))]
    if not keys:
        raise KeyPathError("no element of the array holds the rest of this key",
                           "name a key that some element has after '*'")
    apply_overrides(doc, {k: value for k in keys}, path)
    return len(keys)


def _expand(node, parts: list[str]) -> list[list[str]]:
    """The concrete paths of `parts` under `node`, each `*` replaced by element indices."""
    if "*" not in parts:
        return [parts]
    i = parts.index("*")
    head, rest = parts[:i], parts[i + 1:]
    if not rest:
        raise KeyPathError(f"'{'.'.join(parts)}' would replace every element", "add a key after '*'")
    array = _get(node, head)
    if not isinstance(array, list):
        raise KeyPathError(f"{'.'.join(head)} is not an array of tables in this scenario",
                           "put '*' after an array the scenario has, e.g. mix.*.every_ms")
    return [head + [str(n)] + tail for n, item in enumerate(array)
            for tail in _expand(item, rest) if _get(item, tail) is not _MISSING]


def _get(node, parts: list[str]):
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isascii() and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def cell_doc(raw: dict, params: dict, name: str, path: str = "<scenario>") -> dict:
    """A copy of the raw scenario with the params set; the name stays the base scenario's."""
    doc = copy.deepcopy(raw)
    for key, value in params.items():
        set_option(doc, key, value, path)
    doc.pop("name", None)
    return {"name": name, **doc}


def cell_toml(doc: dict, cell: str, base_path: str, params: dict) -> str:
    # The base file's name only: the text enters the plan's fingerprint, and a resume from
    # another working directory must still match.
    head = [f"# sweep cell {cell} of {os.path.basename(base_path)}"]
    head += [f"#   {k} = {value_text(v)}" for k, v in params.items()]
    return "\n".join(head) + "\n" + dumps(doc)


def expand(spec: SweepSpec) -> list[Cell]:
    """Every (scenario, cell), each validated as a scenario; see the module contract."""
    from scenarios.schema import ScenarioError, parse_scenario

    cells: list[Cell] = []
    combos = grid_cells(spec.grid)
    for base in spec.scenarios:
        _check_each_value(spec, base)
        for params in combos:
            cid = cell_id(params)
            text = cell_toml(cell_doc(base.raw, params, base.name, base.path), cid, base.path,
                             params)
            try:
                parse_scenario(text, base.path)
            except ScenarioError as err:
                shown = ", ".join(f"{k} = {value_text(v)}" for k, v in params.items())
                raise UsageError(f"{spec.path}: grid cell ({shown}) is not a valid "
                                 f"{base.path}: {err.key}: {err.problem}; {err.fix}") from None
            cells.append(Cell(base.name, base.path, cid, params, text))
    _check_columns(spec)
    return cells


def _check_each_value(spec: SweepSpec, base) -> None:
    """Each grid value alone on the base scenario, so an error names its key and value."""
    from scenarios.schema import ScenarioError, parse_scenario

    for key, values in spec.grid.items():
        for value in values:
            try:
                doc = cell_doc(base.raw, {key: value}, base.name, base.path)
                parse_scenario(dumps(doc), base.path)
            except KeyPathError as err:
                raise bad(spec.path, f"grid.{key}", f"in {base.path}: {err.problem}",
                          err.fix) from None
            except ScenarioError as err:
                raise bad(spec.path, f"grid.{key}", f"value {value_text(value)} is not valid "
                          f"for {base.path} ({err.key}: {err.problem})", err.fix) from None


def _check_columns(spec: SweepSpec) -> None:
    seen: dict[str, str] = {}
    for key in spec.grid:
        col = param_column(key)
        if col in seen:
            raise bad(spec.path, f"grid.{key}", f"flattens to the same column {col} as "
                      f"'{seen[col]}'", "spell both keys the same way (e.g. mix[0] or mix.0)")
        seen[col] = key


def plan_chunks(spec: SweepSpec, cells: list[Cell]) -> list[Chunk]:
    """Each cell's seed range cut into chunks of `seeds_per_task`, in cell order."""
    seeds = spec.seed_range()
    step = spec.seeds_per_task
    return [Chunk(c.scenario, c.cell, lo, min(lo + step, seeds.stop))
            for c in cells for lo in range(seeds.start, seeds.stop, step)]


def fingerprint(spec: SweepSpec, cells: list[Cell]) -> str:
    """Everything that decides the rows: a resumed sweep must match it exactly."""
    h = hashlib.blake2b(digest_size=16)
    plan = {"seeds": spec.seeds, "first_seed": spec.first_seed,
            "seeds_per_task": spec.seeds_per_task, "harness_version": __version__,
            "grid": list(spec.grid), "cells": [(c.key, c.toml) for c in cells]}
    h.update(json.dumps(plan, sort_keys=True, default=repr).encode())
    return h.hexdigest()
