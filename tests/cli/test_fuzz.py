"""Fuzz the CLI with generated bad input (tests/cli/fuzz_cases.py): scenario files, flags,
sweep specs, traces and paths. Every input that should be refused exits 2 with one line and
no traceback; every legal one runs (exit 0 or 1). Each case runs in process, through
`epochsim.cli.main`, under a time limit of its own; a few run as `python -m epochsim` to
cover the real entry point. Spark is never started: a sweep that would start it counts as
one that runs."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import traceback

import pytest

from epochsim.cli import main
from tests.cli.fuzz_cases import FUZZ, HUGE, all_cases
from tests.conftest import ROOT

CASE_LIMIT_S = 20  # far above any case's time; a hang or a runaway read ends here


class CaseTimeout(Exception):
    pass


class WouldStartSpark(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    def expire(signum, frame):
        raise CaseTimeout(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The shared inputs: FUZZ as a file, a run of it at seed 1, a FIFO, a symlink loop."""
    root = tmp_path_factory.mktemp("fuzz")
    scenario = root / "fz.toml"
    scenario.write_text(FUZZ)
    run = root / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", str(scenario), "--out", str(run), "--no-plot"]) == 0
    os.mkfifo(root / "fifo")
    os.symlink(root / "loop", root / "loop")
    return {"root": root, "scenario": str(scenario), "run": str(run), "fifo": str(root / "fifo"),
            "lines": (run / "trace.jsonl").read_text().splitlines(),
            "verdict": (run / "verdict.json").read_bytes()}


def _cases():
    # the trace cases need a trace: the same run the `world` fixture makes, made here once
    # at collection (0.1 s), so that each case is its own test
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        path = os.path.join(tmp, "fz.toml")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(FUZZ)
        main(["run", path, "--out", os.path.join(tmp, "run"), "--no-plot"])
        with open(os.path.join(tmp, "run", "trace.jsonl"), encoding="utf-8") as fh:
            return all_cases(fh.read().splitlines())


CASES = _cases()


def test_there_are_enough_cases():
    assert len(CASES) >= 300, len(CASES)
    kinds = {c.name.split("-")[0] for c in CASES}
    assert kinds == {"scenario", "flag", "spec", "trace", "path"}, kinds
    assert len({c.name for c in CASES}) == len(CASES)


def _fill(text: str, world: dict, case_dir) -> str:
    for key in ("scenario", "run", "fifo"):
        text = text.replace("{" + key + "}", world[key])
    return text.replace("{dir}", str(case_dir))


def _invoke(argv: list[str]) -> tuple[int | str, str]:
    """(exit code, or "raised" / "timeout", stderr) of one in-process call."""
    err = io.StringIO()
    try:
        with time_limit(CASE_LIMIT_S), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:  # --version, --help
        code = exc.code if isinstance(exc.code, int) else 0
    except WouldStartSpark:
        code = 0
    except CaseTimeout as exc:
        return "timeout", str(exc)
    except BaseException:  # noqa: BLE001 - the traceback a user would have seen
        return "raised", traceback.format_exc(limit=-3)
    return code, err.getvalue()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fuzz_case(case, world, tmp_path, monkeypatch):
    import epochsim.sweep.spark_job as spark_job

    def no_spark(*args, **kwargs):
        raise WouldStartSpark()

    monkeypatch.setattr(spark_job, "start_session", no_spark)
    monkeypatch.chdir(tmp_path)  # default output directories land here
    for name, data in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(world["verdict"] if data == b"{verdict}" else data)
    code, err = _invoke([_fill(a, world, tmp_path) for a in case.argv])
    assert code not in ("raised", "timeout"), f"{case.name}: {code}\n{err}"
    refused = code == 2
    if case.expect == "refused" or refused:
        assert refused or case.expect == "either", f"{case.name}: exit {code}, not refused\n{err}"
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{case.name}: {err!r}"
    else:
        assert code in (0, 1), f"{case.name}: exit {code}\n{err}"
        assert "Traceback" not in err, f"{case.name}: {err}"


SUBPROCESS_CASES = {
    "no-command": ([], 2), "fifo": (["run", "{fifo}"], 2), "dev-zero": (["check", "/dev/zero"], 2),
    "huge-set": (["run", "{scenario}", "--set", f"seed={HUGE}"], 2),
    "version": (["--version"], 0),
}


@pytest.mark.parametrize("name", sorted(SUBPROCESS_CASES))
def test_fuzz_entry_point(name, world, tmp_path):
    argv, code = SUBPROCESS_CASES[name]
    proc = subprocess.run([sys.executable, "-m", "epochsim", *(_fill(a, world, tmp_path)
                                                               for a in argv)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    if code == 2:
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
