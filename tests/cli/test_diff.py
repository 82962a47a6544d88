"""`epochsim diff`: where two runs part (in process, through `epochsim.cli.main`)."""

from __future__ import annotations

import json
import os

import pytest

from epochsim.cli import main
from reports.tracediff import diff_traces, first_different_line, setup_differences
from tests.cli.test_bad_input_edges import one_line_error
from tests.conftest import scenario_path

KIP359 = scenario_path("kip359-stale-leader-legacy")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The KIP-359 legacy scenario at seed 1 twice, and once with the produce epoch check."""
    root = tmp_path_factory.mktemp("diff")
    for name, extra in (("a", []), ("again", []),
                        ("fixed", ["--set", "protocol.produce_epoch_check=true"])):
        assert main(["run", KIP359, "--seed", "1", "--no-plot", "--out", str(root / name),
                     *extra]) in (0, 1)
    return root


def test_the_same_run_twice_differs_nowhere(capsys, runs):
    assert main(["diff", str(runs / "a"), str(runs / "again" / "trace.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "same setup" in out and "same events" in out
    assert "VIOLATED: stale_leader_append" in out.splitlines()[0]


def test_a_protocol_switch_shows_where_the_runs_part(capsys, runs):
    assert main(["diff", str(runs / "a"), str(runs / "fixed"), "--context", "2"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("VIOLATED: stale_leader_append")
    assert out[1].endswith("all invariants hold")
    assert "  options.protocol.produce_epoch_check: false -> true" in out
    diff = diff_traces(str(runs / "a"), str(runs / "fixed"), context=2)
    ev_a, ev_b = diff.first
    # the first event that differs is the first Produce: the check makes it carry the epoch
    assert ev_a["seq"] == ev_b["seq"] == diff.shared and len(diff.before) == 2
    assert ev_a["kind"] == ev_b["kind"] == "send" and ev_a != ev_b
    assert f"  A {ev_a['t'] / 1e6:.3f}s  seq {ev_a['seq']}" in "\n".join(out)
    assert any(line.startswith("    body:") or line.startswith("    parts:") for line in out)
    # over the whole run, only the fixed run gets Produce answers that fence the stale leader
    assert diff.counts[0] != diff.counts[1]
    assert any(line.startswith("events by kind that differ") for line in out)


def test_a_trace_cut_short_ends_where_the_other_goes_on(capsys, runs, tmp_path):
    lines = (runs / "a" / "trace.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:101]) + "\n")  # the header and 100 events
    assert main(["diff", str(runs / "a"), str(cut)]) == 1
    out = capsys.readouterr().out
    assert "the first 100 events are equal" in out
    assert "  B (trace ends here)" in out
    assert "trace cut short" in out.splitlines()[1]


def test_setup_differences_name_leaves_and_fault_steps():
    step = {"at_us": 1000, "action": "crash", "target": "b1"}
    other = {"at_us": 2000, "action": "restart", "target": "b1"}
    a = {"seed": 1, "options": {"protocol": {"profile": "2.5"}, "topics": [{"name": "t"}]},
         "schedule": [step, other]}
    b = {"seed": 2, "options": {"protocol": {"profile": "2.6"}, "topics": [{"name": "u"}]},
         "schedule": [other]}
    got = [(k, va, vb) for k, va, vb in setup_differences(a, b)]
    assert ("options.protocol.profile", "2.5", "2.6") in got
    assert ("options.topics[0].name", "t", "u") in got
    assert ("seed", 1, 2) in got
    assert [va for k, va, _ in got if k == "schedule step"] == [step]
    assert setup_differences(a, a) == []


def test_equal_events_written_differently_are_seen_byte_for_byte(runs, tmp_path):
    lines = (runs / "a" / "trace.jsonl").read_text().splitlines()
    event = json.loads(lines[5])
    lines[5] = json.dumps(dict(reversed(list(event.items()))), separators=(",", ":"))
    other = tmp_path / "reordered.jsonl"
    other.write_text("\n".join(lines) + "\n")
    a = str(runs / "a" / "trace.jsonl")
    assert diff_traces(a, str(other)).same_events  # the same values ...
    lineno, text_a, text_b = first_different_line(a, str(other))  # ... in another order
    assert lineno == 6 and json.loads(text_a) == json.loads(text_b) and text_a != text_b
    assert first_different_line(a, a) is None


def test_bad_input_is_one_line(capsys, runs, tmp_path):
    one_line_error(capsys, ["diff", runs / "a", tmp_path / "nope.jsonl"], "nope.jsonl")
    one_line_error(capsys, ["diff", runs / "a", tmp_path], "without trace.jsonl")
    (tmp_path / "junk.jsonl").write_text("not json\n")
    one_line_error(capsys, ["diff", tmp_path / "junk.jsonl", runs / "a"], "junk.jsonl")
    one_line_error(capsys, ["diff", runs / "a", runs / "a", "--context", "0"], "--context")


def test_kinds_skips_to_the_first_event_of_those_kinds_that_differs(capsys, runs):
    diff = diff_traces(str(runs / "a"), str(runs / "fixed"), kinds=frozenset({"produce_error"}))
    ev_a, ev_b = diff.first
    # the stale leader answers NOT_LEADER_OR_FOLLOWER without the check, FENCED_LEADER_EPOCH
    # with it, at the same instant: equal but for `seq` would also have matched
    assert ev_a["kind"] == ev_b["kind"] == "produce_error"
    assert (ev_a["error"], ev_b["error"]) == (6, 74) and ev_a["t"] == ev_b["t"]
    assert main(["diff", str(runs / "a"), str(runs / "fixed"), "--kinds", "produce_error"]) == 1
    out = capsys.readouterr().out
    assert f"the first {diff.shared:,} produce_error events are equal" in out
    assert "    error: 6 -> 74" in out.splitlines()
    one_line_error(capsys, ["diff", runs / "a", runs / "fixed", "--kinds", "appends"],
                   "unknown event kind 'appends'", "append")
    one_line_error(capsys, ["diff", runs / "a", runs / "fixed", "--kinds", ","], "no kind")


def test_kinds_ignore_the_seq_other_events_shift(runs, tmp_path):
    lines = (runs / "a" / "trace.jsonl").read_text().splitlines()
    shifted = [lines[0]]
    for i, line in enumerate(lines[1:]):
        event = json.loads(line)
        event["seq"] = i + 1 if i >= 10 else i  # one more event before seq 10 ...
        shifted.append(json.dumps(event, separators=(",", ":")))
    shifted.insert(11, json.dumps({**json.loads(lines[11]), "seq": 10, "kind": "crash"}))
    other = tmp_path / "shifted.jsonl"
    other.write_text("\n".join(shifted) + "\n")
    a = str(runs / "a")
    assert not diff_traces(a, str(other)).same_events
    assert diff_traces(a, str(other), kinds=frozenset({"append", "hw"})).same_events


def _fake_runs(monkeypatch, tweak):
    """`run --check-determinism` with its two child runs made in process, the second one
    changed by `tweak(out_dir)`: a stand-in for a model that is not deterministic."""
    import subprocess
    from types import SimpleNamespace

    def fake(cmd, env, **_kw):
        out = cmd[cmd.index("--out") + 1]
        code = main(cmd[cmd.index("run"):])
        if env["PYTHONHASHSEED"] == "2":
            tweak(out)
        return SimpleNamespace(returncode=code, stderr="", stdout="")

    monkeypatch.setattr(subprocess, "run", fake)


def test_check_determinism_shows_where_the_runs_part(capsys, monkeypatch):
    def other_seed(out):
        main(["run", KIP359, "--seed", "2", "--no-plot", "--out", out, "--force"])

    _fake_runs(monkeypatch, other_seed)
    assert main(["run", KIP359, "--seed", "1", "--check-determinism"]) == 1
    out = capsys.readouterr().out
    assert "NOT deterministic" in out and "    seed: 1 -> 2" in out.splitlines()
    assert "then the runs part" in out


def test_check_determinism_sees_equal_events_written_differently(capsys, monkeypatch):
    def reorder(out):
        path = os.path.join(out, "trace.jsonl")
        with open(path) as fh:
            lines = fh.read().splitlines()
        event = json.loads(lines[3])
        lines[3] = json.dumps(dict(reversed(list(event.items()))), separators=(",", ":"))
        with open(path, "w") as fh:
            fh.write("\n".join(lines) + "\n")

    _fake_runs(monkeypatch, reorder)
    assert main(["run", KIP359, "--seed", "1", "--check-determinism"]) == 1
    out = capsys.readouterr().out
    assert "the same events, written differently; first at line 4" in out
