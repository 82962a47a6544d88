"""The pytest plugin: scenario files run as pytest items, beside a project's own tests.

Contract: with `--epochsim`, pytest collects each scenario file among the paths it is given
(a `*.toml` named on the command line or in `testpaths`, or one directly inside a directory so
named, as `epochsim suite` takes them: subdirectories are not searched for scenarios) as one
item per seed, `--epochsim-seeds N` (default 1) seeds from the scenario's own `seed`, named
"<scenario>[seed=<N>]". An item passes when its run meets the scenario's `expect`; a failing
item's report is the expectation line, the violations, the story of the first one, the trace
digest and the command line that replays the run. A file that is not a valid scenario is a
collection error of one line (the loader's). Without `--epochsim` the plugin collects nothing.

The `pytest11` entry point `epochsim.pytest_plugin` loads it wherever epochsim is installed;
`-p epochsim.pytest_plugin` loads it where it is only importable. The model is imported when
the first scenario is collected, so a pytest run without `--epochsim` pays for nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_NAMED = pytest.StashKey[frozenset]()


def _seeds(text: str) -> int:
    from epochsim.common import seeds_arg  # argparse names the flag in its error
    return seeds_arg(text)


def pytest_addoption(parser) -> None:
    group = parser.getgroup("epochsim", "epochsim scenarios as tests")
    group.addoption("--epochsim", action="store_true",
                    help="collect epochsim scenario files (*.toml) among the given paths, one "
                         "test per seed, passing when the run meets the scenario's expect")
    group.addoption("--epochsim-seeds", type=_seeds, default=1, metavar="N",
                    help="seeds per scenario, from each scenario's own seed (default 1)")


def pytest_collect_file(file_path: Path, parent):
    config = parent.config
    if not config.getoption("epochsim") or file_path.suffix != ".toml":
        return None
    named = _named_paths(config)
    if file_path.resolve() in named or file_path.parent.resolve() in named:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _named_paths(config) -> frozenset:
    """The paths pytest was given (its arguments, or `testpaths`), resolved, without the
    `::name` of a test id."""
    if _NAMED not in config.stash:
        base = config.invocation_params.dir
        config.stash[_NAMED] = frozenset((base / arg.split("::")[0]).resolve()
                                         for arg in config.args)
    return config.stash[_NAMED]


class ExpectationNotMet(AssertionError):
    """A scenario's run did not show what its `expect` says; `run` is the `epochsim.api.Run`."""

    def __init__(self, run):
        super().__init__(run.expectation())
        self.run = run


class ScenarioFile(pytest.File):
    """One scenario file: one item per seed."""

    def collect(self):
        from epochsim.api import ScenarioError, load
        from epochsim.common import MAX_SEED
        from epochsim.junit import case_name

        scenario = load(self.path)
        seeds = self.config.getoption("epochsim_seeds")
        if scenario.seed + seeds - 1 > MAX_SEED:
            raise ScenarioError(str(self.path), "seed", f"seeds {scenario.seed}.."
                                f"{scenario.seed + seeds - 1} pass 2**53, the largest seed",
                                "lower the scenario's seed or --epochsim-seeds")
        for seed in range(scenario.seed, scenario.seed + seeds):
            yield ScenarioItem.from_parent(self, name=case_name(scenario.name, seed),
                                           scenario=scenario, seed=seed)

    def repr_failure(self, excinfo):
        from epochsim.api import ScenarioError

        if isinstance(excinfo.value, ScenarioError):
            return str(excinfo.value)  # one line naming the file, the key and the fix
        return super().repr_failure(excinfo)


class ScenarioItem(pytest.Item):
    """One scenario at one seed; its outcome is the scenario's expectation met or not."""

    def __init__(self, *, scenario, seed: int, **kwargs):
        super().__init__(**kwargs)
        self.scenario, self.seed = scenario, seed

    def runtest(self) -> None:
        from epochsim.api import run

        result = run(self.scenario, self.seed)
        if not result.expectation_met:
            raise ExpectationNotMet(result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ExpectationNotMet):
            return "\n".join(self.failure_lines(excinfo.value.run))
        return super().repr_failure(excinfo, style=style)

    def failure_lines(self, result) -> list[str]:
        from epochsim.common import describe_violations, repro_line

        lines = [f"{self.scenario.name} seed {self.seed}: {result.expectation()}"]
        lines += describe_violations(result.verdict)
        story = result.story()
        if story:
            lines.append("  how the first violation came about:")
            lines += [f"    {s}" for s in story]
        lines.append(f"  trace_digest {result.trace_digest}")
        lines.append(f"  repro: {repro_line(self._shown_path(), self.seed)}")
        return lines

    def _shown_path(self) -> str:
        """The scenario file as the user would type it: relative to where pytest was run
        when it lies below, else absolute."""
        shown = os.path.relpath(self.path, self.config.invocation_params.dir)
        return str(self.path) if shown.startswith("..") else shown

    def reportinfo(self):
        return self.path, None, f"scenario {self.name}"
