"""Bad input found by fuzzing the CLI, continued: edited traces, pages and pictures, output
directories that cannot be written, repro lines. (In process, through `epochsim.cli.main`.)"""

from __future__ import annotations

import json
import os

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO, edited_trace, one_line_error


@pytest.mark.parametrize("t", [-1, 10**400, "back"], ids=["negative", "huge", "back"])
def test_a_trace_whose_time_runs_back_or_beyond_any_run_is_refused(capsys, a_run, tmp_path, t):
    def edit(header, events):
        events[20]["t"] = events[19]["t"] - 1 if t == "back" else t
    trace = edited_trace(a_run, tmp_path, edit)
    for command in (["check", trace], ["diff", a_run, trace], ["plot", trace, "-o",
                                                                tmp_path / "t.svg"]):
        err = one_line_error(capsys, command, "trace.jsonl:22: t ", "out of order")
        assert err.count("trace.jsonl") == 1, err  # the file is named once


def test_a_trace_in_another_format_is_refused(capsys, a_run, tmp_path):
    trace = edited_trace(a_run, tmp_path, lambda h, _: h.update(format="epochsim-trace/2"))
    one_line_error(capsys, ["check", trace], "format 'epochsim-trace/2'", "epochsim-trace/1")
    one_line_error(capsys, ["diff", a_run, trace], "format 'epochsim-trace/2'")


@pytest.mark.parametrize("command, page", [
    (["report", "{run}"], "{run}/report.html"),
    (["report", "{run}", "-o", "{tmp}/report.html"], "{tmp}/report.html"),
    (["plot", "{run}/trace.jsonl"], "{run}/timeline.png"),
    (["plot", "{run}/trace.jsonl", "-o", "{tmp}/timeline.svg"], "{tmp}/timeline.svg")])
def test_a_page_or_picture_is_not_written_through_a_link(capsys, a_run, tmp_path, command, page):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    fill = {"run": a_run, "tmp": tmp_path}
    os.symlink(notes, page.format(**fill))
    one_line_error(capsys, [c.format(**fill) for c in command], "is a symbolic link")
    assert notes.read_text() == "mine"


@pytest.mark.parametrize("command", ["suite", "study"])
def test_suite_and_study_refuse_seeds_they_could_not_run_or_replay(capsys, scenario, tmp_path,
                                                                   command):
    # so many runs would be planned up front (and held) before the first one starts
    one_line_error(capsys, [command, scenario, "--seeds", 10**12, "--out", tmp_path / "o"],
                   "--seeds", "at most 100000", "epochsim sweep")
    # a seed past 2**53 could not be replayed with `epochsim run --seed`
    scenario.write_text(f"seed = {2**53}\n" + SCENARIO)
    one_line_error(capsys, [command, scenario, "--seeds", 2, "--out", tmp_path / "o"],
                   "s.toml: seeds 9007199254740992..9007199254740993 pass 2**53")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("key, words", [
    ("faults.0.at_ms=5", ["faults.0.at_ms: no item 0 in faults: the scenario has none",
                          "add [[faults]]"]),
    (".=1", ["a part of the key is empty"]),
    ("run..duration_ms=1", ["run..duration_ms: a part of the key is empty"])])
def test_a_set_key_that_names_nothing_says_so(capsys, scenario, tmp_path, key, words):
    one_line_error(capsys, ["run", scenario, "--set", key, "--out", tmp_path / "o"], *words)


def test_a_window_after_the_run_is_named_in_a_short_line(capsys, a_run, tmp_path):
    err = one_line_error(capsys, ["plot", a_run / "trace.jsonl", "-o", tmp_path / "t.svg",
                                  "--window", "1e300:"], "--window 1e+300:", "the run lasts 3.000s")
    assert len(err) < 300, err  # not the 300 digits of 1e300 seconds in microseconds


