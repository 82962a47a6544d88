"""Fixtures of the CLI tests: a small scenario file, a run of it, a directory nobody can write."""

from __future__ import annotations

import os

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO


@pytest.fixture()
def scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture()
def a_run(tmp_path, scenario):
    out = tmp_path / "run"
    main(["run", str(scenario), "--out", str(out), "--no-plot"])
    return out


@pytest.fixture()
def unwritable(tmp_path):
    """An existing, empty directory nobody can create files in: immutable for root (mode bits
    do not stop root), read-only for anyone else."""
    import subprocess
    locked = tmp_path / "locked"
    locked.mkdir()
    root = os.geteuid() == 0
    if root:
        if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode:
            pytest.skip("needs chattr to make a directory root cannot write")
    else:
        locked.chmod(0o555)
    try:
        yield locked
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(locked)], capture_output=True)
        else:
            locked.chmod(0o755)
