"""A suite's runs as a JUnit XML report, the file CI systems read test results from.

Contract: `junit_xml(rows, results)` takes what `epochsim suite` gathers (its table rows, one
per scenario file, and its run results, one per scenario x seed, each with `seconds` of wall
time) and returns the document: `<testsuites>` holding one `<testsuite>` per scenario file
(name: the scenario's name), which holds one `<testcase>` per seed, in the suite's order:
classname the scenario file, name "<scenario>[seed=<N>]". A run that missed its expectation
has a `<failure>` whose message is the expectation line (`epochsim.outcome`) and whose text
adds the trace digest, where its trace was written and the repro command line. It
follows the Ant/Jenkins JUnit format, the subset `tests/junit.xsd` states. `write_junit(path,
rows, results)` writes it whole or not at all.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from epochsim.common import repro_line
from epochsim.outcome import expectation_line
from sim.core.files import atomic_write

# characters XML 1.0 cannot hold even escaped (a file name may have them)
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def case_name(scenario: str, seed: int) -> str:
    """A test case's name, as the pytest plugin names its items too."""
    return f"{scenario}[seed={seed}]"


#: how every report begins (after the XML declaration): a later --junit-xml replaces only these
ROOT_TAG = b'<testsuites name="epochsim suite"'


def junit_xml(rows: list[dict], results: list[dict], overrides: dict | None = None) -> str:
    runs = ET.Element("testsuites", name="epochsim suite")
    for row in rows:
        mine = [r for r in results if r["path"] == row["path"]]
        suite = ET.SubElement(runs, "testsuite", name=row["scenario"], tests=str(len(mine)),
                              failures=str(row["runs"] - row["met"]), errors="0", skipped="0",
                              time=_seconds(sum(r["seconds"] for r in mine)))
        for r in mine:
            _case(suite, r, overrides or {})
    total = len(results)
    failed = sum(not r["expectation_met"] for r in results)
    runs.attrib.update(tests=str(total), failures=str(failed), errors="0",
                       time=_seconds(sum(r["seconds"] for r in results)))
    ET.indent(runs)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(runs, encoding="unicode") + "\n"


def _case(suite: ET.Element, r: dict, overrides: dict) -> None:
    case = ET.SubElement(suite, "testcase", classname=_text(r["path"]),
                         name=case_name(r["scenario"], r["seed"]), time=_seconds(r["seconds"]))
    if r["expectation_met"]:
        return
    line = expectation_line(r["expect"], r["violated"], False, r["note"])
    failure = ET.SubElement(case, "failure", type="ExpectationNotMet", message=_text(line))
    text = [line, f"trace_digest: {r['trace_digest']}"]
    if r.get("dir"):
        text.append(f"trace and verdict: {r['dir']}")
    text.append(f"repro: {repro_line(r['path'], r['seed'], overrides=overrides)}")
    failure.text = _text("\n".join(text))


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def write_junit(path: str, rows: list[dict], results: list[dict],
                overrides: dict | None = None) -> None:
    with atomic_write(path) as fh:
        fh.write(junit_xml(rows, results, overrides))