def test_a_run_cut_short_by_max_events_does_not_meet_its_pass(capsys, scenario, tmp_path):
    scenario.write_text(SCENARIO.replace("[run]", "[run]\nmax_events = 300"))
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "stopped by max_events" in out and "expectation 'pass': NOT met: the run stopped " \
        "at run.max_events = 300 after " in out and "raise run.max_events" in out, out
    verdict = json.loads((tmp_path / "o" / "verdict.json").read_text())
    assert not verdict["expectation_met"] and verdict["violations"] == []
    assert main(["report", str(tmp_path / "o")]) == 0
    assert "raise run.max_events" in (tmp_path / "o" / "report.html").read_text()
    assert main(["suite", str(scenario), "--out", str(tmp_path / "s"), "--jobs", "1"]) == 1
    assert "violated: none; cut short by run.max_events" in capsys.readouterr().out


@pytest.mark.parametrize("edit, words", [
    (lambda o: o.update(consumers=5), "options.consumers: 5 is not an array of clients"),
    (lambda o: o.update(consumers=[5]), "options.consumers[0]: 5 is not a client object"),
    (lambda o: o["producers"][0].update(request_timeout_ms="30 s"),
     "options.producers[0].request_timeout_ms: '30 s' is not a whole number"),
    # a thousand million brokers made the rules build a list per broker until memory ran out
    (lambda o: o["cluster"].update(brokers=100_000),
     "options.cluster.brokers: 100000 is not a broker count 1..64")],
    ids=["consumers-number", "consumers-of-numbers", "timeout-text", "brokers-huge"])
def test_an_edited_header_options_is_refused_by_every_reader(capsys, a_run, tmp_path, edit,
                                                             words):
    trace = edited_trace(a_run, tmp_path, lambda header, _: edit(header["options"]))
    for command in (["check", trace], ["plot", trace, "-o", tmp_path / "t.svg"],
                    ["diff", a_run, trace], ["report", os.path.dirname(trace)]):
        one_line_error(capsys, command, "edited/trace.jsonl: header (line 1): ", words)


@pytest.mark.parametrize("names, words", [
    (",", ["--invariants ',': names no invariant", "leave the flag out"]),
    (" , ", ["names no invariant"]),
    ("", ["check --invariants: '' is empty"]),
    ("stale_leader_append,stale_leader_append", ["'stale_leader_append' is named twice"])])
def test_check_invariants_must_name_each_invariant_once(capsys, a_run, names, words):
    # ',' checked nothing and said "all invariants hold"; a name twice doubled its violations
    one_line_error(capsys, ["check", a_run / "trace.jsonl", "--invariants", names], *words)


@pytest.mark.parametrize("command, mine", [
    (["report", "{run}"], "{run}/report.html"),
    (["report", "{run}", "-o", "{tmp}/notes/report.html"], "{tmp}/notes/report.html"),
    (["plot", "{run}/trace.jsonl"], "{run}/timeline.png"),
    (["plot", "{run}/trace.jsonl", "-o", "{tmp}/notes/timeline.svg"], "{tmp}/notes/timeline.svg"),
    (["run", "{scenario}", "--out", "{tmp}/notes"], "{tmp}/notes/timeline.png")])
def test_a_users_file_with_epochsims_name_is_never_replaced(capsys, a_run, scenario, tmp_path,
                                                            command, mine):
    # only the stamp says epochsim wrote a page or picture; its name alone is the user's too
    fill = {"run": a_run, "tmp": tmp_path, "scenario": scenario}
    mine = mine.format(**fill)
    os.makedirs(os.path.dirname(mine), exist_ok=True)
    with open(mine, "w") as fh:
        fh.write("my notes")
    one_line_error(capsys, [c.format(**fill) for c in command], os.path.basename(mine),
                   "epochsim")
    with open(mine) as fh:
        assert fh.read() == "my notes"


def test_epochsims_own_pages_and_pictures_are_replaced(capsys, a_run, scenario, tmp_path):
    assert main(["run", str(scenario), "--out", str(a_run), "--force"]) == 0  # its timeline.png
    for _ in range(2):
        assert main(["report", str(a_run)]) == 0
        assert main(["plot", str(a_run / "trace.jsonl")]) == 0


