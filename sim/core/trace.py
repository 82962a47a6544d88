"""Trace recorder and reader: JSON Lines, one header then one event per line.

Contract:
- line 1 is the header object (`"type": "header"`): scenario, seed, resolved options, the fault
  schedule that ran, harness version;
- every later line is an event `{"seq", "t", "node", "kind", ...fields}` with a dense `seq`
  starting at 0 and `t` in integer microseconds; fields must be JSON-native (dict, list, str,
  int, bool, None) so that an online observer and an offline re-read see equal values;
- the digest (blake2b-256, hex) covers the header without `harness_version` plus every event
  line exactly as written, so it changes if and only if the behaviour changes;
- events stream to the sink in batches of `_HASH_BATCH` lines (and whatever is left on `flush`,
  which the owner of the sink calls before closing it); nothing is retained unless `keep=True`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import IO, Any

FORMAT = "epochsim-trace/1"
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_dumps = _ENCODER.encode
_HASH_BATCH = 512  # event lines hashed and written together (same digest, same file)

#: JSON text of a `str` exactly as `_dumps` writes it (raises TypeError for anything else).
json_str = json.encoder.encode_basestring

# `_dumps` builds a C encoder on every call; the hot path builds it once, with the same
# arguments, so the text is the same. Its circular-reference markers are cleared after an error.
_markers: dict = {}
try:
    from json.encoder import c_make_encoder as _c_make_encoder

    _c_iterencode = _c_make_encoder(
        _markers, _ENCODER.default, json_str, None,
        _ENCODER.key_separator, _ENCODER.item_separator, False, False, True)
    _probe = {"a": [1, 1.5, "é\n", None, True, {"b": ()}]}
    if "".join(_c_iterencode(_probe, 0)) != _dumps(_probe):
        _c_iterencode = None
except (ImportError, TypeError):  # no C accelerator, or another signature
    _c_iterencode = None


def json_text(obj: Any) -> str:
    """Compact JSON text of `obj`, exactly as the trace writes it."""
    if _c_iterencode is None:
        return _dumps(obj)
    try:
        return "".join(_c_iterencode(obj, 0))
    except BaseException:
        _markers.clear()
        raise


_member_prefix: dict[str, str] = {}  # key -> ',"key":'


def json_members(fields: dict) -> str | None:
    """`,"key":value` for each member of `fields`, as `json_text(fields)` writes them (None if
    a key is not a `str`, so that the caller takes the general path)."""
    out = ""
    for key, value in fields.items():
        prefix = _member_prefix.get(key)
        if prefix is None:
            if type(key) is not str:
                return None
            prefix = f",{json_str(key)}:"
            if len(_member_prefix) < 10_000:
                _member_prefix[key] = prefix
        kind = type(value)
        if kind is int:
            out += f"{prefix}{value}"
        elif kind is str:
            out += prefix + json_str(value)
        else:
            out += prefix + json_text(value)
    return out


class TraceError(ValueError):
    """A stored trace that cannot be read; the message names the file and line."""


def header_digest_part(header: dict) -> str:
    """The canonical text of a header as it enters the digest (harness version excluded)."""
    return json.dumps({k: v for k, v in header.items() if k != "harness_version"},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class Trace:
    """Records events of one run; observers see each event dict as it is recorded."""

    def __init__(self, header: dict, sink: IO[str] | None = None, keep: bool = False):
        self.header = {"type": "header", "format": FORMAT, **header}
        self._sink = sink
        self._write = sink.write if sink is not None else None
        self._hash = hashlib.blake2b(digest_size=32)
        self._hash.update(header_digest_part(self.header).encode())
        # event lines ("...\n") not yet fed to the hash: hashing in batches is cheaper
        self._unhashed: list[str] = []
        self.seq = 0
        self.events: list[dict] | None = [] if keep else None
        self.observers: list[Callable[[dict], None]] = []
        if sink is not None:
            sink.write(_dumps(self.header) + "\n")

    def emit(self, t_us: int, node: str, kind: str, fields: dict[str, Any] | None = None) -> int:
        """Record one event and return its `seq`."""
        ev = {"seq": self.seq, "t": t_us, "node": node, "kind": kind}
        if fields:
            ev.update(fields)
        unhashed = self._unhashed
        unhashed.append(json_text(ev) + "\n")
        if len(unhashed) >= _HASH_BATCH:
            self._hash_pending()
        if self.events is not None:
            self.events.append(ev)
        for observer in self.observers:
            observer(ev)
        self.seq += 1
        return ev["seq"]

    def emit_encoded(self, t_us: int, node: str, kind: str, text: str,
                     keys: tuple[str, ...], values: tuple, more: dict | None = None) -> int:
        """`emit` for hot callers that already hold the JSON text of the event.

        The fields are `keys` zipped with `values`, then `more`; the dict is built only if
        someone keeps or observes events. No field may repeat `seq`, `t`, `node`, `kind` or an
        earlier field. `text` must be exactly what `emit` writes after the `t` member, closing
        brace included: `,"node":N,"kind":K` then `,"key":value` for each field in order,
        strings encoded with `json_str`, ints with `int.__repr__`, anything else with
        `json_text`. The line is then byte-identical to the one `emit` writes.
        """
        if type(t_us) is not int:
            fields = dict(zip(keys, values))
            if more:
                fields.update(more)
            return self.emit(t_us, node, kind, fields)
        seq = self.seq
        unhashed = self._unhashed
        unhashed.append(f'{{"seq":{seq},"t":{t_us}{text}\n')
        if len(unhashed) >= _HASH_BATCH:
            self._hash_pending()
        if self.events is not None or self.observers:
            ev = {"seq": seq, "t": t_us, "node": node, "kind": kind}
            ev.update(zip(keys, values))
            if more:
                ev.update(more)
            if self.events is not None:
                self.events.append(ev)
            for observer in self.observers:
                observer(ev)
        self.seq += 1
        return seq

    def _hash_pending(self) -> None:
        """Feed the pending lines to the hash as "\n" + line each, as `digest_of_lines` does,
        and write them to the sink."""
        if self._unhashed:
            text = "".join(self._unhashed)
            self._hash.update(("\n" + text[:-1]).encode())
            self._unhashed.clear()
            if self._write is not None:
                self._write(text)

    def flush(self) -> None:
        """Write every recorded line to the sink (call it before closing the sink)."""
        self._hash_pending()

    def digest(self) -> str:
        self._hash_pending()
        return self._hash.copy().hexdigest()


def digest_of_lines(header: dict, lines: list[str]) -> str:
    """Digest of a stored trace: the same value `Trace.digest` gave while recording it."""
    h = hashlib.blake2b(digest_size=32)
    h.update(header_digest_part(header).encode())
    for line in lines:
        h.update(b"\n")
        h.update(line.encode())
    return h.hexdigest()


def read_trace(path: str) -> tuple[dict, Iterator[dict]]:
    """Open a stored trace: its header now, its events lazily. Raises TraceError on bad input."""
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the generator
    except OSError as exc:
        raise TraceError(f"{path}: cannot open trace ({exc.strerror})") from None
    first = fh.readline()
    header = _parse_line(path, 1, first)
    if header.get("type") != "header":
        fh.close()
        raise TraceError(f"{path}:1: first line is not a trace header; "
                         "pass a trace.jsonl written by `epochsim run`")
    return header, _events(path, fh)


def _events(path: str, fh) -> Iterator[dict]:
    with fh:
        expected = 0
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            ev = _parse_line(path, lineno, line)
            if ev.get("seq") != expected or not isinstance(ev.get("kind"), str):
                raise TraceError(f"{path}:{lineno}: expected an event with seq {expected}; "
                                 "the trace is truncated or edited")
            expected += 1
            yield ev


def _parse_line(path: str, lineno: int, line: str) -> dict:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}:{lineno}: not JSON ({exc.msg}); "
                         "a trace is JSON Lines, one object a line") from None
    if not isinstance(obj, dict):
        raise TraceError(f"{path}:{lineno}: expected a JSON object")
    return obj


def stored_lines(path: str) -> tuple[dict, list[str]]:
    """Header and raw event lines of a stored trace (for digests and diffs), each line checked
    as `read_trace` checks it (JSON object, dense `seq`); raises TraceError."""
    header, events = read_trace(path)
    for _ in events:
        pass  # validate every line before handing out raw text
    with open(path, encoding="utf-8") as fh:
        fh.readline()
        lines = [ln.rstrip("\n") for ln in fh if ln.strip()]
    return header, lines
