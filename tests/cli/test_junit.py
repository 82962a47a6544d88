"""`epochsim suite --junit-xml FILE`: one test case per scenario and seed, a failure for each
run that missed its expectation, valid against the JUnit schema in tests/junit.xsd."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from epochsim.cli import main
from epochsim.junit import junit_xml
from tests.cli.edges import one_line_error
from tests.conftest import ROOT, scenario_path

PASSING = scenario_path("finding-stray-after-lost-stop-replica-full")  # a short run
VIOLATING = scenario_path("finding-stray-after-lost-stop-replica-zk")  # breaks stray_replica


@pytest.fixture(scope="module")
def schema():
    try:
        from lxml import etree
    except ImportError:
        pytest.fail("lxml is missing: install the dev extras (pip install -e '.[dev]', or "
                    "make venv)")
    return etree.XMLSchema(etree.parse(os.path.join(ROOT, "tests", "junit.xsd")))


def valid(schema, text: str) -> bool:
    from lxml import etree
    return schema.validate(etree.fromstring(text.encode("utf-8")))


@pytest.fixture
def failing(tmp_path):
    """The violating scenario expecting a pass: every run of it misses its expectation."""
    path = tmp_path / "bad.toml"
    path.write_text(open(VIOLATING, encoding="utf-8").read().replace(
        'expect = "violation:stray_replica"', 'expect = "pass"'))
    return str(path)


def test_the_report_has_a_case_per_seed_and_a_failure_per_missed_expectation(
        tmp_path, failing, schema, capsys):
    report = tmp_path / "report.xml"
    report.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="epochsim suite" '
                      'tests="0" />\n')  # an older report of epochsim's: replaced whole
    args = ["suite", PASSING, failing, "--seeds", "2", "--jobs", "1", "--out",
            str(tmp_path / "out"), "--junit-xml", str(report)]
    assert main(args) == 1
    assert f"wrote {report}" in capsys.readouterr().out
    text = report.read_text(encoding="utf-8")
    assert valid(schema, text), schema.error_log
    root = ET.fromstring(text)
    assert (root.tag, root.get("tests"), root.get("failures")) == ("testsuites", "4", "2")
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("finding-stray-after-lost-stop-replica-full", "2", "0"),
        ("finding-stray-after-lost-stop-replica-zk", "2", "2")]
    cases = root.findall("testsuite/testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (PASSING, "finding-stray-after-lost-stop-replica-full[seed=1]"),
        (PASSING, "finding-stray-after-lost-stop-replica-full[seed=2]"),
        (failing, "finding-stray-after-lost-stop-replica-zk[seed=1]"),
        (failing, "finding-stray-after-lost-stop-replica-zk[seed=2]")]
    assert [c.find("failure") is None for c in cases] == [True, True, False, False]
    failure = cases[2].find("failure")
    assert failure.get("message") == "expectation 'pass' NOT met: violated stray_replica"
    assert f"repro: epochsim run {failing} --seed 1" in failure.text
    assert os.path.join("out", "finding-stray-after-lost-stop-replica-zk", "seed-1") in failure.text
    runs = json.loads((tmp_path / "out" / "suite.json").read_text())["runs"]
    assert all("seconds" not in r for r in runs)  # wall time stays out of suite.json
    assert [n for n in os.listdir(tmp_path) if n.endswith(".tmp")] == []


def test_the_schema_refuses_what_ci_cannot_read(schema):
    """The schema is no rubber stamp: a case without a name, a count that is not a number and
    two results in one case are refused."""
    result = {"path": "a.toml", "scenario": "a", "seed": 1, "expect": "pass", "violated": ["x"],
              "expectation_met": False, "note": None, "trace_digest": "d", "seconds": 0.5}
    row = {"scenario": "a", "path": "a.toml", "runs": 1, "met": 0}
    good = junit_xml([row], [result])
    assert valid(schema, good)
    assert not valid(schema, good.replace(' name="a[seed=1]"', ""))
    assert not valid(schema, good.replace('tests="1"', 'tests="one"'))
    two = good.replace("</failure>", "</failure><failure message='again'/>")
    assert two != good and not valid(schema, two)


def test_text_xml_cannot_hold_is_replaced(schema):
    result = {"path": "odd\x01name.toml", "scenario": "a", "seed": 1, "expect": "pass",
              "violated": [], "expectation_met": False, "note": "cut short\x0b here",
              "trace_digest": "d", "seconds": 0.1}
    text = junit_xml([{"scenario": "a", "path": result["path"], "runs": 1, "met": 0}], [result])
    assert valid(schema, text) and "odd\ufffdname.toml" in text


@pytest.mark.parametrize("target, words", [
    ("", "is a directory"),
    ("missing/report.xml", "no directory"),
])
def test_a_report_path_that_cannot_be_written_is_refused_before_any_run(
        tmp_path, capsys, target, words):
    out = tmp_path / "out"
    one_line_error(capsys, ["suite", PASSING, "--out", out, "--junit-xml",
                            str(tmp_path / target) if target else str(tmp_path)],
                   "--junit-xml", words)
    assert not (out / "suite.json").exists()


def test_an_unwritable_report_directory_is_refused(unwritable, capsys, tmp_path):
    one_line_error(capsys, ["suite", PASSING, "--out", tmp_path / "out", "--junit-xml",
                            unwritable / "r.xml"], "--junit-xml", "cannot write into it")
