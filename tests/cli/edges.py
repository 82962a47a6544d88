"""Helpers of the bad-input tests: a small scenario, and the one-line error they all expect."""

from __future__ import annotations

import json

from epochsim.cli import main
from tests.cli.test_cli import GOOD

# tests.cli.test_cli's small scenario, with two partitions (t-1 exists, t-01 does not)
SCENARIO = 'name = "edge"\n' + GOOD.replace('name = "t"', 'name = "t"\npartitions = 2')


def one_line_error(capsys, args, *words):
    assert main([str(a) for a in args]) == 2, args
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def edited_trace(a_run, tmp_path, edit) -> str:
    """A copy of the run's trace with `edit(header, events)` applied (both JSON objects)."""
    lines = (a_run / "trace.jsonl").read_text().splitlines()
    header, events = json.loads(lines[0]), [json.loads(ln) for ln in lines[1:]]
    edit(header, events)
    out = tmp_path / "edited"
    out.mkdir()
    (out / "trace.jsonl").write_text("\n".join(json.dumps(x) for x in [header, *events]) + "\n")
    return str(out / "trace.jsonl")
