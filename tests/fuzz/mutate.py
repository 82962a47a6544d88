"""Structural mutations of a parsed TOML input (a scenario, a probe case, a sweep spec).

Contract: `mutants(doc, rng, per_doc)` yields `Mutant(label, where, doc)` values, each a deep
copy of `doc` with one fault planted at one key path: a key removed, an unknown key added, a
value replaced by one of the wrong type or out of bounds (`BAD_VALUES`), an array emptied or
an item duplicated. Every key path of the document is a candidate (tables, arrays of tables,
inline tables, the items of arrays); with `per_doc` set, a sample of that many drawn from the
seeded `rng`, else every one. Same document, same seed: the same mutants, in the same order.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Replacement values: (label, value). Each is wrong for most keys somewhere: a TOML bool is
# an int in Python (`True == 1`), a float key takes an int, a name key takes any string.
BAD_VALUES: list[tuple[str, Any]] = [
    ("string", "x"), ("empty-string", ""), ("blank-string", "  "), ("control-string", "a\nb"),
    ("bool", True), ("false", False), ("zero", 0), ("negative", -1), ("huge", 2**63),
    ("past-2**53", 2**53 + 1), ("float", 1.5), ("nan", float("nan")), ("inf", float("inf")),
    ("-inf", float("-inf")), ("list", [1, "a"]), ("empty-list", []), ("table", {"a": 1}),
    ("empty-table", {}), ("unknown-node", "b99"), ("unknown-name", "nope"),
]


@dataclass
class Mutant:
    label: str  # the class of fault, e.g. "nan", "missing", "unknown-key"
    where: str  # the key path it was planted at, e.g. "faults[0].at_ms"
    doc: dict


def key_paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path below `node` (tables by key, arrays by index), parents before children."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from key_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield prefix + (i,)
            yield from key_paths(value, prefix + (i,))


def show(path: tuple) -> str:
    """A key path as the loader's errors write one: `faults[0].at_ms`."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "<top>"


def _get(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _edits(value: Any) -> list[tuple[str, Any]]:
    """The edits of one key path: ("missing", None) removes it; other labels set a value.
    A value equal to the one there is skipped (`0` for a key that holds 0)."""
    edits: list[tuple[str, Any]] = [("missing", None)]
    for label, new in BAD_VALUES:
        if type(new) is not type(value) or new != new or new != value:
            edits.append((label, new))
    if isinstance(value, int) and not isinstance(value, bool):
        edits += [("times-1000", value * 1000 + 1), ("minus-one", value - 1)]
    if isinstance(value, list) and value:
        edits += [("duplicate-item", value + [copy.deepcopy(value[-1])]),
                  ("reversed", list(reversed(value)))]
    if isinstance(value, dict):
        edits.append(("unknown-key", {**value, "no_such_key": 1}))
    return edits


def _apply(doc: dict, path: tuple, label: str, new: Any) -> dict:
    out = copy.deepcopy(doc)
    parent = _get(out, path[:-1])
    if label == "missing":
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(new)
    return out


def all_mutants(doc: dict) -> list[tuple[tuple, str, Any]]:
    """Every (path, label, new value) of `doc`, in document order, plus an unknown key at the
    top."""
    plan = [((), "unknown-key", None)]
    for path in key_paths(doc):
        plan += [(path, label, new) for label, new in _edits(_get(doc, path))]
    return plan


def mutants(doc: dict, rng: random.Random, per_doc: int | None = None) -> Iterator[Mutant]:
    """The mutants of `doc` (see the module contract)."""
    plan = all_mutants(doc)
    if per_doc is not None and per_doc < len(plan):
        plan = [plan[i] for i in sorted(rng.sample(range(len(plan)), per_doc))]
    for path, label, new in plan:
        if not path:
            yield Mutant(label, "<top>", {**copy.deepcopy(doc), "no_such_key": 1})
            continue
        yield Mutant(label, show(path), _apply(doc, path, label, new))
