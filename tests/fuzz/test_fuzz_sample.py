"""A seeded sample of the structural fuzz (the full run: `python -m tests.fuzz.run_all`):
shipped inputs mutated and loaded (some run), a run's outputs mutated and read back, every
command's flags given bad values. No case may raise, hang or answer in more than one line;
and the harness itself must see a planted traceback."""

from __future__ import annotations

import random

import pytest

from tests.fuzz.flags import SLOW, flag_cases
from tests.fuzz.inputs import fuzz, invoke, load_outcome, shipped
from tests.fuzz.mutate import BAD_VALUES, all_mutants, mutants
from tests.fuzz.outputs import fuzz_outputs, make_outputs


def _failures(results) -> list[str]:
    results = list(results)
    assert results
    return [f"{r.source} {r.where} [{r.label}] {r.outcome}: {r.detail[-400:]}"
            for r in results if r.failed]


def test_mutants_are_the_same_on_every_run_and_cover_every_class():
    doc = {"name": "x", "run": {"duration_ms": 5}, "faults": [{"at_ms": 1, "target": "b1"}]}
    one = [(m.label, m.where, m.doc) for m in mutants(doc, random.Random(3), 10)]
    two = [(m.label, m.where, m.doc) for m in mutants(doc, random.Random(3), 10)]
    assert repr(one) == repr(two) and len(one) == 10  # nan != nan: compared as text
    labels = {label for _, label, _ in all_mutants(doc)}
    assert {label for label, _ in BAD_VALUES} <= labels
    assert {"missing", "unknown-key", "duplicate-item", "times-1000"} <= labels
    wheres = {m.where for m in mutants(doc, random.Random(0))}
    assert {"faults[0].at_ms", "run.duration_ms", "<top>", "faults[0]"} <= wheres


def test_shipped_inputs_cover_every_kind():
    kinds = {kind for kind, _ in shipped()}
    assert kinds == {"scenario", "probe", "spec"}


def test_a_sample_of_shipped_inputs_mutated(tmp_path):
    inputs = shipped()[::60]
    assert _failures(fuzz(inputs, 1, 12, 0.1, tmp_path)) == []


def test_a_runs_outputs_mutated_and_read_back(tmp_path):
    dirs = make_outputs(tmp_path / "made", kinds=("run",))
    (tmp_path / "work").mkdir()
    assert _failures(fuzz_outputs(dirs, 1, 3, tmp_path / "work")) == []


def test_every_commands_flags_sampled(tmp_path, monkeypatch):
    from tests.fuzz.inputs import ROOT

    monkeypatch.chdir(tmp_path)  # a relative value given to --out lands here

    dirs = make_outputs(tmp_path / "made", kinds=("run",))
    world = {"{scenario}": str(tmp_path / "made" / "fz.toml"), "{run}": dirs["run"],
             "{spec}": str(ROOT / "scenarios" / "sweeps" / "demo.toml")}
    cases = [c for c in flag_cases() if c[0].split()[0] not in SLOW][::23]
    assert len(cases) > 30
    bad = []
    for n, (name, argv) in enumerate(cases):
        filled = []
        for a in argv:
            for key, value in world.items():
                a = a.replace(key, value)
            filled.append(a.replace("{o}", str(tmp_path / f"o{n}")).replace("{dir}", str(tmp_path)))
        outcome, detail = invoke(filled)
        if outcome not in ("refused", "ran"):
            bad.append(f"{name}: {outcome}: {detail[-400:]}")
    assert bad == []


@pytest.mark.parametrize("planted, outcome", [(TypeError("planted"), "raised"),
                                              (None, "bad-message")])
def test_the_harness_sees_a_planted_traceback_or_a_message_without_the_file(
        monkeypatch, tmp_path, planted, outcome):
    import scenarios.schema as schema

    def broken(path, overrides=None):
        if planted is not None:
            raise planted
        raise schema.ScenarioError("elsewhere.toml", "key", "two\nlines", "fix")

    monkeypatch.setattr(schema, "load_scenario", broken)
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n')
    assert load_outcome("scenario", str(path))[0] == outcome
