"""One CLI grammar: -o/--out wherever a command writes, --profile/--set wherever it runs
scenarios, an unknown flag blamed on its own subcommand, and run and check counting a trace's
events alike."""

from __future__ import annotations

import re

import pytest

from epochsim.cli import build_parser, main
from tests.cli.edges import one_line_error

WRITES = ["run", "suite", "explore", "shrink", "selftest", "study", "sweep", "plot", "report"]
RUNS_SCENARIOS = ["run", "suite", "explore", "selftest", "sweep"]


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command].format_help()


@pytest.mark.parametrize("command", WRITES)
def test_every_command_that_writes_takes_o_and_out(command):
    assert re.search(r"-o \S+, --out", _help(command)), command


@pytest.mark.parametrize("command", RUNS_SCENARIOS)
def test_every_command_that_runs_scenarios_takes_profile_and_set(command):
    text = _help(command)
    assert "--profile" in text and "--set KEY=VALUE" in text, command


def test_an_unknown_flag_names_its_subcommand_and_the_closest_flag(capsys, scenario):
    one_line_error(capsys, ["run", scenario, "--sed", "3"], "epochsim run: unknown argument "
                   "'--sed' (did you mean --seed?)", "see `epochsim run --help`")
    one_line_error(capsys, ["suite", scenario, "--jbos=2"], "epochsim suite: unknown argument",
                   "did you mean --jobs?")


def test_run_and_check_count_the_same_events(capsys, scenario, tmp_path):
    out = tmp_path / "r"
    main(["run", str(scenario), "-o", str(out), "--no-plot"])
    ran = re.search(r"\((\d+) events, \d+ simulation steps", capsys.readouterr().out)
    main(["check", str(out / "trace.jsonl")])
    checked = re.search(r": (\d+) events,", capsys.readouterr().out)
    assert ran and checked and ran.group(1) == checked.group(1)


def test_selftest_refuses_to_override_the_planted_mutant(capsys):
    one_line_error(capsys, ["selftest", "--set", "protocol.mutant=no_dedup_cache"],
                   "each base plants its own mutant", "--mutants")
