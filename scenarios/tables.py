"""The table reader every part of a scenario file is checked with, and the loader's error.

Contract:
- `Bad(key, problem, fix)` is the loader's internal error; `scenarios.schema` adds the file
  name and raises it as `ScenarioError`. Nothing here knows the file;
- `Table(data, key)` reads one TOML table: its typed getters check each value (booleans are
  never numbers), remember every key asked for, and `done()` rejects any other key, naming the
  closest valid one; `tables(value, key)` reads an array of tables;
- `Table.option(cls, name)` reads one field of an options dataclass (`sim.kafka.options`) with
  the type, default and limit written on that field;
- `Names` is what a scenario defines that fault targets and params may refer to.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import MISSING, dataclass, field
from typing import Any

from sim.kafka.options import MAX_NUMBER, limit, option_field

NAME_RE = re.compile(r"[A-Za-z0-9._-]+")


class Bad(Exception):
    """One invalid input: the key path, what is wrong, and how to fix it."""

    def __init__(self, key: str, problem: str, fix: str):
        super().__init__(f"{key}: {problem}; {fix}")
        self.key, self.problem, self.fix = key, problem, fix


def describe(value: Any) -> str:
    """A short rendering of a TOML value with its type, for error messages."""
    kinds = [(bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string"),
             (list, "an array"), (dict, "a table")]
    kind = next((k for t, k in kinds if isinstance(value, t)), type(value).__name__)
    text = {True: "true", False: "false"}.get(value) if isinstance(value, bool) else repr(value)
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({kind})"


def suggest(word: str, valid: list[str]) -> str:
    """A fix naming the closest valid word, or listing them all."""
    close = difflib.get_close_matches(word, valid, n=1)
    listing = ", ".join(valid)
    return f"did you mean '{close[0]}'? (valid: {listing})" if close else f"use one of: {listing}"


def unknown_key(key: str, name: str, valid: list[str]) -> Bad:
    """The error for a key that is not part of the format here."""
    return Bad(key, f"unknown key '{name}'", suggest(name, sorted(set(valid))))


def check_int(value: Any, key: str, lo: int | None = None, hi: int | None = None) -> int:
    """`value` as an int within [lo, hi]; a float or boolean is an error, never coerced."""
    if isinstance(value, bool):
        raise Bad(key, f"expected an integer, got {describe(value)}",
                  "TOML true/false are not numbers, write a number")
    if isinstance(value, float) and key.endswith("_ms"):
        raise Bad(key, f"expected whole milliseconds, got {describe(value)}",
                  "*_ms keys take integers only, round it")
    if not isinstance(value, int):
        raise Bad(key, f"expected an integer, got {describe(value)}", "write a whole number")
    return _in_range(value, key, lo, hi)


def check_number(value: Any, key: str, lo: float | None = None, hi: float | None = None,
                 above: float | None = None) -> int | float:
    """`value` as a finite int or float within [lo, hi] (and > `above` if given)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Bad(key, f"expected a number, got {describe(value)}", "write a number such as 1.5")
    if not math.isfinite(value):
        raise Bad(key, f"expected a finite number, got {describe(value)}", "write a finite number")
    if above is not None and value <= above:
        raise Bad(key, f"must be > {above}, got {value}", f"use a value above {above}")
    return _in_range(value, key, lo, hi)


def _in_range(value, key: str, lo, hi):
    """`value` unchanged if within [lo, hi]; negative times get their own wording."""
    if hi is None or hi > MAX_NUMBER:
        hi = MAX_NUMBER
    if lo is not None and value < lo:
        what = "negative" if lo == 0 else f"below the minimum {lo}"
        raise Bad(key, f"{what}: got {value}", f"use a value >= {lo}")
    if hi is not None and value > hi:
        raise Bad(key, f"above the maximum {hi}: got {value}", f"use a value <= {hi}")
    return value


def check_str(value: Any, key: str, choices: tuple | list | None = None) -> str:
    """`value` as a string, one of `choices` if given."""
    if not isinstance(value, str):
        raise Bad(key, f"expected a string, got {describe(value)}", 'quote it: "..."')
    if choices is not None and value not in choices:
        raise Bad(key, f"unknown value '{value}'", suggest(value, [str(c) for c in choices]))
    return value


