"""Typed fields of a probe's hand-written requests and starting state, and their checks.

Contract: a `Field` names one key as a probe file writes it (Kafka's own field name in snake
case), its type and its default (`REQUIRED`: none). `read(table, fields, where)` checks a dict
read from TOML against the fields and returns a new dict with every default filled in; any
problem raises `FieldProblem(key, problem, fix)` with `key` relative to `where`, which the
scenario loader turns into its one-line error. Types: `int`, `ms` (a record timestamp: an
integer, at least 0, as `ProducerRecord` requires), `bool`, `str`, `error` (a Kafka
error name such as "FENCED_LEADER_EPOCH", or its code), `ints` (a list of integers), `strs`, `pairs` (a list of
`pair`s), `table`
(one nested table read by `sub`), `tables` (a list of them), `pair` (two integers), `any`.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from sim.kafka.vocab import ERROR_NAMES, OUTCOME_NAMES

REQUIRED = object()
# an expectation may name a producer's outcome (DELIVERY_TIMEOUT) as well as a Kafka error
ERROR_CODES = {name: code for names in (OUTCOME_NAMES, ERROR_NAMES) for code, name in names.items()}
MAX_INT = 2**53


class FieldProblem(ValueError):
    """A bad probe field: `key` (dotted, relative to the probe), `problem`, `fix`."""

    def __init__(self, key: str, problem: str, fix: str):
        super().__init__(f"{key}: {problem}; {fix}")
        self.key, self.problem, self.fix = key, problem, fix


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    default: Any = REQUIRED
    sub: tuple = ()  # the fields of a `table` / `tables` value
    doc: str = ""


def suggest(word: str, choices) -> str:
    close = get_close_matches(str(word), list(choices), n=1)
    names = ", ".join(sorted(choices))
    return f"did you mean {close[0]!r}? (one of: {names})" if close else f"use one of: {names}"


def error_code(value: Any, key: str) -> int:
    """A Kafka error named or numbered as a probe writes it, as its code."""
    if isinstance(value, str):
        if value in ERROR_CODES:
            return ERROR_CODES[value]
        raise FieldProblem(key, f"unknown error {value!r}", suggest(value, ERROR_CODES))
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise FieldProblem(key, f"expected an error name or code, got {value!r}",
                       'write a name such as "FENCED_LEADER_EPOCH"')


def _int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldProblem(key, f"expected an integer, got {value!r}", "write a whole number")
    if abs(value) > MAX_INT:
        raise FieldProblem(key, f"{value} is out of range", "write a number within 2**53")
    return value


def _value(f: Field, value: Any, key: str) -> Any:
    if f.type == "int":
        return _int(value, key)
    if f.type == "ms":
        if _int(value, key) < 0:
            raise FieldProblem(key, f"{value} is no record timestamp",
                               "write a time in ms, at least 0 (a producer refuses a negative one)")
        return value
    if f.type == "bool":
        if not isinstance(value, bool):
            raise FieldProblem(key, f"expected true or false, got {value!r}", "write true or false")
        return value
    if f.type == "str":
        if not isinstance(value, str):
            raise FieldProblem(key, f"expected a string, got {value!r}", "quote the value")
        return value
    if f.type == "error":
        return error_code(value, key)
    if f.type in ("ints", "pair"):
        if not isinstance(value, list):
            raise FieldProblem(key, f"expected a list of integers, got {value!r}",
                               "write e.g. [1, 2]")
        out = tuple(_int(v, f"{key}[{i}]") for i, v in enumerate(value))
        if f.type == "pair" and len(out) != 2:
            raise FieldProblem(key, f"expected two integers, got {len(out)}", "write e.g. [3, 10]")
        return out
    if f.type == "strs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise FieldProblem(key, f"expected a list of strings, got {value!r}",
                               'write e.g. ["t-0"]')
        return tuple(value)
    if f.type == "pairs":
        if not isinstance(value, list):
            raise FieldProblem(key, f"expected a list of pairs, got {value!r}",
                               "write e.g. [[0, 0], [3, 10]]")
        return tuple(_value(Field(f.name, "pair"), v, f"{key}[{i}]") for i, v in enumerate(value))
    if f.type == "table":
        return read(value, f.sub, key)
    if f.type == "tables":
        if not isinstance(value, list):
            raise FieldProblem(key, f"expected a list of tables, got {value!r}",
                               "write e.g. [{tp = \"t-0\"}]")
        return tuple(read(v, f.sub, f"{key}[{i}]") for i, v in enumerate(value))
    return value


def read(table: Any, fields: tuple, where: str) -> dict:
    """`table` checked against `fields` (see the module contract)."""
    if not isinstance(table, dict):
        raise FieldProblem(where, f"expected a table, got {table!r}", "write a table {key = value}")
    known = {f.name: f for f in fields}
    for key in table:
        if key not in known:
            raise FieldProblem(f"{where}.{key}" if where else key, "unknown field",
                               suggest(key, known) if known else "it takes no fields: leave "
                               "them out")
    out = {}
    for f in fields:
        key = f"{where}.{f.name}" if where else f.name
        if f.name in table:
            out[f.name] = _value(f, table[f.name], key)
        elif f.default is REQUIRED:
            raise FieldProblem(key, "missing", f"give {f.name}")
        else:
            out[f.name] = f.default
    return out
