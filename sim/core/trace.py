"""Trace recorder and reader: JSON Lines, one header then one event per line.

Contract:
- line 1 is the header object (`"type": "header"`): scenario, seed, resolved options, the fault
  schedule that ran, harness version;
- every later line is an event `{"seq", "t", "node", "kind", ...fields}` with a dense `seq`
  starting at 0 and `t` in integer microseconds; fields must be JSON-native (dict, list, str,
  int, bool, None) so that an online observer and an offline re-read see equal values;
- the digest (SHA-256, hex) covers the header without `harness_version` plus every event
  line exactly as written, so it changes if and only if the behaviour changes;
- events stream to the sink in batches of `HASH_BATCH` lines (and whatever is left on `flush`,
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
HASH_BATCH = 512  # event lines hashed and written together (same digest, same file)
#: trace nodes the harness itself writes as (faults, the end of the run): no actor may use them
RESERVED_NODES = frozenset({"nemesis", "harness"})

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


def event_head(node: str, kind: str) -> str:
    """`,"node":N,"kind":K`: how the text that `Trace.emit_encoded` takes begins."""
    return f',"node":{json_str(node)},"kind":{json_str(kind)}'


_member_prefix: dict[str, str] = {}  # key -> ',"key":'


def json_members(fields: dict, prefixes: dict[str, str] = _member_prefix) -> str | None:
    """`,"key":value` for each member of `fields`, as `json_text(fields)` writes them, or None
    (so that the caller takes the general path) if a key is not a `str` or is one that
    `prefixes` maps to "": a caller passes its own cache, seeded so, to decline the keys it
    reserves for itself."""
    out = ""
    for key, value in fields.items():
        prefix = prefixes.get(key)
        if not prefix:
            if prefix is not None or type(key) is not str:
                return None
            prefix = f",{json_str(key)}:"
            if len(prefixes) < 10_000:
                prefixes[key] = prefix
        if type(value) is int:
            out = f"{out}{prefix}{value}"
        elif type(value) is str:
            out = f"{out}{prefix}{json_str(value)}"
        else:
            out = f"{out}{prefix}{json_text(value)}"
    return out


class TraceError(ValueError):
    """A stored trace that cannot be read; the message names the file and line."""


def header_digest_part(header: dict) -> str:
    """The canonical text of a header as it enters the digest (harness version excluded)."""
    return json.dumps({k: v for k, v in header.items() if k != "harness_version"},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Routes(dict):
    """kind -> the observers that want it, in the order they were added (`Trace.observe`)."""

    def __init__(self, observers: list):
        super().__init__()
        self._observers = observers

    def __missing__(self, kind: str) -> tuple:
        found = self[kind] = tuple(fn for fn, kinds in self._observers
                                   if kinds is None or kind in kinds)
        return found


class Trace:
    """Records events of one run; observers see each event dict as it is recorded."""

    def __init__(self, header: dict, sink: IO[str] | None = None, keep: bool = False):
        self.header = {"type": "header", "format": FORMAT, **header}
        self._sink = sink
        self._write = None  # writes the bytes of a batch of lines
        self._hash = hashlib.sha256()
        self._hash.update(header_digest_part(self.header).encode())
        # event lines ("...\n") not yet hashed and written: batches are cheaper
        self.pending: list[str] = []
        self.seq = 0
        self.events: list[dict] | None = [] if keep else None
        self._observers: list[tuple[Callable[[dict], None], frozenset | None]] = []
        # kind -> the observers of that kind, in the order they were added: filled on first
        # use, so hot callers test `routes[kind]` as cheaply as any dict lookup
        self.routes = _Routes(self._observers)
        if sink is not None:
            sink.write(_dumps(self.header) + "\n")
            self._write = _bytes_writer(sink)

    def observe(self, observer: Callable[[dict], None], kinds=None) -> None:
        """Show `observer` each event recorded from now on whose kind is in `kinds` (every
        kind if None), after the observers added before it.

        An event that no observer wants and that is not kept is never built as a dict by the
        hot callers (`emit_encoded`, the network): a large share of a run's events (message
        deliveries, the producer's batches) is text only."""
        self._observers.append((observer, None if kinds is None else frozenset(kinds)))
        self.routes.clear()

    def emit(self, t_us: int, node: str, kind: str, fields: dict[str, Any] | None = None) -> int:
        """Record one event and return its `seq` (fields that JSON cannot encode raise
        before anything is recorded)."""
        seq = self.seq
        ev = {"seq": seq, "t": t_us, "node": node, "kind": kind}
        if fields:
            ev.update(fields)
        line = json_text(ev) + "\n"
        self.seq = seq + 1
        pending = self.pending
        pending.append(line)
        if len(pending) >= HASH_BATCH:
            self.write_pending()
        if self.events is not None:
            self.events.append(ev)
        for observer in self.routes[kind]:
            observer(ev)
        return seq

    def emit_encoded(self, t_us: int, node: str, kind: str, text: str,
                     keys: tuple[str, ...], values: tuple, more: dict | None = None) -> int:
        """`emit` for hot callers that already hold the JSON text of the event.

        The fields are `keys` zipped with `values`, then `more`; the dict is built only if
        events are kept or someone observes this kind. No field may repeat `seq`, `t`, `node`,
        `kind` or an earlier field. `text` must be exactly what `emit` writes after the `t`
        member, closing brace included: `,"node":N,"kind":K` then `,"key":value` for each field
        in order, strings encoded with `json_str`, ints with `int.__repr__`, anything else with
        `json_text`. The line is then byte-identical to the one `emit` writes. The network
        calls this for every message it sends and delivers.
        """
        if type(t_us) is not int:
            fields = dict(zip(keys, values))
            if more:
                fields.update(more)
            return self.emit(t_us, node, kind, fields)
        seq = self.seq
        self.seq = seq + 1
        pending = self.pending
        pending.append(f'{{"seq":{seq},"t":{t_us}{text}\n')
        if len(pending) >= HASH_BATCH:
            self.write_pending()
        if self.events is not None or self.routes[kind]:
            self.publish(seq, t_us, node, kind, keys, values, more)
        return seq

    def publish(self, seq: int, t_us: int, node: str, kind: str, keys: tuple[str, ...],
                values: tuple, more: dict | None) -> None:
        """Keep and show to the observers the event whose line `emit_encoded` wrote."""
        ev = {"seq": seq, "t": t_us, "node": node, "kind": kind}
        ev.update(zip(keys, values))
        if more:
            ev.update(more)
        if self.events is not None:
            self.events.append(ev)
        for observer in self.routes[kind]:
            observer(ev)

    def write_pending(self) -> None:
        """Feed the pending lines to the hash as "\n" + line each, as `digest_of_lines` does,
        and write them to the sink."""
        if self.pending:
            data = "".join(self.pending).encode()
            self.pending.clear()
            self._hash.update(b"\n")
            self._hash.update(memoryview(data)[:-1])
            if self._write is not None:
                self._write(data)

    def flush(self) -> None:
        """Write every recorded line to the sink (call it before closing the sink)."""
        self.write_pending()

    def digest(self) -> str:
        self.write_pending()
        return self._hash.copy().hexdigest()


