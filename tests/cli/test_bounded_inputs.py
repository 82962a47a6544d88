"""Inputs that raised, hung or ran away with memory: each now one line and exit 2, at once.
(In process, through `epochsim.cli.main`, unless a test says why not.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from epochsim.cli import main
from tests.cli.edges import SCENARIO, one_line_error
from tests.conftest import ROOT

HUGE = "9" * 4301  # more digits than Python converts to an int by default


def test_an_integer_past_4300_digits_in_set_is_named(capsys, scenario, tmp_path):
    one_line_error(capsys, ["run", scenario, "--set", f"seed={HUGE}", "--out", tmp_path / "o"],
                   "--set seed: the integer is too long to read")


def test_an_integer_past_4300_digits_in_a_scenario_is_named(capsys, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(f"seed = {HUGE}\n" + SCENARIO)
    one_line_error(capsys, ["run", path, "--out", tmp_path / "o"], f"{path}: file:",
                   "integer too long to read")


def test_an_integer_past_4300_digits_in_a_sweep_spec_is_named(capsys, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(f'scenarios = ["s.toml"]\nseeds = {HUGE}\n')
    one_line_error(capsys, ["sweep", spec, "--out", tmp_path / "o"], f"{spec}:",
                   "integer too long to read")


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_fifo_without_a_writer_is_refused_at_once(capsys, tmp_path, command):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # it waited forever for a writer
    one_line_error(capsys, [command, fifo, "--out", tmp_path / "o"], "not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_device_is_refused_before_reading_it(capsys, tmp_path, device, command):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    # /dev/zero was read to the end: it grew past 6 GB
    one_line_error(capsys, [command, device, "--out", tmp_path / "o"], "not a regular file")


def test_a_scenario_larger_than_the_cap_is_refused(capsys, tmp_path):
    from scenarios.limits import MAX_SCENARIO_BYTES

    path = tmp_path / "big.toml"
    path.write_text(SCENARIO + ("# padding\n" * (MAX_SCENARIO_BYTES // 10 + 1)))
    one_line_error(capsys, ["run", path, "--out", tmp_path / "o"], "larger than")


def test_more_partitions_than_the_model_runs_are_refused_naming_the_limit(capsys, tmp_path):
    path = tmp_path / "s.toml"
    topics = "".join(f'[[topics]]\nname = "x{i}"\npartitions = 1000\n' for i in range(21))
    path.write_text(SCENARIO + topics)
    one_line_error(capsys, ["run", path, "--out", tmp_path / "o"], "topics:",
                   "partitions in all, more than the 20,000 the model runs")


@pytest.mark.parametrize("section, table", [
    ("faults", '[[faults]]\nat_ms = 1\naction = "crash"\ntarget = "b1"\n'),
    ("producers", '[[producers]]\ntopic = "t"\n'),
    ("mix", '[[mix]]\naction = "heal"\nevery_ms = 1000\n')])
def test_more_tables_than_the_model_runs_are_refused_naming_the_limit(capsys, tmp_path,
                                                                      section, table):
    from scenarios.limits import MAX_COUNTS

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO + table * (MAX_COUNTS[section] + 1))  # SCENARIO has 1 producer
    one_line_error(capsys, ["run", path, "--out", tmp_path / "o"], f"{section}: has ",
                   f"tables, more than the {MAX_COUNTS[section]:,} the model runs")


@pytest.mark.parametrize("seed", ["\u0663", " 7 ", "1_000", "+7", "7.0", HUGE])
def test_a_seed_is_written_in_ascii_digits_only(capsys, scenario, tmp_path, seed):
    one_line_error(capsys, ["run", scenario, "--seed", seed, "--out", tmp_path / "o"],
                   "argument --seed")


@pytest.mark.parametrize("flag", ["--profile", "--out"])
def test_an_empty_flag_value_is_refused_not_ignored(capsys, scenario, flag):
    one_line_error(capsys, ["run", scenario, flag, ""], f"run {flag}: '' is empty")


def test_no_command_is_one_line_with_a_pointer_to_help(capsys):
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().splitlines() == [
        "error: no command given; see `epochsim --help` for the commands"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_standalone_master_is_named_before_spark_starts(capsys, scenario,
                                                                       tmp_path):
    pytest.importorskip("pyspark")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'scenarios = ["{scenario.name}"]\nseeds = 1\n')
    scenario.rename(tmp_path / scenario.name)
    port = free_port()  # nothing listens there: Spark retried for over a minute
    one_line_error(capsys, ["sweep", spec, "--master", f"spark://127.0.0.1:{port}", "--out",
                            tmp_path / "o"], "cannot connect to the Spark master")
    assert not (tmp_path / "o").exists()


TERM_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import epochsim.sweep.driver as driver
    def run_sweep(*args, **kwargs):  # a sweep under way when SIGTERM comes
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)
    driver.run_sweep = run_sweep
    from epochsim.cli import main
    sys.exit(main(["sweep", sys.argv[1], "--out", sys.argv[2]]))
""")


def test_sigterm_stops_a_sweep_with_the_resume_hint(tmp_path, scenario):
    # in a child process: without the handler, SIGTERM ends the process that gets it
    spec = tmp_path / "spec.toml"
    spec.write_text(f'scenarios = ["{scenario.name}"]\nseeds = 1\n')
    out = tmp_path / "o"
    proc = subprocess.run([sys.executable, "-c", TERM_SCRIPT, str(spec), str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 143, proc.stderr
    assert f"terminated: finished chunks are kept in {out}; rerun with --resume" in proc.stderr
