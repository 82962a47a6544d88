"""The pytest plugin (`epochsim.pytest_plugin`): `pytest --epochsim PATH` runs scenario files
as pytest items, one per seed, whose outcome is the scenario's expectation met."""

from __future__ import annotations

import os
import tomllib

import pytest

from tests.conftest import ROOT, scenario_path

pytest_plugins = ["pytester"]

PLUGIN = "epochsim.pytest_plugin"
PASSING = scenario_path("finding-stray-after-lost-stop-replica-full")  # a short run
VIOLATING = scenario_path("finding-stray-after-lost-stop-replica-zk")  # breaks stray_replica


@pytest.fixture
def scenario_dir(pytester):
    """good.toml meets its expectation; bad.toml expects a pass and breaks stray_replica; a
    subdirectory's broken file must never be collected."""
    text = open(VIOLATING, encoding="utf-8").read()
    pytester.makefile(".toml", good=open(PASSING, encoding="utf-8").read(),
                      bad=text.replace('expect = "violation:stray_replica"', 'expect = "pass"'))
    pytester.mkdir("nested").joinpath("broken.toml").write_text("name = [\n")
    return pytester


def test_each_scenario_and_seed_is_an_item_whose_outcome_is_its_expectation(scenario_dir):
    result = scenario_dir.runpytest("-p", PLUGIN, "--epochsim", ".", "--epochsim-seeds", "2",
                                    "-v")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    for seed in (1, 2):
        assert f"good.toml::finding-stray-after-lost-stop-replica-full[seed={seed}] PASSED" in out
        assert f"FAILED bad.toml::finding-stray-after-lost-stop-replica-zk[seed={seed}]" in out
        assert f"repro: epochsim run bad.toml --seed {seed}" in out
    assert "expectation 'pass' NOT met: violated stray_replica" in out
    assert "VIOLATION stray_replica at 6.000000s" in out
    assert "how the first violation came about:" in out and "→ VIOLATION stray_replica" in out
    assert "Traceback" not in out and "broken.toml" not in out


def test_without_the_flag_nothing_is_collected(scenario_dir):
    result = scenario_dir.runpytest("-p", PLUGIN, ".")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    # the summary line reads "no tests ran" or, when the run warned of something (a plugin
    # module imported before pytest could rewrite it), "N warnings": the count is what matters
    result.stdout.fnmatch_lines(["collected 0 items*"])


def test_a_bad_scenario_is_a_one_line_collection_error(scenario_dir):
    result = scenario_dir.runpytest("-p", PLUGIN, "--epochsim", "nested")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "broken.toml: line 2: invalid TOML" in out and "Traceback" not in out


def test_a_bad_seed_count_is_a_usage_error(scenario_dir):
    result = scenario_dir.runpytest("-p", PLUGIN, "--epochsim", ".", "--epochsim-seeds", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--epochsim-seeds*must be a positive integer*"])


def test_the_entry_point_loads_the_plugin(scenario_dir, tmp_path, monkeypatch):
    """As installed (pyproject's `pytest11` entry point, put on the path as a distribution's
    metadata): pytest loads the plugin by itself, and `-p` naming it again is harmless."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        points = tomllib.load(fh)["project"]["entry-points"]["pytest11"]
    assert points == {PLUGIN: PLUGIN}
    meta = tmp_path / "meta" / "epochsim_entry_check-0.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: epochsim-entry-check\n"
                                   "Version: 0\n")
    (meta / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(meta.parent), ROOT]))
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    for extra in ([], ["-p", PLUGIN]):
        result = scenario_dir.runpytest_subprocess(*extra, "--epochsim", "good.toml")
        result.assert_outcomes(passed=1)