def test_explore_never_writes_over_the_scenario_it_explores(capsys, scenario, tmp_path):
    exdir = tmp_path / "exdir"
    exdir.mkdir()
    mine = exdir / "counterexample.toml"
    mine.write_text(scenario.read_text() + "# my edits\n")
    one_line_error(capsys, ["explore", mine, "--out", exdir, "--budget", 1, "--shrink-runs", 1,
                            "--no-plot"], "its counterexample.toml is", "the scenario being "
                   "explored", "choose another --out")
    assert mine.read_text().endswith("# my edits\n")


@pytest.mark.parametrize("command", [
    ["run", "{scenario}", "--no-plot"], ["suite", "{scenario}", "--jobs", "1"],
    ["study", "{scenario}", "--seeds", "1", "--jobs", "1", "--no-plot"],
    ["explore", "{scenario}", "--budget", "1", "--shrink-runs", "1", "--no-plot"],
    ["shrink", "{run}", "--no-plot"], ["sweep", "{spec}"]],
    ids=lambda c: c[0])
def test_an_out_directory_that_cannot_be_written_is_refused_first(capsys, scenario, a_run,
                                                                  tmp_path, unwritable, command):
    # found only when writing, it raised from the worker pool (suite) or lost every result
    # after all the runs (study)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'scenarios = ["{scenario.name}"]\nseeds = 1\n')
    fill = {"scenario": scenario, "run": a_run, "spec": spec}
    one_line_error(capsys, [c.format(**fill) for c in command] + ["--out", unwritable],
                   f"--out {unwritable}: cannot write into it", "choose another --out")
    assert os.listdir(unwritable) == []


SETS = ["--set", 'network.latency={dist="constant",ms=2}', "--set", 'name="123"',
        "--set", 'description="it\'s a \\"test\\""']


def test_check_determinism_passes_each_set_value_as_it_was_given(capsys, scenario):
    # Python's str() of a table and an unquoted "123" made the child runs refuse the values
    # a plain run takes ("error: error: ...: network.latency: expected an inline table")
    assert main(["run", str(scenario), "--check-determinism", *SETS]) == 0
    assert "deterministic: seed 1 gives byte-identical traces" in capsys.readouterr().out


def test_the_repro_line_runs_as_pasted(capsys, scenario, tmp_path):
    import shlex
    assert main(["run", str(scenario), "--out", str(tmp_path / "a"), "--no-plot", *SETS]) == 0
    out = capsys.readouterr().out
    repro = next(ln for ln in out.splitlines() if "repro: " in ln).split("repro: ", 1)[1]
    argv = shlex.split(repro)
    assert argv[:2] == ["epochsim", "run"]
    assert main(argv[1:] + ["--out", str(tmp_path / "b"), "--no-plot"]) == 0
    verdicts = [json.loads((tmp_path / d / "verdict.json").read_text()) for d in "ab"]
    assert verdicts[0]["trace_digest"] == verdicts[1]["trace_digest"]
    assert verdicts[1]["scenario"] == "123"  # still a string, not the integer 123


def test_check_determinism_refuses_an_out_it_would_leave_empty(capsys, scenario, tmp_path):
    one_line_error(capsys, ["run", scenario, "--check-determinism", "--out", tmp_path / "d"],
                   "--check-determinism writes no run", "leave out --out")
    assert not (tmp_path / "d").exists()


def test_a_trace_from_a_pipe_is_refused_by_name(a_run):
    # `cat trace.jsonl | epochsim check /dev/stdin` was "the trace has no end event: it is cut
    # short": the checker reads a trace twice, and a pipe's second reading is empty
    import subprocess
    import sys

    from tests.conftest import ROOT
    proc = subprocess.run([sys.executable, "-m", "epochsim", "check", "/dev/stdin"], cwd=ROOT,
                          input=(a_run / "trace.jsonl").read_bytes(), capture_output=True,
                          timeout=120)
    err = proc.stderr.decode().strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "/dev/stdin: not a regular file (a pipe or a device)" in err and "save it to a " \
        "file" in err, err