def _bytes_writer(sink: IO[str]) -> Callable[[bytes], Any]:
    """Write UTF-8 bytes to a text sink: straight to its byte buffer when it is a UTF-8 text
    file (the text already written is flushed first, so the order holds), so that a batch is
    encoded once for both the hash and the file; otherwise decoded and written as text."""
    buffer = getattr(sink, "buffer", None)
    encoding = (getattr(sink, "encoding", None) or "").lower().replace("_", "-")
    if buffer is not None and encoding in ("utf-8", "utf8"):
        sink.flush()
        return buffer.write
    return lambda data: sink.write(data.decode())


def digest_of_lines(header: dict, lines: list[str]) -> str:
    """Digest of a stored trace: the same value `Trace.digest` gave while recording it."""
    h = hashlib.sha256()
    h.update(header_digest_part(header).encode())
    for line in lines:
        h.update(b"\n")
        h.update(line.encode())
    return h.hexdigest()


def read_trace(path: str, check: Callable[[dict], str | None] | None = None
               ) -> tuple[dict, Iterator[dict]]:
    """Open a stored trace: its header now, its events lazily. Raises TraceError on bad input:
    besides the checks of `_events`, an event for which `check` returns a problem (the
    vocabulary's own check of kinds and field types, `invariants.shapes.event_problem`)."""
    try:
        fh = open(path, "rb")  # closed by the generator `_events`; decoded line by line
    except OSError as exc:
        raise TraceError(f"{path}: cannot open trace ({exc.strerror})") from None
    try:
        header = _parse_line(path, 1, fh.readline())
    except OSError as exc:
        fh.close()
        raise TraceError(f"{path}: cannot read trace ({exc.strerror})") from None
    except TraceError:
        fh.close()
        raise
    if header.get("type") != "header":
        fh.close()
        raise TraceError(f"{path}:1: first line is not a trace header; "
                         "pass a trace.jsonl written by `epochsim run`")
    problem = _header_problem(header)
    if problem:
        fh.close()
        raise TraceError(f"{path}:1: {problem}; the header was edited or comes from another tool")
    return header, _events(path, fh, check)


