"""The conformance suite: every case a probe citing its Kafka test, all agreeing, and
docs/conformance.md showing exactly what they give today."""

from __future__ import annotations

import re
from pathlib import Path

from epochsim import conformance
from scenarios.schema import load_scenario

ROOT = Path(__file__).resolve().parents[2]
TAG = re.compile(r"^\d+\.\d+\.\d+(\.\d+)?$")  # Kafka tagged releases before 1.0 as 0.11.0.0


def test_every_case_is_a_probe_citing_a_kafka_test_at_a_tag():
    files = conformance.probe_files(conformance.DIRECTORY)
    assert files
    for path in files:
        sc = load_scenario(path)
        assert sc.probe is not None, f"{path}: not a probe"
        assert "." in sc.probe.kafka_test and "Test" in sc.probe.kafka_test, path
        assert TAG.match(sc.probe.kafka_tag), f"{path}: kafka_tag {sc.probe.kafka_tag!r}"
        assert sc.name == Path(path).stem, f"{path}: name differs from the file name"
        assert sc.description.strip(), f"{path}: say what the Kafka test sets up and asserts"


def test_every_case_agrees_and_the_doc_is_up_to_date():
    found = conformance.rows()
    disagree = [r["case"] for r in found if not r["agree"]]
    assert not disagree, f"cases that disagree with Kafka: {disagree}"
    text = (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")
    assert conformance.rendered(text, found) == text, \
        "docs/conformance.md is out of date: python -m epochsim.conformance --write"


def test_the_table_marks_a_disagreement():
    row = {"case": "c", "test": "T.t", "tag": "1.0.0", "profile": "1.0", "kafka": "`e` A",
           "model": "`e` B", "agree": False}
    assert "| **no** |" in conformance.table([row])
    assert "0 of 1 cases agree." in conformance.table([row])
