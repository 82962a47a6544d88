"""What the structural fuzz (tests/fuzz, tests/fuzz/run_all.py) found, one test per class:
an edited verdict.json, a file epochsim writes over one of the user's, an output directory
holding an earlier search, a path of non-UTF-8 bytes. (In process, through `epochsim.cli.main`.)"""

from __future__ import annotations

import json
import os

import pytest

from epochsim.cli import main
from tests.cli.edges import one_line_error


def _edit_verdict(run, edit) -> None:
    path = run / "verdict.json"
    verdict = json.loads(path.read_text())
    edit(verdict)
    path.write_text(json.dumps(verdict))


def _violating_run(tmp_path, name="v"):
    """A run with violations: KIP-359's scenario without the produce epoch check."""
    from tests.conftest import ROOT

    out = tmp_path / name
    code = main(["run", os.path.join(ROOT, "scenarios", "kip359-stale-leader-legacy.toml"),
                 "--out", str(out), "--no-plot"])
    assert code == 1
    return out


@pytest.fixture(scope="module")
def violating(tmp_path_factory):
    return _violating_run(tmp_path_factory.mktemp("violating"))


@pytest.mark.parametrize("key, value, words", [
    ("invariant", float("nan"), "violations[0].invariant is NaN, not a string"),
    ("invariant", {}, "violations[0].invariant is {}, not a string"),
    ("seqs", "x", "violations[0].seqs is \"x\", not a list"),
    ("t_us", True, "violations[0].t_us is true, not an integer"),
])
def test_an_edited_verdict_of_the_same_trace_is_refused_by_the_readers(
        capsys, violating, tmp_path, key, value, words):
    """diff, report and plot trust the verdict beside a trace with the same digest; its
    violations of the wrong shape raised TypeError in diff (sorting the invariants)."""
    import shutil

    run = tmp_path / "edited"
    shutil.copytree(violating, run)
    _edit_verdict(run, lambda v: v["violations"][0].update({key: value}))
    for command in (["diff", violating, run], ["report", run, "-o", tmp_path / "r.html"],
                    ["plot", run, "-o", tmp_path / "t.svg"]):
        one_line_error(capsys, command, "verdict.json: " + words, "remove it")


def test_an_edited_verdict_list_of_violations_keeps_its_member_checks(violating):
    from reports.rundata import violations_problem

    good = json.loads((violating / "verdict.json").read_text())["violations"]
    assert violations_problem(good) is None
    assert violations_problem([1]) == "violations[0] is not an object"
    assert "seqs holds a member" in violations_problem([{**good[0], "seqs": ["a"]}])


def test_run_out_holding_a_deeply_nested_verdict_is_refused_not_a_traceback(
        capsys, scenario, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "verdict.json").write_text("[" * 100_000)
    one_line_error(capsys, ["run", scenario, "--out", out, "--no-plot"], "already holds a run",
                   "--force")


def test_junit_xml_never_replaces_a_file_of_the_users(capsys, scenario, tmp_path):
    mine = tmp_path / "notes.xml"
    mine.write_text("<mine/>")
    one_line_error(capsys, ["suite", scenario, "--seeds", "1", "--out", tmp_path / "o",
                            "--junit-xml", mine], "--junit-xml", "not a JUnit report epochsim")
    assert mine.read_text() == "<mine/>" and not (tmp_path / "o").exists()


def test_junit_xml_replaces_its_own_report(capsys, scenario, tmp_path):
    report = tmp_path / "suite.xml"
    for n in range(2):
        assert main(["suite", str(scenario), "--seeds", "1", "--out", str(tmp_path / f"o{n}"),
                     "--junit-xml", str(report)]) == 0
    assert report.read_text().count("<testsuites") == 1


def test_junit_xml_is_not_written_through_a_link(capsys, scenario, tmp_path):
    target = tmp_path / "elsewhere.xml"
    target.write_text("mine")
    link = tmp_path / "suite.xml"
    os.symlink(target, link)
    one_line_error(capsys, ["suite", scenario, "--seeds", "1", "--out", tmp_path / "o",
                            "--junit-xml", link], "--junit-xml", "not a regular file")
    assert target.read_text() == "mine"


def test_explore_out_holding_an_earlier_search_is_refused_then_cleared_with_force(
        capsys, scenario, violating, tmp_path):
    """An explore that found nothing left the earlier search's counterexample.toml, trace and
    verdict beside its own explore.json, and `report` showed them as its own."""
    import shutil

    out = tmp_path / "search"
    shutil.copytree(violating, out)
    (out / "counterexample.toml").write_text('name = "earlier"\n')
    argv = ["explore", scenario, "--budget", "2", "--out", out, "--no-plot"]
    one_line_error(capsys, argv, "already holds the results of an earlier search",
                   "counterexample.toml", "--force")
    assert (out / "counterexample.toml").read_text() == 'name = "earlier"\n'
    assert main([str(a) for a in argv + ["--force"]]) == 0
    capsys.readouterr()
    assert sorted(os.listdir(out)) == ["explore.json"]  # the small scenario breaks nothing


def test_shrink_out_holding_an_earlier_search_is_refused(capsys, violating, tmp_path):
    out = tmp_path / "shrunk"
    out.mkdir()
    (out / "explore.json").write_text("{}")
    one_line_error(capsys, ["shrink", violating, "--out", out, "--no-plot"],
                   "earlier search (explore.json)", "--force")


def test_a_path_of_non_utf8_bytes_is_printed_and_written_into_pages(scenario, tmp_path):
    """A run directory named with a byte that is not UTF-8 (Python's '\\udcff'): under a
    UTF-8 locale (strict streams) `run` raised UnicodeEncodeError printing its summary, and
    `report` failed to write the name into its page (blamed on the run's records)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    odd = os.path.join(os.fsencode(tmp_path), b"run\xff")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    for argv in ([b"run", os.fsencode(scenario), b"--out", odd, b"--no-plot"], [b"report", odd]):
        proc = subprocess.run([sys.executable, "-m", "epochsim", *argv], cwd=ROOT, env=env,
                              capture_output=True, timeout=120)
        assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr
        assert odd in proc.stdout  # the name as given, so a repro line names the same file
    page = open(os.path.join(odd, b"report.html"), encoding="utf-8").read()
    assert "run\\udcff" in page


@pytest.mark.parametrize("argv", [
    ["suite", "{scenario}", "--seeds", "1", "--out", "{tmp}/o", "--junit-xml", "{tmp}/a\x00b"],
    ["shrink", "{tmp}", "--out", "{tmp}/a\x00b"],
    ["list", "profiles", "2.\x00"],
], ids=["junit-xml", "shrink-out", "list-name"])
def test_an_argument_holding_a_nul_byte_is_refused_before_anything_runs(
        capsys, scenario, tmp_path, argv):
    """`suite --junit-xml` took a NUL byte and raised ValueError writing the report after all
    its runs; `shrink --out` raised it comparing paths."""
    filled = [a.replace("{scenario}", str(scenario)).replace("{tmp}", str(tmp_path)) for a in argv]
    one_line_error(capsys, filled, "holds a NUL byte")
    assert not (tmp_path / "o").exists()
