"""Write a parsed TOML document (a dict from `tomllib`) back out as TOML text.

Contract: `dumps(data)` returns TOML that `tomllib.loads` reads back to a dict equal to `data`
(a whole document: tomli-w writes it). `key_text` and `value_text` write one key or one value,
tables inline, for the scripted-scenario writer, which lays out its document line by line in
the order people read a scenario; tomli-w has no public call for a single inline value, so
these two stay here. Dates and times are not supported by them (scenarios have none): they
raise TypeError.

One writer serves both users: `scenarios.writer.scenario_to_toml` writes a *resolved* scenario
(no random mixes) with `key_text`/`value_text`, and a sweep cell, which must keep its mixes
(they are materialised from each seed), is written from the raw dict with `dumps`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import tomli_w

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def dumps(data: dict) -> str:
    """`data` as a TOML document (written by tomli-w; multi-line strings kept as such)."""
    return tomli_w.dumps(data, multiline_strings=True)


def key_text(key: str) -> str:
    """A bare key when TOML allows one, else a quoted key."""
    return key if _BARE_KEY.fullmatch(key) else string_text(key)


def value_text(value: Any, multiline: bool = False) -> str:
    """One TOML value; tables here are written inline. With `multiline`, a string holding
    newlines is written as a multi-line string, as the scenario library writes descriptions."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return string_text(value, multiline)
    if isinstance(value, list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{key_text(k)} = {value_text(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as TOML")


def string_text(text: str, multiline: bool = False) -> str:
    """A TOML basic string, control characters escaped; with `multiline` and a newline in
    `text`, a multi-line basic string (the newline after the opening quotes is not content)."""
    if multiline and "\n" in text:
        body = "".join("\n" if c == "\n" else _escape(c) for c in text)
        return '"""\n' + body + '"""'
    return '"' + "".join(_escape(c) for c in text) + '"'


def _escape(c: str) -> str:
    return _ESCAPES.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
