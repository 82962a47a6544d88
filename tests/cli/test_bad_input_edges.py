"""Bad input found by fuzzing the CLI: each gets one line and exit 2, and nothing a user wrote
is overwritten. (In process, through `epochsim.cli.main`.)"""

from __future__ import annotations

import os

import pytest

from epochsim.cli import main
from tests.cli.test_cli import GOOD

# tests.cli.test_cli's small scenario, with two partitions (t-1 exists, t-01 does not)
SCENARIO = 'name = "edge"\n' + GOOD.replace('name = "t"', 'name = "t"\npartitions = 2')


@pytest.fixture()
def scenario(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


def one_line_error(capsys, args, *words):
    assert main([str(a) for a in args]) == 2, args
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def test_a_list_index_must_be_ascii_digits(capsys, scenario, tmp_path):
    one_line_error(capsys, ["run", scenario, "--set", "producers.\u00b2.acks=1", "--out",
                            tmp_path / "o"], "no item \u00b2 in producers")


def test_a_partition_is_written_without_leading_zeros(capsys, scenario, tmp_path):
    scenario.write_text(SCENARIO + '[[faults]]\nat_ms = 500\naction = "move_leader"\n'
                                   'target = "t-01"\n')
    one_line_error(capsys, ["run", scenario, "--out", tmp_path / "o"], "'t-01' is not a partition")


def test_a_mix_that_would_fire_millions_of_times_is_refused(capsys, scenario, tmp_path):
    scenario.write_text(SCENARIO.replace("duration_ms = 3000", "duration_ms = 100000000")
                        + '[[mix]]\naction = "heal"\nevery_ms = 1\n')
    one_line_error(capsys, ["run", scenario, "--out", tmp_path / "o"], "mix[0].every_ms",
                   "raise every_ms")


def test_a_newline_in_a_path_stays_on_one_line(capsys):
    one_line_error(capsys, ["check", "no\nsuch.jsonl"], "no\\nsuch.jsonl")


def test_a_link_in_the_output_directory_is_not_written_through(capsys, scenario, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(notes, out / "trace.jsonl")
    one_line_error(capsys, ["run", scenario, "--out", out, "--no-plot"], "did not write")
    assert notes.read_text() == "mine"


@pytest.fixture()
def a_run(tmp_path, scenario):
    out = tmp_path / "run"
    main(["run", str(scenario), "--out", str(out), "--no-plot"])
    return out


def test_shrink_never_writes_over_the_run_it_shrinks(capsys, a_run):
    before = (a_run / "trace.jsonl").read_bytes()
    one_line_error(capsys, ["shrink", a_run, "--out", a_run], "is the run being shrunk")
    assert (a_run / "trace.jsonl").read_bytes() == before


def test_a_verdict_nested_too_deeply_is_named(capsys, a_run, tmp_path):
    (a_run / "verdict.json").write_text("[" * 1100 + "]" * 1100)
    one_line_error(capsys, ["report", a_run, "-o", tmp_path / "r.html"], "nested too deeply")
    one_line_error(capsys, ["shrink", a_run, "--out", tmp_path / "s"], "verdict.json")


def test_check_refuses_a_trace_cut_short(capsys, a_run, tmp_path):
    lines = (a_run / "trace.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    one_line_error(capsys, ["check", cut], "no `end` event")
    assert main(["check", str(a_run / "trace.jsonl")]) == 0


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc/self/mem")
def test_a_trace_that_fails_to_read_is_named(capsys, tmp_path):
    link = tmp_path / "eio.jsonl"
    os.symlink("/proc/self/mem", link)
    one_line_error(capsys, ["check", link], "eio.jsonl: cannot read trace")
