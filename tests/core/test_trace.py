"""Trace recorder and reader: dense seq, header first, digest, readable errors."""

import io
import json
import re

import pytest

from sim.core.trace import (
    FORMAT,
    Trace,
    TraceError,
    digest_of_lines,
    json_members,
    json_str,
    json_text,
    read_trace,
    stored_lines,
)

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
    trace.flush()
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
    trace.observe(seen.append)
    assert trace.emit(0, "a", "x") == 0
    assert trace.emit(1, "a", "y", {"k": 1}) == 1
    assert [e["kind"] for e in seen] == ["x", "y"]
    assert seen[1]["k"] == 1
    assert trace.events is None  # nothing retained unless keep=True


def test_observers_see_only_the_kinds_they_asked_for_in_the_order_added():
    trace = Trace(dict(HEADER))
    seen = []
    trace.observe(lambda ev: seen.append(("x-only", ev["kind"])), {"x"})
    trace.emit(0, "a", "x")
    trace.emit(0, "a", "y")
    trace.observe(lambda ev: seen.append(("all", ev["kind"])))  # added later: from now on
    trace.emit(1, "a", "y")
    trace.emit(1, "a", "x")
    assert seen == [("x-only", "x"), ("all", "y"), ("x-only", "x"), ("all", "x")]
    assert trace.routes["x"] and trace.routes["z"]


def test_emit_encoded_builds_no_event_for_a_kind_nobody_wants(monkeypatch):
    trace = Trace(dict(HEADER))
    seen = []
    trace.observe(seen.append, {"x"})
    built = []
    publish = trace.publish
    monkeypatch.setattr(trace, "publish", lambda *a: built.append(a[3]) or publish(*a))
    trace.emit_encoded(0, "a", "y", ',"node":"a","kind":"y","k":1}', ("k",), (1,))
    trace.emit_encoded(0, "a", "x", ',"node":"a","kind":"x","k":1}', ("k",), (1,))
    assert built == ["x"] and [e["kind"] for e in seen] == ["x"]
    assert not trace.routes["y"]


def test_digest_matches_digest_of_stored_file(tmp_path):
    path = tmp_path / "trace.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        trace = Trace(dict(HEADER), sink=fh)
        _record(trace)
        trace.flush()
    header, lines = stored_lines(str(path))
    assert len(lines) == 4
    assert digest_of_lines(header, lines) == trace.digest()


def test_digest_of_string_sink_matches():
    sink = io.StringIO()
    trace = Trace(dict(HEADER), sink=sink)
    _record(trace)
    trace.flush()
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
        trace.flush()
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


def test_digest_across_hash_batches_and_mid_run(tmp_path):
    path = tmp_path / "trace.jsonl"
    digests = {}
    with open(path, "w", encoding="utf-8") as fh:
        trace = Trace(dict(HEADER), sink=fh)
        for i in range(1_300):
            trace.emit(i, f"n{i % 3}", "tick", {"i": i})
            if i in (0, 511, 512, 700):
                digests[i + 1] = trace.digest()
        digests[1_300] = trace.digest()
    header, lines = stored_lines(str(path))
    for count, digest in digests.items():
        assert digest_of_lines(header, lines[:count]) == digest


def test_emit_encoded_writes_what_emit_writes():
    fields = {"mid": 4, "dst": "b\u00e9", "msg": 'K"'}
    slow, fast = io.StringIO(), io.StringIO()
    plain = Trace(dict(HEADER), sink=slow, keep=True)
    quick = Trace(dict(HEADER), sink=fast, keep=True)
    seen = []
    quick.observe(seen.append)
    for t_us in (0, 15, 1.5):  # a float time falls back to emit
        plain.emit(t_us, "a", "send", fields)
        text = f',"node":"a","kind":"send","mid":4,"dst":{json_str(fields["dst"])},"msg":"K\\""}}'
        quick.emit_encoded(t_us, "a", "send", text, ("mid", "dst"), (4, fields["dst"]),
                           {"msg": 'K"'})
    plain.emit(20, "a", "x", {"k": [1]})
    quick.emit_encoded(20, "a", "x", ',"node":"a","kind":"x","k":[1]}', (), (), {"k": [1]})
    assert fast.getvalue() == slow.getvalue()
    assert quick.events == plain.events == seen
    assert quick.digest() == plain.digest()
    assert quick.seq == plain.seq == 4


@pytest.mark.parametrize("fields", [
    {},
    {"a": 1, "b": "x", "c": None, "d": True, "e": False, "f": 1.5, "g": -0.0},
    {"nested": {"k": [1, [2, ("t", 3)]]}, "big": 10**30, "nan": float("nan")},
    {"é\"\n": "ü\t\\", "empty": [], "tuple": ()},
])
def test_json_members_matches_the_encoder(fields):
    expected = "," + json_text(fields)[1:-1] if fields else ""
    assert json_members(fields) == expected
    assert json_text(fields) == json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def test_json_members_declines_non_string_keys():
    assert json_members({1: "x"}) is None


def test_json_text_circular_reference_is_still_reported():
    loop: list = []
    loop.append(loop)
    for _ in range(2):  # and the encoder still works for the next call
        with pytest.raises(ValueError, match="Circular"):
            json_text({"x": loop})
        assert json_text({"x": [1]}) == '{"x":[1]}'


def test_lines_reach_the_sink_in_batches_and_all_of_them_on_flush():
    sink = io.StringIO()
    trace = Trace(dict(HEADER), sink=sink)
    for i in range(1_000):
        trace.emit(i, "a", "tick")
    written = len(sink.getvalue().splitlines()) - 1
    assert 0 < written < 1_000  # streamed while running, not held to the end
    trace.flush()
    assert len(sink.getvalue().splitlines()) == 1_001
