"""Bad input to the storage and ListOffsets options reaches the CLI as one line and exit 2."""

from __future__ import annotations

import pytest

from tests.cli.edges import SCENARIO, one_line_error

FAULT = '\n[[faults]]\nat_ms = 100\naction = "log_dir_failure"\ntarget = "b1"\n'


@pytest.mark.parametrize("extra, words", [
    ("\n[cluster]\nlog_dirs = 2\n" + FAULT + "dir = 2\n",
     ["faults[0].dir", "log dir 2 does not exist", "cluster.log_dirs = 2"]),
    (FAULT + 'when = "soon"\n', ["faults[0].when", "unknown value 'soon'"]),
    (FAULT + 'data = "maybe"\n', ["faults[0].data", "unknown value 'maybe'"]),
    ('\n[[consumers]]\ntopic = "t"\nauto_offset_reset = "smallest"\n',
     ["consumers[0].auto_offset_reset", "unknown value 'smallest'"]),
], ids=["dir", "when", "data", "auto_offset_reset"])
def test_a_bad_storage_or_reset_option_is_one_line_and_exit_2(capsys, tmp_path, extra, words):
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO + extra)
    one_line_error(capsys, ["run", path, "--out", tmp_path / "out"], "bad.toml", *words)