def _header_problem(header: dict) -> str | None:
    """What is wrong with the shape of a header's members, if anything (`None` if fine)."""
    if "format" in header and header["format"] != FORMAT:
        return (f"format {header['format']!r} is not {FORMAT!r}, the only one this epochsim "
                "reads")
    if "options" in header and not isinstance(header["options"], dict):
        return "options must be an object"
    for key in ("schedule", "invariants"):
        if key in header and not isinstance(header[key], list):
            return f"{key} must be an array"
    if not all(isinstance(n, str) for n in header.get("invariants", [])):
        return "invariants must be an array of names"
    if "seed" in header and (type(header["seed"]) is not int):
        return "seed must be an integer"
    return None


#: the latest `t` a trace may hold: simulated time is at most 2**53 ms (scenario numbers stop there)
MAX_T_US = 2**53 * 1000


#: the kind of the last event of every run (written by the harness); nothing may follow it
END_KIND = "end"


def _events(path: str, fh, check=None) -> Iterator[dict]:
    """The events of an open trace, each checked: the next `seq`, a `t` in microseconds no
    earlier than the event before (simulated time never runs back), a node and a kind, no
    event after the run's `end`, and whatever `check` finds wrong."""
    with fh:
        expected = last_t = 0
        ended = 0  # the line of the `end` event, once read
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            if ended:
                raise TraceError(f"{path}:{lineno}: a line after the run's `end` event (line "
                                 f"{ended}); the trace was edited or two traces were joined")
            ev = _parse_line(path, lineno, line)
            if (ev.get("seq") != expected or type(ev.get("t")) is not int
                    or not isinstance(ev.get("kind"), str) or not isinstance(ev.get("node"), str)):
                raise TraceError(f"{path}:{lineno}: expected an event with seq {expected}, an "
                                 "integer t, a node and a kind; the trace is truncated or edited")
            if not last_t <= ev["t"] <= MAX_T_US:
                raise TraceError(f"{path}:{lineno}: t {ev['t']} is out of order (the event before "
                                 f"is at t {last_t}, and no t passes {MAX_T_US}); the trace was "
                                 "edited")
            problem = check(ev) if check is not None else None
            if problem:
                raise TraceError(f"{path}:{lineno}: event seq {ev['seq']}: {problem}; the trace "
                                 "was edited or comes from another tool")
            expected += 1
            last_t = ev["t"]
            if ev["kind"] == END_KIND:
                ended = lineno
            yield ev


def _parse_line(path: str, lineno: int, raw: bytes) -> dict:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise TraceError(f"{path}:{lineno}: not UTF-8 text; a trace is JSON Lines written by "
                         "`epochsim run`") from None
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}:{lineno}: not JSON ({exc.msg}); "
                         "a trace is JSON Lines, one object a line") from None
    except (ValueError, RecursionError) as exc:  # a number too long, nesting too deep
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "a number is too long"
        raise TraceError(f"{path}:{lineno}: unreadable JSON ({reason}); "
                         "the trace was edited or comes from another tool") from None
    if not isinstance(obj, dict):
        raise TraceError(f"{path}:{lineno}: expected a JSON object")
    return obj


def stored_lines(path: str, check=None) -> tuple[dict, list[str]]:
    """Header and raw event lines of a stored trace (for digests and diffs), each line checked
    as `read_trace(path, check)` checks it (JSON object, dense `seq`); raises TraceError."""
    header, events = read_trace(path, check)
    for _ in events:
        pass  # validate every line before handing out raw text
    with open(path, encoding="utf-8", newline="\n") as fh:
        fh.readline()
        lines = [ln.rstrip("\n") for ln in fh if ln.strip()]
    return header, lines
