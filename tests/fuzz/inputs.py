"""Run structural mutants of every shipped input through its loader and, optionally, the CLI.

Contract: `shipped()` lists the inputs the repository ships, as (kind, path) with kind
"scenario", "probe" (a scenario with a `[probe]` table: a conformance case) or "spec" (a sweep
spec); `fuzz(inputs, seed, per_doc, run_share, workdir)` mutates each (`tests.fuzz.mutate`),
loads each mutant with the loader a user's command calls (`load_scenario`, `load_spec`) and,
for a seeded share `run_share` of the mutants that load, runs it through `epochsim run` in
process under a time limit. It returns one `Result` per mutant. A result is a failure when
the loader raised anything but its one-line error, when an error is not one line naming the
file, or when a run raised, hung or exited with a code other than 0, 1 or 2.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import signal
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.mutate import mutants

ROOT = Path(__file__).resolve().parents[2]
RUN_LIMIT_S = 30  # wall-clock seconds per run; the run's own --time-budget is lower
RUN_BUDGET_S = 10


@dataclass
class Result:
    kind: str
    source: str  # the shipped file mutated, relative to the repository
    label: str
    where: str
    outcome: str  # refused | loaded | ran | slow | raised | bad-message | timeout | exit-N
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome not in ("refused", "loaded", "ran", "slow")


def shipped() -> list[tuple[str, str]]:
    """Every shipped scenario, conformance case and sweep spec, in a stable order."""
    out = []
    for path in sorted(ROOT.glob("scenarios/**/*.toml")) + sorted(ROOT.glob("benchmarks/**/*.toml")):
        rel = str(path.relative_to(ROOT))
        if path.parent.name == "sweeps":
            out.append(("spec", rel))
        else:
            out.append(("probe" if "\n[probe]" in path.read_text() else "scenario", rel))
    return out


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _limit(seconds: float):
    def expire(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _one_line_naming(message: str, path: str) -> bool:
    return "\n" not in message and path in message and "Traceback" not in message


def load_outcome(kind: str, path: str) -> tuple[str, str]:
    """(outcome, detail) of loading the file at `path` as a user's command would."""
    from epochsim.errors import UsageError
    from epochsim.sweep.spec import load_spec
    from scenarios.schema import ScenarioError, load_scenario

    try:
        with _limit(RUN_LIMIT_S):
            if kind == "spec":
                load_spec(path)
            else:
                load_scenario(path)
    except (ScenarioError, UsageError) as err:
        ok = _one_line_naming(str(err), path)
        return ("refused" if ok else "bad-message"), str(err)
    except _Timeout:
        return "timeout", f"loading took over {RUN_LIMIT_S} s"
    except Exception:  # noqa: BLE001 - the traceback a user would see
        return "raised", traceback.format_exc(limit=-2)
    return "loaded", ""


def invoke(argv: list[str], limit_s: float = RUN_LIMIT_S) -> tuple[str, str]:
    """(outcome, detail) of `epochsim argv` in process: refused (exit 2, one line), ran
    (exit 0 or 1), raised, bad-message, timeout (no answer within `limit_s`) or exit-N."""
    from epochsim.cli import main

    err = io.StringIO()
    try:
        with _limit(limit_s), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(err):
            code = main(argv)
    except _Timeout:
        return "timeout", f"no answer within {limit_s} s"
    except BaseException:  # noqa: BLE001
        return "raised", traceback.format_exc(limit=-2)
    text = err.getvalue()
    if "Traceback" in text:
        return "raised", text
    if code == 2:
        lines = [ln for ln in text.splitlines() if ln.startswith("error: ")]
        return ("refused", text) if len(lines) == 1 else ("bad-message", text)
    return ("ran", "") if code in (0, 1) else (f"exit-{code}", text)


def run_outcome(path: str, out: str) -> tuple[str, str]:
    """(outcome, detail) of `epochsim run path --out out`, in process."""
    return invoke(["run", path, "--out", out, "--no-plot", "--time-budget", str(RUN_BUDGET_S)])


def _spec_dir(workdir: Path) -> Path:
    """A copy of scenarios/sweeps/base beside which spec mutants are written (their
    `scenarios` name base/...)."""
    where = workdir / "sweeps"
    if not where.exists():
        shutil.copytree(ROOT / "scenarios" / "sweeps" / "base", where / "base")
    return where


def fuzz(inputs: list[tuple[str, str]], seed: int, per_doc: int | None, run_share: float,
         workdir: Path) -> Iterator[Result]:
    """The results of the mutants of `inputs` (see the module contract), one by one."""
    import tomllib

    from scenarios.toml_text import dumps

    rng = random.Random(seed)
    for kind, rel in inputs:
        doc = tomllib.loads((ROOT / rel).read_text())
        where = _spec_dir(workdir) if kind == "spec" else workdir
        for n, mutant in enumerate(mutants(doc, rng, per_doc)):
            path = where / f"m{n}.toml"
            try:
                path.write_text(dumps(mutant.doc))
            except (TypeError, ValueError) as exc:  # not a document TOML can hold
                yield Result(kind, rel, mutant.label, mutant.where, "loaded", f"unwritable: {exc}")
                continue
            outcome, detail = load_outcome(kind, str(path))
            if outcome == "loaded" and kind != "spec" and rng.random() < run_share:
                out = workdir / "out"
                shutil.rmtree(out, ignore_errors=True)
                outcome, detail = run_outcome(str(path), str(out))
            yield Result(kind, rel, mutant.label, mutant.where, outcome, detail)
            os.remove(path)