def test_check_and_plot_take_a_run_directory(capsys, a_run, tmp_path):
    # diff and report took one; check said "cannot open trace (Is a directory)"
    assert main(["check", str(a_run)]) == 0
    assert f"{a_run / 'trace.jsonl'}: " in capsys.readouterr().out
    assert main(["plot", str(a_run), "-o", str(tmp_path / "t.svg")]) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(capsys, ["check", empty], "a directory without trace.jsonl")


def test_huge_window_and_context_flags_are_blamed_on_the_flag(capsys, a_run, tmp_path):
    # both raised OverflowError inside the reader, reported as "a record does not have the
    # shape epochsim writes ... was it edited?"
    err = one_line_error(capsys, ["plot", a_run / "trace.jsonl", "-o", tmp_path / "t.svg",
                                  "--window", "1e308:"], "--window 1e+308:",
                         "the run lasts 3.000s")
    assert "shape" not in err
    err = one_line_error(capsys, ["diff", a_run, a_run, "--context", "99999999999999999999"],
                         "argument --context: 99999999999999999999: at most 1000000")
    assert "shape" not in err


@pytest.mark.parametrize("value, words", [
    ("[stray_replica]", ["--set invariants: [stray_replica] is not a TOML value",
                         "quote the strings inside it: --set 'invariants=[\"stray_replica\"]'"]),
    ("[1, x=]", ["is not a TOML value", "strings quoted"])])
def test_a_set_array_with_bare_words_says_to_quote_them(capsys, scenario, tmp_path, value,
                                                         words):
    # it was kept as the string "[stray_replica]": "expected an array ... write it as [ ... ]"
    one_line_error(capsys, ["run", scenario, "--set", f"invariants={value}", "--out",
                            tmp_path / "o"], *words)


def test_a_bom_is_named(capsys, scenario, tmp_path):
    # tomllib says "Invalid statement" at line 1, which does not point at the invisible BOM
    scenario.write_bytes(b"\xef\xbb\xbf" + scenario.read_bytes())
    one_line_error(capsys, ["run", scenario, "--out", tmp_path / "o"],
                   "s.toml: file: starts with a byte-order mark (BOM)", "without a BOM")
    spec = tmp_path / "spec.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + b'scenarios = ["s.toml"]\n')
    one_line_error(capsys, ["sweep", spec, "--out", tmp_path / "w"], "byte-order mark")


def test_plot_o_needs_a_name_before_the_extension(capsys, a_run):
    one_line_error(capsys, ["plot", a_run / "trace.jsonl", "-o", ".png"],
                   "-o .png: names no file, only an extension", "timeline.png")


def test_shrink_of_a_verdict_names_the_run_to_pass(capsys, a_run, tmp_path):
    # it was read as a trace: "verdict.json:1: not JSON", though it is JSON
    one_line_error(capsys, ["shrink", a_run / "verdict.json", "--out", tmp_path / "s"],
                   "verdict.json: is a run's verdict", f"pass its run directory ({a_run})")


def test_report_makes_its_folder_as_plot_does(capsys, a_run, tmp_path):
    # report -o nodir/r.html failed only after building the whole page; plot made the folder
    assert main(["report", str(a_run), "-o", str(tmp_path / "nodir" / "r.html")]) == 0
    assert (tmp_path / "nodir" / "r.html").is_file()
    (tmp_path / "a-file").write_text("x")
    for command in (["report", a_run, "-o", tmp_path / "a-file" / "r.html"],
                    ["plot", a_run / "trace.jsonl", "-o", tmp_path / "a-file" / "t.svg"]):
        one_line_error(capsys, command, "cannot make its folder", "choose another output")
