"""Trace recorder and reader: dense seq, header first, digest, readable errors."""

import io
import json
import re

import pytest

from sim.core.trace import FORMAT, Trace, TraceError, digest_of_lines, read_trace, stored_lines

HEADER = {"scenario": "unit", "seed": 7, "options": {"n": 3}, "faults": [],
          "harness_version": "1.2.3"}


def _record(trace: Trace) -> None:
    trace.emit(0, "a", "start")
    trace.emit(5, "a", "send", {"mid": 0, "dst": "b", "msg": "Ping"})
    trace.emit(1_005, "b", "deliver", {"mid": 0, "src": "a", "note": "é", "xs": [1, None, True]})
    trace.emit(1_005, "b", "state", {})


def test_header_first_then_dense_seq():
    sink = io.StringIO()
    trace = Trace(dict(HEADER), sink=sink, keep=True)
    _record(trace)
    lines = sink.getvalue().splitlines()
    header = json.loads(lines[0])
    assert header["type"] == "header"
    assert header["format"] == FORMAT
    assert header["seed"] == 7
    events = [json.loads(line) for line in lines[1:]]
    assert [e["seq"] for e in events] == [0, 1, 2, 3]
    assert list(events[1])[:4] == ["seq", "t", "node", "kind"]
    assert events == trace.events
    assert trace.seq == 4


def test_emit_returns_seq_and_notifies_observers():
    trace = Trace(dict(HEADER))
    seen = []
    trace.observers.append(seen.append)
    assert trace.emit(0, "a", "x") == 0
    assert trace.emit(1, "a", "y", {"k": 1}) == 1
    assert [e["kind"] for e in seen] == ["x", "y"]
    assert seen[1]["k"] == 1
    assert trace.events is None  # nothing retained unless keep=True


def test_digest_matches_digest_of_stored_file(tmp_path):
    path = tmp_path / "trace.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        trace = Trace(dict(HEADER), sink=fh)
        _record(trace)
    header, lines = stored_lines(str(path))
    assert len(lines) == 4
    assert digest_of_lines(header, lines) == trace.digest()


def test_digest_of_string_sink_matches():
    sink = io.StringIO()
    trace = Trace(dict(HEADER), sink=sink)
    _record(trace)
    first, *rest = sink.getvalue().splitlines()
    assert digest_of_lines(json.loads(first), rest) == trace.digest()


def test_digest_excludes_harness_version_only():
    def digest(**changes):
        trace = Trace({**HEADER, **changes})
        _record(trace)
        return trace.digest()

    base = digest()
    assert digest(harness_version="9.9.9") == base
    assert digest(seed=8) != base
    trace = Trace(dict(HEADER))
    _record(trace)
    trace.emit(2_000, "b", "extra")
    assert trace.digest() != base


def test_digest_can_be_read_mid_run():
    trace = Trace(dict(HEADER))
    trace.emit(0, "a", "x")
    mid_run = trace.digest()
    assert trace.digest() == mid_run
    trace.emit(1, "a", "y")
    assert trace.digest() != mid_run


def test_read_trace_round_trip(tmp_path):
    path = tmp_path / "trace.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        trace = Trace(dict(HEADER), sink=fh, keep=True)
        _record(trace)
    header, events = read_trace(str(path))
    assert header == trace.header
    assert list(events) == trace.events


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    return str(path)


_HEADER_LINE = json.dumps({"type": "header", "format": FORMAT, "seed": 1})
_EV0 = '{"seq":0,"t":0,"node":"a","kind":"x"}'
_EV1 = '{"seq":1,"t":0,"node":"a","kind":"x"}'
_EV2 = '{"seq":2,"t":0,"node":"a","kind":"x"}'


def test_read_trace_rejects_bad_json_with_line(tmp_path):
    path = _write(tmp_path, f"{_HEADER_LINE}\n{_EV0}\n{{oops\n")
    _, events = read_trace(path)
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}:3: not JSON"):
        list(events)


def test_read_trace_rejects_bad_header_json(tmp_path):
    path = _write(tmp_path, "not json\n")
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}:1: not JSON"):
        read_trace(path)


def test_read_trace_requires_header(tmp_path):
    path = _write(tmp_path, f"{_EV0}\n{_EV1}\n")
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}:1: first line is not a trace header"):
        read_trace(path)


def test_read_trace_rejects_seq_gap(tmp_path):
    path = _write(tmp_path, f"{_HEADER_LINE}\n{_EV0}\n{_EV2}\n")
    _, events = read_trace(path)
    it = iter(events)
    assert next(it)["seq"] == 0
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}:3: expected an event with seq 1"):
        next(it)


def test_read_trace_rejects_non_object_line(tmp_path):
    path = _write(tmp_path, f"{_HEADER_LINE}\n[1, 2]\n")
    _, events = read_trace(path)
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}:2: expected a JSON object"):
        list(events)


def test_read_trace_missing_file(tmp_path):
    path = str(tmp_path / "absent.jsonl")
    with pytest.raises(TraceError, match=rf"^{re.escape(path)}: cannot open trace"):
        read_trace(path)
