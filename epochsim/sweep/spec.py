"""The sweep spec file: which scenarios, which grid of option values, how many seeds.

Contract: `load_spec(path, seeds=None, seeds_per_task=None)` reads and checks the spec's own
keys and returns a `SweepSpec`; command-line overrides replace the file's `seeds` and
`seeds_per_task`. Scenario paths resolve against the spec's directory first, then the working
directory, and every scenario is loaded and validated here. Any mistake raises `UsageError`
with one line naming the spec file and the key: "<spec>: <key>: <problem>; <fix>". Whether
each grid value suits each scenario is checked by `epochsim.sweep.cells`, also before anything
runs. The format is documented in docs/sweeps.md.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from dataclasses import dataclass
from typing import Any

from epochsim.errors import UsageError, path_problem
from sim.core.files import FileProblem, read_regular

TOP_KEYS = ("name", "description", "scenarios", "seeds", "first_seed", "seeds_per_task",
            "traces_per_invariant", "grid")
DEFAULT_SEEDS = 100
# Large enough that Spark's per-task cost (~30 ms) is a few percent of a task of 10-500 ms
# runs, small enough that a 2-core sweep of a few hundred runs still splits into many tasks.
DEFAULT_SEEDS_PER_TASK = 20
DEFAULT_TRACES_PER_INVARIANT = 5
# Grid keys start at a scenario section or one of these top-level keys. `name` and `seed` are
# not sweepable: rows keep the base scenario's name, and sweep seeds come from the spec.
SWEEPABLE_TOP = ("run", "protocol", "cluster", "topics", "producers", "consumers", "network",
                 "faults", "mix", "description", "expect", "invariants")
NAME_RE = re.compile(r"[A-Za-z0-9._-]+")
_INDEX_RE = re.compile(r"\[(\d+|\*)\]")


@dataclass(frozen=True)
class BaseScenario:
    """One scenario the spec names: its resolved name and path, raw TOML dict and source."""

    name: str
    path: str
    raw: dict
    text: str


@dataclass(frozen=True)
class SweepSpec:
    path: str
    name: str
    description: str
    scenarios: tuple
    grid: dict  # dotted key -> list of values, in file order
    seeds: int
    first_seed: int
    seeds_per_task: int
    traces_per_invariant: int

    def seed_range(self) -> range:
        return range(self.first_seed, self.first_seed + self.seeds)

    def to_json(self) -> dict:
        return {"path": self.path, "name": self.name, "description": self.description,
                "scenarios": [{"name": s.name, "path": s.path} for s in self.scenarios],
                "grid": self.grid, "seeds": self.seeds, "first_seed": self.first_seed,
                "seeds_per_task": self.seeds_per_task,
                "traces_per_invariant": self.traces_per_invariant}


def bad(spec_path: str, key: str, problem: str, fix: str) -> UsageError:
    return UsageError(" ".join(f"{spec_path}: {key}: {problem}; {fix}".split("\n")))


def load_spec(path: str, seeds: int | None = None, seeds_per_task: int | None = None,
              overrides: dict | None = None) -> SweepSpec:
    """Read and validate the sweep spec at `path` (see the module contract); `overrides`
    (`--profile`, `--set`) change every base scenario before the grid applies its cells."""
    data = _read_toml(path)
    for key in data:
        if key not in TOP_KEYS:
            close = difflib.get_close_matches(key, TOP_KEYS, n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(TOP_KEYS)}"
            raise bad(path, key, "unknown key", hint)
    name = _str(data, "name", path, os.path.splitext(os.path.basename(path))[0])
    if not NAME_RE.fullmatch(name):
        raise bad(path, "name", f"invalid name {name!r}", "use letters, digits, '.', '_' or '-'")
    seeds_key = "seeds" if seeds is None else "--seeds"
    seeds = _checked_int(seeds, "--seeds", path, 1, MAX_SEEDS) if seeds is not None \
        else _int(data, "seeds", path, DEFAULT_SEEDS, 1, MAX_SEEDS)
    first_seed = _int(data, "first_seed", path, 1, 0)
    if first_seed + seeds - 1 > MAX_SEED:  # a repro line's `--seed` stops at MAX_SEED too
        raise bad(path, "first_seed", f"seeds {first_seed}..{first_seed + seeds - 1} pass "
                  f"{MAX_SEED}, the largest seed", "lower first_seed or seeds")
    grid = parse_grid(data.get("grid", {}), path)
    scenarios = tuple(_scenarios(data, path, overrides or {}))
    _check_size(path, grid, len(scenarios), seeds, seeds_key)
    return SweepSpec(
        path=path, name=name, description=_str(data, "description", path, ""),
        scenarios=scenarios, grid=grid,
        seeds=seeds, first_seed=first_seed,
        seeds_per_task=seeds_per_task if seeds_per_task is not None else
        _int(data, "seeds_per_task", path, DEFAULT_SEEDS_PER_TASK, 1),
        traces_per_invariant=_int(data, "traces_per_invariant", path,
                                  DEFAULT_TRACES_PER_INVARIANT, 0))


# Every cell of every scenario is built and validated before Spark starts (~1 ms each), and
# every chunk is planned up front: a grid of a million cells hung with no word of progress.
MAX_CELLS = 10_000  # cells x scenarios
MAX_RUNS = 10_000_000  # cells x scenarios x seeds (MAX_SEEDS: one cell may have them all)


def _check_size(path: str, grid: dict, scenarios: int, seeds: int, seeds_key: str) -> None:
    """Refuse a sweep too large to plan, from the grid's value counts, before any cell is
    built."""
    cells = math.prod(len(values) for values in grid.values())
    shown = f"{cells:,} cells x {scenarios} scenario{'s' if scenarios > 1 else ''}"
    if cells * scenarios > MAX_CELLS:
        raise bad(path, "grid", f"{shown} = {cells * scenarios:,} scenarios to build; at most "
                  f"{MAX_CELLS:,}", "list fewer values, or split the grid into several sweeps")
    runs = cells * scenarios * seeds
    if runs > MAX_RUNS:
        raise bad(path, "grid", f"{shown} x {seeds:,} seeds = {runs:,} runs; at most "
                  f"{MAX_RUNS:,}", f"lower {seeds_key} or list fewer values")


def _read_toml(path: str) -> dict:
    raw = _read_bytes(path)
    if raw.startswith(b"\xef\xbb\xbf"):  # tomllib says only "Invalid statement"
        raise UsageError(f"{path}: starts with a byte-order mark (BOM), which TOML does not "
                         "allow; save the file as UTF-8 without a BOM")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise UsageError(f"{path}: not UTF-8 text ({err.reason}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path}: invalid TOML: {err}; fix the TOML syntax") from None
    except RecursionError:
        raise UsageError(f"{path}: nested too deeply to read; a sweep spec needs only a few "
                         "levels of tables and arrays") from None
    except ValueError:  # tomllib: an integer of more digits than Python converts (4300)
        raise UsageError(f"{path}: holds an integer too long to read (over 4300 digits); "
                         "write a smaller one") from None


def _read_bytes(path: str) -> bytes:
    """The spec file's bytes: a regular file under MAX_SPEC_BYTES, or a UsageError."""
    try:
        return read_regular(path, MAX_SPEC_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{path}: sweep spec not found; check the path") from None
    except FileProblem as err:
        raise UsageError(f"{path}: {err}") from None
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        raise UsageError(f"{path}: cannot read: {path_problem(err)}; check the path") from None


def _str(data: dict, key: str, path: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise bad(path, key, f"expected a string, got {value!r}", f'write {key} = "..."')
    return value


MAX_SPEC_BYTES = 4 << 20  # a spec is a page of TOML
MAX_SEEDS = 10_000_000  # a sweep plans every chunk up front
MAX_SEED = 2**53  # seeds are stored as 64-bit integers, and scenario numbers stop here


def _int(data: dict, key: str, path: str, default: int, lo: int, hi: int = MAX_SEED) -> int:
    return _checked_int(data.get(key, default), key, path, lo, hi)


def _checked_int(value: Any, key: str, path: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(path, key, f"expected an integer, got {value!r}", "write a whole number")
    if value < lo:
        raise bad(path, key, f"{value} is below {lo}", f"use a number >= {lo}")
    if value > hi:
        raise bad(path, key, f"{value} is above {hi}", f"use a number <= {hi}")
    return value


def resolve_path(ref: str, spec_path: str) -> str | None:
    """`ref` relative to the spec's directory, else to the working directory; None if neither."""
    beside = os.path.join(os.path.dirname(spec_path), ref)
    for candidate in (beside, ref):
        if os.path.isfile(candidate):
            return os.path.normpath(candidate)
    return None


def _scenarios(data: dict, path: str, overrides: dict) -> list[BaseScenario]:
    from epochsim.common import load
    from scenarios.schema import apply_overrides

    refs = data.get("scenarios")
    if refs is None:
        raise bad(path, "scenarios", "missing", 'list the scenario files: scenarios = ["a.toml"]')
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        raise bad(path, "scenarios", f"expected a non-empty array of paths, got {refs!r}",
                  'write scenarios = ["base/a.toml", ...]')
    out: list[BaseScenario] = []
    for i, ref in enumerate(refs):
        found = resolve_path(ref, path)
        if found is None:
            raise bad(path, f"scenarios[{i}]", f"{ref!r} not found beside the spec or in the "
                      "working directory", "check the path")
        scenario = load(found, overrides)  # a scenario error names the scenario file itself
        if not NAME_RE.fullmatch(scenario.name):
            raise bad(path, f"scenarios[{i}]", f"scenario name {scenario.name!r} cannot name an "
                      "output directory", "use letters, digits, '.', '_' or '-' in its name")
        if scenario.name in [s.name for s in out]:
            raise bad(path, f"scenarios[{i}]", f"two scenarios are named {scenario.name!r}",
                      "give each scenario its own name")
        with open(found, encoding="utf-8") as fh:
            text = fh.read()
        raw = apply_overrides(tomllib.loads(text), overrides, found)
        out.append(BaseScenario(scenario.name, found, raw, text))
    return out


def parse_grid(grid: Any, path: str) -> dict:
    """Grid keys (quoted dotted keys or nested tables) -> their value lists, in file order."""
    if not isinstance(grid, dict):
        raise bad(path, "grid", "expected a table", 'write [grid] then "cluster.brokers" = [3, 5]')
    out: dict[str, list] = {}
    _flatten(grid, [], out, path)
    for key, values in out.items():
        split_key(key, path)  # check the syntax now
        for value in values:
            if not _plain_value(value):
                raise bad(path, f"grid.{key}", f"value {value!r} is not a scenario value",
                          "use strings, numbers, booleans, or arrays and tables of them "
                          "(no dates or times)")
        canon = [repr(v) for v in values]
        for i, c in enumerate(canon):
            if c in canon[:i]:
                raise bad(path, f"grid.{key}", f"value {values[i]!r} is listed twice",
                          "list each value once")
    _no_overlaps(list(out), path)
    return out


def _no_overlaps(keys: list[str], path: str) -> None:
    """Refuse two grid keys that can set the same option: the same path (`topics[0]` and
    `topics.0`), one inside the other (`network.latency` and `network.latency.ms`), or a `*`
    over an index another key names (`topics[*].partitions` and `topics[0].partitions`). One
    would silently undo the other in every cell, and the cells would be labelled with values
    they did not run."""
    parts = [split_key(key, path) for key in keys]
    for j, later in enumerate(parts):
        for i, earlier in enumerate(parts[:j]):
            if all(a == b or "*" in (a, b) for a, b in zip(earlier, later)):
                raise bad(path, f"grid.{keys[j]}", f"overlaps grid.{keys[i]}: both can set "
                          "the same option, and one would undo the other in every cell",
                          "give each option one grid key (drop one, or name distinct "
                          "elements instead of '*')")


def _plain_value(value: Any, depth: int = 0) -> bool:
    """Could a scenario file hold `value` (no TOML dates or times, not absurdly nested)?"""
    if depth > 8:
        return False
    if isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(_plain_value(v, depth + 1) for v in value.values())
    return False


def _flatten(node: dict, trail: list[str], out: dict, path: str) -> None:
    for key, value in node.items():
        here = trail + [key]
        if isinstance(value, dict):
            _flatten(value, here, out, path)
        elif isinstance(value, list):
            if not value:
                raise bad(path, "grid." + ".".join(here), "empty list of values",
                          "list at least one value")
            if ".".join(here) in out:  # "run.duration_ms" = [...] beside run = {duration_ms ...}
                raise bad(path, "grid." + ".".join(here), "given twice, as a quoted dotted key "
                          "and inside a table", "give its values once")
            out[".".join(here)] = value
        else:
            raise bad(path, "grid." + ".".join(here), f"expected an array of values, got "
                      f"{value!r}", f'write "{".".join(here)}" = [{value!r}, ...]')


def split_key(key: str, spec_path: str = "<spec>") -> list[str]:
    """`producers[0].acks` or `producers.0.acks` -> ["producers", "0", "acks"]; checks syntax."""
    parts = _INDEX_RE.sub(lambda m: "." + m.group(1), key).split(".")
    if any(p == "" for p in parts):
        raise bad(spec_path, f"grid.{key}", "malformed key path",
                  "write a dotted path such as protocol.profile or mix[0].params.delay_ms")
    if parts[0] not in SWEEPABLE_TOP:
        close = difflib.get_close_matches(parts[0], SWEEPABLE_TOP, n=1)
        hint = f"did you mean '{close[0]}'?" if close else \
            f"start with one of: {', '.join(SWEEPABLE_TOP)}"
        raise bad(spec_path, f"grid.{key}", f"'{parts[0]}' is not a sweepable scenario key", hint)
    return parts
