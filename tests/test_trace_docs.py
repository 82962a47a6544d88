"""docs/trace.md documents exactly the trace vocabulary, and real traces use nothing else.

Every kind constant of `sim.kafka.vocab` has its own `` `kind` `` heading in docs/trace.md, each
with an example line of that kind; every kind in the traces of the scenario library (seed 1) is
a vocabulary kind, and every field those events carry is documented under its kind.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from sim.kafka import vocab

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "trace.md"
SCENARIO_FILES = sorted((ROOT / "scenarios").glob("*.toml"))
COMMON = {"seq", "t", "node", "kind"}

VOCAB_KINDS = set(vocab.ALL_KINDS)
_HEADING = re.compile(r"^(#{2,4}) `([a-z_]+)`\s*$")
_ANY_HEADING = re.compile(r"^#{1,4} ")
_FIELD_ROW = re.compile(r"^\| `([a-z_]+)` \|")


def doc_sections() -> dict[str, list[str]]:
    """kind -> the lines of its section (up to the next heading)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = _HEADING.match(line)
        if m:
            current = m.group(2)
            assert current not in sections, f"docs/trace.md documents `{current}` twice"
            sections[current] = []
        elif _ANY_HEADING.match(line):
            current = None
        elif current is not None:
            sections[current].append(line)
    return sections


def documented_fields(lines: list[str]) -> set[str]:
    return {m.group(1) for m in map(_FIELD_ROW.match, lines) if m}


def examples(lines: list[str]) -> list[dict]:
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_every_vocab_kind_has_a_section_in_the_docs():
    documented = set(doc_sections())
    missing = sorted(VOCAB_KINDS - documented)
    assert not missing, f"document these kinds in docs/trace.md (a `kind` heading each): {missing}"
    stale = sorted(documented - VOCAB_KINDS)
    assert not stale, f"docs/trace.md documents kinds that sim.kafka.vocab does not define: {stale}"


def test_every_documented_kind_has_an_example_of_its_own_kind_with_documented_fields():
    for kind, lines in doc_sections().items():
        lines_of_kind = examples(lines)
        assert lines_of_kind, f"docs/trace.md: `{kind}` has no example line"
        fields = COMMON | documented_fields(lines)
        for ev in lines_of_kind:
            assert ev["kind"] == kind, f"docs/trace.md: the example under `{kind}` is a {ev['kind']}"
            assert set(ev) <= fields, f"`{kind}` example has undocumented fields {set(ev) - fields}"


LIBRARY_SHAPE_PROBLEMS: list[str] = []  # filled by `library_fields`


@pytest.fixture(scope="module")
def library_fields() -> dict[str, set[str]]:
    """kind -> every field seen in the library's traces at seed 1 (`append` batch fields too);
    each event is also checked against `invariants.shapes` (LIBRARY_SHAPE_PROBLEMS)."""
    from invariants.shapes import event_problem

    seen: dict[str, set[str]] = {}
    for path in SCENARIO_FILES:
        verdict = run_scenario(load_scenario(str(path)), 1, keep_events=True)
        for ev in verdict.pop("_events"):
            problem = event_problem(ev)
            if problem and len(LIBRARY_SHAPE_PROBLEMS) < 5:
                LIBRARY_SHAPE_PROBLEMS.append(f"{path.name} seq {ev['seq']}: {problem}")
            keys = seen.setdefault(ev["kind"], set())
            keys.update(ev)
            if ev["kind"] == vocab.APPEND:
                for batch in ev["batches"]:
                    keys.update(batch)
    return seen


def test_the_scenario_library_exists():
    assert SCENARIO_FILES, "no scenarios/*.toml found"


def test_every_kind_in_the_library_traces_is_a_vocab_kind(library_fields):
    unknown = sorted(set(library_fields) - VOCAB_KINDS)
    assert not unknown, f"traces use kinds that sim.kafka.vocab does not define: {unknown}"


def test_every_field_in_the_library_traces_is_documented(library_fields):
    sections = doc_sections()
    for kind, keys in sorted(library_fields.items()):
        undocumented = sorted(keys - COMMON - documented_fields(sections.get(kind, [])))
        assert not undocumented, f"document field(s) {undocumented} of `{kind}` in docs/trace.md"


def test_every_error_code_the_model_uses_is_named_and_documented():
    from sim.kafka import errors
    from sim.kafka.vocab import ERROR_NAMES, OUTCOME_NAMES

    sentinels = {"NO_EPOCH", "EPOCH_DURING_DELETE", "NO_LEADER"}
    codes = {v for k, v in vars(errors).items()
             if k.isupper() and isinstance(v, int) and k not in sentinels}
    assert codes <= set(ERROR_NAMES) | set(OUTCOME_NAMES), sorted(codes - set(ERROR_NAMES))
    text = DOC.read_text(encoding="utf-8")
    rows = re.findall(r"\| (-?\d+) \| ([A-Z_]+)", text)
    assert {int(code): name for code, name in rows} == ERROR_NAMES
    outcomes = re.findall(r"^- `(-\d+)` ([A-Z_]+):", text, re.M)
    assert {int(code): name for code, name in outcomes} == OUTCOME_NAMES


def documented_types(lines: list[str]) -> dict[str, str]:
    """field -> its `type` column, for every field row of a section (first row wins)."""
    out: dict[str, str] = {}
    for line in lines:
        m = re.match(r"^\| `([a-z_]+)` \| ([^|]+) \|", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
    return out


def test_the_shape_table_is_the_documented_one():
    from invariants.shapes import APPEND_BATCH, FIELDS

    sections = doc_sections()
    assert set(FIELDS) == set(sections) == VOCAB_KINDS
    for kind, lines in sections.items():
        table = {**FIELDS[kind], **(APPEND_BATCH if kind == vocab.APPEND else {})}
        assert table == documented_types(lines), f"invariants/shapes.py and docs/trace.md " \
                                                 f"differ on `{kind}`"


def test_every_event_of_the_library_has_its_documented_shape(library_fields):
    assert not LIBRARY_SHAPE_PROBLEMS, LIBRARY_SHAPE_PROBLEMS
