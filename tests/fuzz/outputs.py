"""Structural mutants of the files epochsim writes and reads back: a run's verdict.json and
trace header, a suite's suite.json, an explore's explore.json and counterexample.toml, a
sweep's sweep.json and plan. Each is read by `check`, `report`, `plot`, `diff`, `shrink` or
`sweep --resume`; a file edited by hand must be refused in one line, never a traceback.

Contract: `fuzz_outputs(dirs, seed, per_file, workdir)` takes `dirs` (kind -> an output
directory of that kind: "run", "suite", "explore", "sweep"), copies each once per mutant with
one of its files mutated (`tests.fuzz.mutate`), runs the commands that read it in process
(`COMMANDS`) and yields a `Result` per command and mutant (`tests.fuzz.inputs.Result`).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

from tests.fuzz.inputs import Result, invoke
from tests.fuzz.mutate import mutants

# kind -> (the files mutated, the commands that read the directory; {d} is the mutated copy,
# {orig} the untouched one, {o} a fresh output path, {scenario} a small scenario)
COMMANDS: dict[str, tuple[tuple[str, ...], list[list[str]]]] = {
    "run": (("verdict.json", "trace.jsonl"),
            [["check", "{d}"], ["report", "{d}", "-o", "{o}.html"],
             ["plot", "{d}", "-o", "{o}.png"], ["diff", "{orig}", "{d}"],
             ["run", "{scenario}", "--out", "{d}", "--no-plot"]]),
    "suite": (("suite.json",), [["report", "{d}", "-o", "{o}.html"]]),
    "explore": (("explore.json", "verdict.json"),
                [["report", "{d}", "-o", "{o}.html"], ["check", "{d}"]]),
    "sweep": (("sweep.json", "plan.json"), [["report", "{d}", "-o", "{o}.html"]]),
}


def _documents(path: Path) -> tuple[object, str]:
    """The JSON document of `path` to mutate (a trace: its header line), and the rest."""
    text = path.read_text()
    if path.suffix == ".jsonl":
        head, _, rest = text.partition("\n")
        return json.loads(head), rest
    return json.loads(text), ""


# Whole-file damage: (label, new bytes from the old); None plants a directory in its place.
WHOLE_FILE = [
    ("empty", lambda b: b""), ("cut-in-half", lambda b: b[: len(b) // 2]),
    ("not-utf8", lambda b: b[:10] + b"\xff\xfe" + b[10:]), ("deep", lambda b: b"[" * 100_000),
    ("array", lambda b: b"[]\n"), ("null", lambda b: b"null\n"), ("directory", None),
]


def fuzz_outputs(dirs: dict[str, str], seed: int, per_file: int | None,
                 workdir: Path) -> Iterator[Result]:
    """The results of every command over every mutant (see the module contract)."""
    from tests.cli.fuzz_cases import FUZZ

    scenario = str(workdir / "fz.toml")
    Path(scenario).write_text(FUZZ)
    rng = random.Random(seed)
    for kind, orig in dirs.items():
        names, commands = COMMANDS[kind]
        for name in names:
            source = Path(orig) / name
            if not source.exists():
                continue
            doc, rest = _documents(source)
            if not isinstance(doc, dict):
                continue
            edits = [(m.label, m.where, (json.dumps(m.doc) + ("\n" + rest if rest else "\n"))
                      .encode()) for m in mutants(doc, rng, per_file)]
            edits += [(label, "<file>", make and make(source.read_bytes()))
                      for label, make in WHOLE_FILE]
            for label, where, data in edits:
                copy = workdir / "d"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(orig, copy)
                if data is None:
                    (copy / name).unlink()
                    (copy / name).mkdir()
                else:
                    (copy / name).write_bytes(data)
                for n, argv in enumerate(commands):
                    out = workdir / f"o{n}"
                    filled = [a.replace("{d}", str(copy)).replace("{orig}", orig)
                              .replace("{o}", str(out)).replace("{scenario}", scenario)
                              for a in argv]
                    outcome, detail = invoke(filled)
                    yield Result(kind, f"{name} ({argv[0]})", label, where, outcome, detail)


def make_outputs(root: Path, sweep: bool = False,
                 kinds: tuple[str, ...] = ("run", "suite", "explore")) -> dict[str, str]:
    """Output directories to mutate, made by the commands themselves under `root`: a run of
    the small FUZZ scenario, a suite and an explore of a scenario that breaks an invariant
    and, with `sweep` (it starts Spark), a two-seed sweep; only those of `kinds`."""
    from epochsim.cli import main
    from tests.cli.fuzz_cases import FUZZ
    from tests.fuzz.inputs import ROOT

    root.mkdir(parents=True, exist_ok=True)
    (root / "fz.toml").write_text(FUZZ)
    failing = str(ROOT / "scenarios" / "kip359-stale-leader-legacy.toml")
    lines = {"run": ["run", str(root / "fz.toml"), "--out", str(root / "run"), "--no-plot"],
             "suite": ["suite", failing, "--seeds", "1", "--out", str(root / "suite")],
             "explore": ["explore", failing, "--budget", "3", "--out", str(root / "explore"),
                         "--no-plot"]}
    lines = {kind: argv for kind, argv in lines.items() if kind in kinds}
    if sweep:
        lines["sweep"] = ["sweep", str(ROOT / "scenarios" / "sweeps" / "demo.toml"), "--seeds",
                          "2", "--out", str(root / "sweep")]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for argv in lines.values():
            assert main(argv) in (0, 1), argv
    return {kind: str(root / kind) for kind in lines}