def check_list(value: Any, key: str, nonempty: bool = True) -> list:
    """`value` as an array (non-empty unless told otherwise)."""
    if not isinstance(value, list):
        raise Bad(key, f"expected an array, got {describe(value)}", "write it as [ ... ]")
    if nonempty and not value:
        raise Bad(key, "must not be empty", "list at least one item")
    return value


_MISSING = object()


class Table:
    """One TOML table being read; remembers the keys asked for so `done()` can reject others."""

    def __init__(self, data: Any, key: str):
        if not isinstance(data, dict):
            raise Bad(key or "<top>", f"expected a table, got {describe(data)}",
                      f"write it as [{key}] or an inline table {{ ... }}")
        self.data, self.key, self.asked = data, key, []

    def path(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def raw(self, name: str, default: Any = _MISSING) -> Any:
        """The value of `name`, or `default`; a missing key without default is an error."""
        self.asked.append(name)
        if name in self.data:
            return self.data[name]
        if default is _MISSING:
            raise Bad(self.path(name), "missing required key", f"add {name} = ...")
        return default

    def int(self, name: str, default: Any = _MISSING, lo=None, hi=None) -> int:
        return check_int(self.raw(name, default), self.path(name), lo, hi)

    def number(self, name: str, default: Any = _MISSING, lo=None, hi=None, above=None):
        return check_number(self.raw(name, default), self.path(name), lo, hi, above)

    def str(self, name: str, default: Any = _MISSING, choices=None) -> str:
        return check_str(self.raw(name, default), self.path(name), choices)

    def bool(self, name: str, default: Any = _MISSING) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise Bad(self.path(name), f"expected true or false, got {describe(value)}",
                      "write true or false (unquoted)")
        return value

    def option(self, cls, name: str, default: Any = MISSING, hi=None):
        """Option `name` read as field `name` of the options dataclass `cls` declares it: its
        type, its default (or `default`, for one that depends on other options) and its
        limit (with `hi` in place of the limit's when given, for a bound that does)."""
        f = option_field(cls, name)
        lim = limit(cls, name)
        if default is MISSING:
            default = _MISSING if f.default is MISSING else f.default
        if f.type == "bool":
            return self.bool(name, default)
        if f.type == "str":
            return self.str(name, default, lim.choices)
        if f.type == "int":
            return self.int(name, default, lim.lo, lim.hi if hi is None else hi)
        return self.number(name, default, lim.lo, lim.hi, lim.above)

    def done(self) -> None:
        """Reject any key of the table that was never asked for."""
        for name in self.data:
            if name not in self.asked:
                raise unknown_key(self.path(name), name, self.asked)


@dataclass
class Names:
    """What a scenario defines that fault targets and params may refer to."""

    brokers: int
    controllers: int
    clients: list[str]
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partitions
    log_dirs: int = 1  # each broker's log directories (`cluster.log_dirs`)
    # the message format a created topic gets by default: its release's (v1 on 0.10.2)
    message_format: int = 2
    # the controllers' `admin_elect_leaders`: which ElectLeaders an `elect_leaders` step sends
    elect_leaders: str = "typed"

    def broker_names(self) -> list[str]:
        return [f"b{i}" for i in range(1, self.brokers + 1)]

    def nodes(self) -> list[str]:
        controllers = [f"c{i}" for i in range(1, self.controllers + 1)]
        return self.broker_names() + controllers + self.clients

    def summary(self) -> str:
        clients = f", clients {', '.join(self.clients)}" if self.clients else ""
        brokers = "b1" if self.brokers == 1 else f"b1..b{self.brokers}"
        controllers = "c1" if self.controllers == 1 else f"c1..c{self.controllers}"
        return f"cluster has {brokers}, {controllers}{clients}"


def tables(value: Any, key: str, nonempty: bool) -> list:
    """An array of tables [[key]]."""
    if value is None and not nonempty:
        return []
    if value is None:
        raise Bad(key, "missing required section", f"add at least one [[{key}]] table")
    if not isinstance(value, list):
        raise Bad(key, "expected an array of tables", f"write each entry as [[{key}]]")
    return check_list(value, key, nonempty)


def wrap(err: ValueError, prefix: str, fix: str) -> Bad:
    """A ValueError of the form "key: problem[; fix]" as a Bad under `prefix`."""
    key, _, rest = str(err).partition(": ")
    problem, _, own_fix = rest.partition("; ")
    return Bad(f"{prefix}.{key}", problem or str(err), own_fix or fix)
