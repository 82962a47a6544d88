"""Live progress: a rich bar on a terminal, short plain lines otherwise, and the phase lines."""

from __future__ import annotations

import io
import re

from epochsim.progress import RunProgress, duration_text, phase
from epochsim.sweep.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_a_last_line_with_the_count_and_how_long_it_took():
    out = io.StringIO()
    with RunProgress("suite", 5, stream=out, every_s=3600) as bar:
        for _ in range(5):
            bar.advance(1, note="1 missed")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines  # nothing while due lines are an hour apart, then the end
    assert lines[0].startswith("suite: 5/5 runs (100%)") and lines[0].endswith("1 missed")
    assert re.fullmatch(r"suite: 5 runs in \d+s", lines[1])


def test_a_pipe_gets_a_line_whenever_one_is_due():
    out = io.StringIO()
    with RunProgress("study", 3, stream=out, every_s=0) as bar:
        bar.advance(1)
        bar.advance(2)
    lines = out.getvalue().splitlines()
    assert [line.split()[1] for line in lines[:3]] == ["1/3", "3/3", "3/3"]


def test_a_terminal_gets_a_bar_redrawn_in_place_with_count_rate_and_eta():
    out = Terminal()
    with RunProgress("selftest", 4, stream=out, unit="tasks") as bar:
        bar.log("  [1/4] no_dedup_cache: found")
        bar.advance(4)
    text = out.getvalue()
    assert "4/4" in text and "tasks/s" in text and "ETA" in text
    assert "no_dedup_cache: found" in text
    assert "\x1b[" in text  # drawn with terminal control codes, not printed line by line
    assert re.search(r"selftest: 4 tasks in \d+s", text)


def test_a_resumed_sweep_counts_only_this_invocation_s_runs_in_its_rate():
    out = io.StringIO()
    progress = Progress(100, done=90, violating=2, stream=out, every_s=3600)
    progress.add(10, 1)
    assert progress.new == 10 and progress.done == 100
    progress.finish()
    first = out.getvalue().splitlines()[0]
    assert first.startswith("sweep: 100/100 runs") and first.endswith("violations in 3 runs")
    assert "sweep: 10 runs in" in out.getvalue()


def test_phase_lines_and_durations():
    out = io.StringIO()
    phase("starting Spark (local[*])", stream=out)
    assert out.getvalue() == "epochsim: starting Spark (local[*])\n"
    assert [duration_text(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]
