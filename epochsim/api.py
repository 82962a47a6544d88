"""The Python API: load or build a scenario, run it, read the verdict, the trace and the story.

Contract (docs/api.md teaches it; the names are also offered as `epochsim.<name>`):
- `load(path, overrides=None)`, `parse(text, path="<text>", overrides=None)` and
  `build(data, path="<code>", overrides=None)` return a checked `Scenario` from a file, from
  TOML text, or from a dict shaped like the file; `overrides` are dotted keys as `--set` takes
  them (`{"protocol.profile": "2.5", "producers.0.acks": 1}`). Bad input raises
  `ScenarioError`, a ValueError whose message is one line "<file>: <key>: <problem>; <fix>"
  (the parts are its `file`, `key`, `problem` and `fix`);
- `run(scenario, seed=None, out=None)` runs a `Scenario` (or the scenario file a path names)
  once, at `seed` or the scenario's own `seed`, and returns a `Run`. With `out` it writes
  `trace.jsonl` and `verdict.json` into that directory as `epochsim run --out` does (an
  output it cannot write raises `RunWriteError`, an OSError); without, the trace is kept in
  memory. The same scenario and seed give the same `trace_digest` as `epochsim run`;
- `suite(paths, seeds=1, overrides=None)` loads every scenario of `paths` (files, or the
  `*.toml` directly inside a directory: `scenario_files(paths)`) before running any, then
  runs each at `seeds` seeds from its own `seed`, in order, and returns the `Run`s. Their
  traces are not kept: a suite's `Run.events()` runs the seed again (same trace, checked by
  its digest).
Runs are in-process and sequential; `epochsim suite --jobs` is the parallel runner.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator

from epochsim.outcome import expectation_line
from epochsim.runner import RunWriteError, run_scenario
from invariants.base import Violation
from scenarios.schema import Scenario, ScenarioError, load_scenario, parse_scenario
from scenarios.toml_text import dumps

__all__ = ["load", "parse", "build", "run", "suite", "scenario_files", "Run", "Scenario",
           "ScenarioError", "RunWriteError", "Violation"]


def load(path: str | os.PathLike, overrides: dict | None = None) -> Scenario:
    """The scenario file at `path`, checked, with `overrides` applied first."""
    return load_scenario(os.fspath(path), dict(overrides or {}))


def parse(text: str, path: str = "<text>", overrides: dict | None = None) -> Scenario:
    """The scenario TOML `text`, checked; `path` names it in errors and is its default name."""
    return parse_scenario(text, path, dict(overrides or {}))


def build(data: dict, path: str = "<code>", overrides: dict | None = None) -> Scenario:
    """A scenario from `data`, a dict shaped like the TOML file (tables as dicts, arrays of
    tables as lists of dicts), checked as a file is: it is written out as TOML and read back,
    so a value TOML cannot hold (None, a date, an object) is a ScenarioError too."""
    if not isinstance(data, dict):
        raise ScenarioError(path, "data", f"a {type(data).__name__}, not a dict",
                            "pass a dict shaped like the scenario file")
    try:
        text = dumps(data)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(path, "data", f"a value TOML cannot hold ({exc})",
                            "use only tables, arrays, strings, integers, floats and booleans"
                            ) from None
    return parse_scenario(text, path, dict(overrides or {}))


def scenario_files(paths: list[str | os.PathLike]) -> list[str]:
    """The scenario files `paths` name: a file as given, a directory's `*.toml` directly inside
    it (sorted; subdirectories are not searched), as `epochsim suite` takes them."""
    files = []
    for path in map(os.fspath, paths):
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path)
                            if f.endswith(".toml") and os.path.isfile(os.path.join(path, f)))
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise ScenarioError(path, "file", "no such file or directory",
                                "pass scenario files or directories")
    if not files:
        raise ScenarioError(" ".join(map(os.fspath, paths)) or "(no paths)", "file",
                            "no *.toml scenario files found", "pass scenario files or directories")
    return files


def run(scenario: Scenario | str | os.PathLike, seed: int | None = None,
        out: str | os.PathLike | None = None) -> Run:
    """Run `scenario` once (see the contract); a path is loaded first."""
    if not isinstance(scenario, Scenario):
        scenario = load(scenario)
    seed = scenario.seed if seed is None else _seed(seed)
    if out is not None:
        out = os.fspath(out)
        return Run(scenario, seed, run_scenario(scenario, seed, out), out=out)
    sink = io.StringIO()
    verdict = run_scenario(scenario, seed, sink=sink)
    return Run(scenario, seed, verdict, trace_text=sink.getvalue())


def suite(paths: list[str | os.PathLike], seeds: int = 1,
          overrides: dict | None = None) -> list[Run]:
    """Every scenario of `paths` at `seeds` seeds each (see the contract)."""
    if type(seeds) is not int or seeds < 1:
        raise ValueError(f"seeds: {seeds!r} is not a positive integer; pass e.g. 3")
    scenarios = [load(f, overrides) for f in scenario_files(paths)]
    runs = []
    for sc in scenarios:
        for seed in range(sc.seed, sc.seed + seeds):
            runs.append(Run(sc, seed, run_scenario(sc, seed)))
    return runs


def _seed(seed) -> int:
    if type(seed) is not int or seed < 0:
        raise ValueError(f"seed: {seed!r} is not an integer >= 0; pass e.g. 7")
    return seed


class Run:
    """One run of a scenario at a seed: its verdict, and its trace to read.

    `verdict` is the dict `verdict.json` holds (docs/trace.md); the properties below read it.
    """

    def __init__(self, scenario: Scenario, seed: int, verdict: dict, out: str | None = None,
                 trace_text: str | None = None):
        self.scenario, self.seed, self.out = scenario, seed, out
        self.verdict = {k: v for k, v in verdict.items() if not k.startswith("_")}
        self._trace_text = trace_text

    def __repr__(self) -> str:
        return (f"<Run {self.scenario.name} seed {self.seed}: {self.expectation()}>")

    @property
    def expect(self) -> str:
        return self.verdict["expect"]

    @property
    def expectation_met(self) -> bool:
        """Did the run show what the scenario's `expect` says?"""
        return self.verdict["expectation_met"]

    @property
    def violations(self) -> list[Violation]:
        """The invariants' violations, in the order they were found."""
        return [Violation(v["invariant"], v["t_us"], v["message"], tuple(v["seqs"]))
                for v in self.verdict["violations"]]

    @property
    def violated(self) -> list[str]:
        """The names of the invariants violated, sorted."""
        return list(self.verdict["violated"])

    @property
    def trace_digest(self) -> str:
        return self.verdict["trace_digest"]

    def expectation(self) -> str:
        """One line: the expectation met, or what was expected and what happened instead."""
        return expectation_line(self.expect, self.violated, self.expectation_met,
                                self.verdict.get("expectation_note"))

    def header(self) -> dict:
        """The trace's first line: scenario, seed, resolved options, the fault schedule that
        ran, invariants, harness version."""
        return json.loads(self._lines()[0])

    def events(self) -> Iterator[dict]:
        """The trace's events in order, each a dict as its line in trace.jsonl reads
        (`seq`, `t` in microseconds, `node`, `kind`, and the kind's fields: docs/trace.md)."""
        lines = self._lines()
        return (json.loads(line) for line in lines[1:])

    def story(self, violation: Violation | None = None, limit: int = 16) -> list[str]:
        """How `violation` (default: the first) came about, as numbered sentences, the faults
        and the witnesses kept (`reports.story`); [] for a run without violations."""
        from reports.rundata import Run as StoredRun
        from reports.story import numbered, story

        if not self.verdict["violations"]:
            return []
        events = list(self.events())
        where = os.path.join(self.out, "trace.jsonl") if self.out else "<memory>"
        stored = StoredRun(where, self.header(), events,
                           self.verdict["violations"], self.verdict,
                           complete=bool(events) and events[-1]["kind"] == "end")
        chosen = None if violation is None else violation.to_json()
        return numbered(story(stored, chosen, limit))

    def _lines(self) -> list[str]:
        """The trace's lines: from memory, from `out`, or from the seed run again."""
        if self._trace_text is None and self.out is not None:
            with open(os.path.join(self.out, "trace.jsonl"), encoding="utf-8") as fh:
                return _split(fh.read())
        if self._trace_text is None:
            sink = io.StringIO()
            again = run_scenario(self.scenario, self.seed, sink=sink)
            if again["trace_digest"] != self.trace_digest:  # determinism is the product
                raise RuntimeError(f"{self.scenario.name} seed {self.seed}: a second run gave "
                                   f"trace digest {again['trace_digest']}, not "
                                   f"{self.trace_digest}; the model is not deterministic")
            self._trace_text = sink.getvalue()
        return _split(self._trace_text)


def _split(text: str) -> list[str]:
    """JSON Lines split at "\n" only (str.splitlines also splits at characters such as
    U+2028 that a JSON string may hold unescaped)."""
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
