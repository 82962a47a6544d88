"""Outputs that could not be written: one line, exit 2, and no file left that looks whole but
is not (an immutable verdict, a full disk, a kill while a kept trace's verdict was written)."""

from __future__ import annotations

import errno
import json
import os
import subprocess

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO, one_line_error


def chattr(flag: str, path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("name", ["verdict.json", "trace.jsonl"])
def test_an_immutable_output_file_is_one_line(capsys, a_run, name):
    if os.geteuid() != 0 or not chattr("+i", a_run / name):
        pytest.skip("needs root and chattr to make a file nobody can replace")
    try:
        # PermissionError from write_verdict, a traceback
        one_line_error(capsys, ["run", a_run.parent / "s.toml", "--out", a_run, "--no-plot",
                                "--force"],
                       f"{a_run / name}: cannot write or read it (Operation not permitted)",
                       "chattr")
    finally:
        chattr("-i", a_run / name)
    assert not [f for f in os.listdir(a_run) if f.endswith(".tmp")]


def no_space(monkeypatch) -> None:
    """Every batch of trace lines written from now on fails as on a full disk."""
    import sim.core.trace as trace_module

    def full(sink):
        def write(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return write

    monkeypatch.setattr(trace_module, "_bytes_writer", full)


def test_a_full_disk_while_the_trace_is_written_is_one_line_and_leaves_no_verdict(
        capsys, monkeypatch, a_run):
    before = (a_run / "trace.jsonl").read_bytes()
    no_space(monkeypatch)
    one_line_error(capsys, ["run", a_run.parent / "s.toml", "--out", a_run, "--no-plot",
                            "--seed", "2", "--force"],
                   "trace.jsonl: cannot write or read it (No space left on device)",
                   "free some space")
    # the earlier run's verdict is gone with the new run (it would describe another trace);
    # its trace stays whole, and no temporary file is left
    assert sorted(os.listdir(a_run)) == ["trace.jsonl"]
    assert (a_run / "trace.jsonl").read_bytes() == before


@pytest.fixture()
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (root only; skipped where mount is not allowed)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
            capture_output=True).returncode:
        pytest.skip("needs root and mount to make a small disk")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_run_onto_a_disk_that_fills_up_is_one_line(capsys, scenario, tiny_disk):
    one_line_error(capsys, ["run", scenario, "--out", tiny_disk / "r", "--no-plot"],
                   "No space left on device")
    assert os.listdir(tiny_disk / "r") == []


def test_a_verdict_is_replaced_whole_or_not_at_all(monkeypatch, tmp_path):
    from sim.core import files

    path = tmp_path / "verdict.json"
    path.write_text('{"old": true}\n')

    def fail(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError), files.atomic_write(str(path)) as fh:
        fh.write('{"new"')
        fail()
    assert path.read_text() == '{"old": true}\n' and os.listdir(tmp_path) == ["verdict.json"]
    files.write_text(str(path), "{}\n")
    assert path.read_text() == "{}\n" and os.listdir(tmp_path) == ["verdict.json"]


@pytest.mark.parametrize("damage", ["", '{"violated": ', "[]"], ids=["empty", "cut", "other"])
def test_resume_replays_a_kept_run_whose_verdict_is_damaged(capsys, tmp_path, damage):
    from epochsim.sweep.traces import TraceKeeper

    out = tmp_path / "sweep"
    (out / "cells").mkdir(parents=True)
    (out / "cells" / "edge-c1.toml").write_text(SCENARIO)
    run_dir = out / "traces" / "edge-c1" / "seed-1"
    run_dir.mkdir(parents=True)
    (run_dir / "verdict.json").write_text(damage)  # a kill while it was written
    keeper = TraceKeeper(str(out), 2)  # JSONDecodeError on every resume
    err = capsys.readouterr().err
    assert f"note: {run_dir / 'verdict.json'} is empty or damaged; its run is replayed" in err
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["seed"] == 1 and keeper.count == 1
    assert main(["check", str(run_dir)]) == 0
