"""A corrupted trace is never taken for a real one: every reader refuses it, naming the line."""

from __future__ import annotations

import json
import shutil

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO, one_line_error


def corrupt(a_run, tmp_path, how: str):
    """A copy of the run directory with its trace corrupted `how`; (directory, line named)."""
    out = tmp_path / f"corrupt-{how}"
    shutil.copytree(a_run, out)
    (out / "verdict.json").unlink()  # as a trace copied without its verdict
    lines = (out / "trace.jsonl").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if '"kind":"append"' in ln)
    ev = json.loads(lines[i])
    if how == "unknown_kind":  # gave a false acked_write_lost, exit 1
        ev["kind"] = "apend"
    elif how == "wrong_type":  # was accepted, exit 0
        ev["batches"][0]["base_offset"] = "x"
    if how in ("unknown_kind", "wrong_type"):
        lines[i] = json.dumps(ev, separators=(",", ":"))
    else:  # an event after `end`, and a second `end`: "all invariants hold"
        end = json.loads(lines[-1])
        i = len(lines)
        lines.append(json.dumps({**end, "seq": end["seq"] + 1}, separators=(",", ":")))
    (out / "trace.jsonl").write_text("\n".join(lines) + "\n")
    return out, i + 1


HOW = {"unknown_kind": "unknown event kind \"apend\"",
       "wrong_type": "field base_offset of batch 0 of an append is \"x\", not an int",
       "after_end": "a line after the run's `end` event"}


@pytest.mark.parametrize("how", sorted(HOW))
@pytest.mark.parametrize("command", ["check", "plot", "report", "diff"])
def test_every_reader_refuses_a_corrupted_trace_naming_the_line(capsys, a_run, tmp_path, how,
                                                                command):
    out, line = corrupt(a_run, tmp_path, how)
    args = {"check": ["check", out], "plot": ["plot", out, "-o", tmp_path / "t.png"],
            "report": ["report", out, "-o", tmp_path / "r.html"], "diff": ["diff", a_run, out]}
    one_line_error(capsys, args[command], f"{out / 'trace.jsonl'}:{line}: ", HOW[how])


def test_check_refuses_a_trace_its_verdict_does_not_describe(capsys, a_run, tmp_path):
    out = tmp_path / "edited"
    shutil.copytree(a_run, out)
    lines = (out / "trace.jsonl").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if '"kind":"ack"' in ln)
    ev = json.loads(lines[i])
    ev["latency_us"] += 1  # well formed, and nothing any invariant reads
    lines[i] = json.dumps(ev, separators=(",", ":"))
    (out / "trace.jsonl").write_text("\n".join(lines) + "\n")
    one_line_error(capsys, ["check", out], "records for its run", "was edited or replaced")
    (out / "verdict.json").unlink()  # a trace alone is checked as it is
    assert main(["check", str(out)]) == 0


def test_stray_replica_says_when_it_did_not_judge(capsys, tmp_path):
    # it passed silently on a run it never judged (Jepsen's :unknown)
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace("[run]", "[run]\nmax_events = 300"))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-plot"]) == 0
    assert ("liveness stray_replica: not judged: the run was cut off before its end "
            "(max_events)") in capsys.readouterr().out
    assert main(["check", str(tmp_path / "o")]) == 0
    assert "stray_replica: not judged" in capsys.readouterr().out


def test_stray_replica_says_what_it_judged(capsys, a_run):
    assert main(["check", str(a_run)]) == 0
    assert "liveness stray_replica: judged 3 live brokers" in capsys.readouterr().out
