"""Bad input found by fuzzing the CLI: each gets one line and exit 2, and nothing a user wrote
is overwritten. (In process, through `epochsim.cli.main`.)"""

from __future__ import annotations

import os

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO, one_line_error


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


def test_a_recorded_verdict_naming_an_unchecked_invariant_is_blamed(capsys, a_run, tmp_path):
    verdict = a_run / "verdict.json"
    verdict.write_text('{"violations": [{"invariant": "no_such_invariant"}]}')
    err = one_line_error(capsys, ["shrink", a_run, "--out", tmp_path / "s"],
                         "verdict.json: names no_such_invariant", "pass --target")
    assert "--target no_such" not in err  # the user did not pass one


@pytest.mark.parametrize("body, why", [("garbage", "Expecting value"),
                                       (b"\xff\xfe", "can't decode"),
                                       ("[" * 1100 + "]" * 1100, "nested too deeply")])
@pytest.mark.parametrize("kind", ["suite", "sweep"])
def test_a_suite_or_sweep_file_that_is_not_json_is_named(capsys, tmp_path, kind, body, why):
    run_dir = tmp_path / kind
    run_dir.mkdir()
    target = run_dir / f"{kind}.json"
    target.write_bytes(body if isinstance(body, bytes) else body.encode())
    one_line_error(capsys, ["report", run_dir, "-o", tmp_path / "r.html"],
                   f"{kind}.json: not a JSON file epochsim wrote", why)


def test_report_and_plot_replace_only_their_own_files(capsys, a_run, tmp_path):
    for out in ("page.html", "picture.png", "picture.svg"):
        command = ["report", a_run] if out.endswith(".html") else ["plot", a_run / "trace.jsonl"]
        for _ in range(2):  # a second run replaces the first one's file (it carries the stamp)
            assert main([str(a) for a in command + ["-o", tmp_path / out]]) == 0
        capsys.readouterr()
        (tmp_path / out).write_text("the user's own file")
        one_line_error(capsys, command + ["-o", tmp_path / out], "is not a file epochsim writes")
        assert (tmp_path / out).read_text() == "the user's own file"


def test_plot_and_report_say_when_a_trace_was_cut_short(capsys, a_run, tmp_path):
    lines = (a_run / "trace.jsonl").read_text().splitlines()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "trace.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    assert main(["plot", str(cut / "trace.jsonl"), "-o", str(tmp_path / "t.svg")]) == 0
    assert "no end event" in capsys.readouterr().err
    assert "trace cut short" in (tmp_path / "t.svg").read_text()
    assert main(["report", str(cut)]) == 0
    assert "no end event" in capsys.readouterr().err
    assert "trace cut short" in (cut / "report.html").read_text()
    assert main(["report", str(a_run)]) == 0  # a whole run says nothing of the kind
    assert "cut short" not in (a_run / "report.html").read_text()


def test_explore_database_must_be_a_writable_directory(capsys, scenario, tmp_path):
    taken = tmp_path / "db"
    taken.write_text("a file")
    one_line_error(capsys, ["explore", scenario, "--budget", "1", "--database", taken,
                            "--out", tmp_path / "e"], "--database", "pass a directory")


@pytest.mark.parametrize("name", [".", "..", "x" * 250])
def test_a_topic_name_kafka_refuses_is_refused(capsys, scenario, tmp_path, name):
    scenario.write_text(SCENARIO.replace('name = "t"', f'name = "{name}"')
                        .replace('topic = "t"', f'topic = "{name}"'))
    one_line_error(capsys, ["run", scenario, "--out", tmp_path / "o"], "invalid topic name")


def test_a_scenario_name_of_blanks_is_refused(capsys, scenario, tmp_path):
    scenario.write_text(SCENARIO.replace('name = "edge"', 'name = "   "'))
    one_line_error(capsys, ["run", scenario, "--out", tmp_path / "o"], "cannot name an output")


def test_a_scenario_or_mutant_named_twice_is_refused(capsys, scenario, tmp_path):
    one_line_error(capsys, ["study", scenario, scenario, "--out", tmp_path / "o"],
                   "pass each scenario once")
    one_line_error(capsys, ["selftest", "--mutants", "hw_ignores_isr,hw_ignores_isr",
                            "--out", tmp_path / "m"], "named twice")
