"""Generated inputs for the CLI fuzz test (tests/cli/test_fuzz.py): bad scenario files, flags,
sweep specs, traces and paths, each with what the CLI must do with it.

A case is `Case(name, argv, expect)`: `argv` may hold `{dir}` (a fresh directory of the case),
`{scenario}`, `{run}` (a run directory of FUZZ at seed 1) and `{fifo}`; `expect` is
"refused" (exit 2, one line), "runs" (exit 0 or 1) or "either" (one of the two; for inputs
whose legality depends on the value, such as a float where a count may take one). Files a case
needs are written by its `files` dict (name -> bytes) into its directory. Everything is drawn
from a seeded `random.Random`, so the cases are the same on every run.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

FUZZ = """\
name = "fz"
expect = "pass"
seed = 1
[run]
duration_ms = 1000
settle_ms = 500
[cluster]
brokers = 3
[[topics]]
name = "t"
partitions = 2
[[producers]]
topic = "t"
records_per_sec = 50
linger_ms = 20
[[faults]]
at_ms = 300
action = "crash"
target = "leader:t-0"
"""
HUGE = "9" * 4301


@dataclass
class Case:
    name: str
    argv: list[str]
    expect: str  # refused | runs | either
    files: dict[str, bytes] = field(default_factory=dict)


def _run(text: str | bytes, name: str, expect: str) -> Case:
    data = text if isinstance(text, bytes) else text.encode()
    return Case(name, ["run", "{dir}/s.toml", "--out", "{dir}/o", "--no-plot"], expect,
                {"s.toml": data})


# -- scenario files ------------------------------------------------------------------------
WRONG_VALUES = [('"x"', "string"), ("[1, 2]", "array"), ("{ a = 1 }", "table"),
                (HUGE, "huge"), (str(2**63), "2**63")]
NUMBER_VALUES = [("-5", "negative"), ("1.5", "float"), ("nan", "nan"), ("true", "bool"),
                 ("0", "zero")]


def scenario_cases(rng: random.Random) -> list[Case]:
    cases = []
    lines = FUZZ.splitlines()
    for i, line in enumerate(lines):
        if "=" not in line:
            continue
        key, _, value = line.partition(" = ")
        is_text = value.startswith('"')
        for new, label in WRONG_VALUES + NUMBER_VALUES:
            if is_text and new.startswith('"'):
                continue
            # a text key given a number, or a number key given text, a table or a huge number
            sure = (is_text or (new, label) in WRONG_VALUES) and label != "bool" or (
                label == "negative")
            edited = "\n".join(lines[:i] + [f"{key} = {new}"] + lines[i + 1:]) + "\n"
            cases.append(_run(edited, f"scenario-{key}-{label}", "refused" if sure else "either"))
    for section in ("", "[run]\n", "[cluster]\n"):
        cases.append(_run(FUZZ + f"{section}no_such_key = 1\n", f"scenario-unknown-key{section.strip()}",
                          "refused"))
    broken = {
        "no-equals": FUZZ.replace("seed = 1", "seed 1"),
        "open-bracket": FUZZ.replace("[run]", "[run"),
        "open-quote": FUZZ.replace('"fz"', '"fz'),
        "key-twice": FUZZ.replace("seed = 1", "seed = 1\nseed = 2"),
        "table-twice": FUZZ + "[run]\nduration_ms = 5\n",
        "topics-table": FUZZ.replace("[[topics]]", "[topics]"),
        "no-topics": FUZZ.replace('[[topics]]\nname = "t"\npartitions = 2\n', ""),
        "empty": "",
        "deep": "x = " + "[" * 5000 + "]" * 5000 + "\n" + FUZZ,
        "unknown-action": FUZZ.replace('"crash"', '"explode"'),
        "unknown-target": FUZZ.replace("leader:t-0", "leader:nope-9"),
        "unknown-invariant": 'invariants = ["nope"]\n' + FUZZ,
        "bad-expect": FUZZ.replace('"pass"', '"violation:nope"'),
        "fault-after-end": FUZZ.replace("at_ms = 300", "at_ms = 999999"),
        "nul-in-string": FUZZ.replace('"fz"', '"f\\u0000z"'),
        "newline-name": FUZZ.replace('"fz"', '"f\\nz"'),
        "too-many-partitions": FUZZ.replace("partitions = 2", "partitions = 100000"),
        "too-many-faults": FUZZ + '[[faults]]\nat_ms = 1\naction = "crash"\ntarget = "b1"\n' * 10001,
    }
    cases += [_run(text, f"scenario-{name}", "refused") for name, text in broken.items()]
    raw = {"bom": b"\xef\xbb\xbf" + FUZZ.encode(), "latin1": FUZZ.encode() + b"# caf\xe9\n",
           "big": FUZZ.encode() + b"#" * (5 << 20)}
    for n in range(6):  # random bytes, never UTF-8 (a 0xff byte)
        raw[f"noise{n}"] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) + b"\xff"
    cases += [_run(data, f"scenario-{name}", "refused") for name, data in raw.items()]
    for n in range(8):  # legal variations, which must run
        text = (FUZZ.replace("seed = 1", f"seed = {rng.randrange(1000)}")
                .replace("duration_ms = 1000", f"duration_ms = {rng.randrange(600, 1500)}")
                .replace("records_per_sec = 50", f"records_per_sec = {rng.randrange(5, 80)}")
                .replace("partitions = 2", f"partitions = {rng.randrange(1, 4)}"))
        cases.append(_run(text, f"scenario-legal{n}", "runs"))
    return cases


# -- flags ---------------------------------------------------------------------------------
def flag_cases(rng: random.Random) -> list[Case]:
    run = ["run", "{scenario}", "--no-plot"]
    refused = {
        "seed-arabic": ["--seed", "\u0663"], "seed-blank": ["--seed", " 7 "],
        "seed-underscore": ["--seed", "1_000"], "seed-huge": ["--seed", HUGE],
        "seed-negative": ["--seed=-1"], "seed-float": ["--seed", "1.0"], "seed-empty": ["--seed", ""],
        "seed-2**53+1": ["--seed", str(2**53 + 1)], "seed-hex": ["--seed", "0x10"],
        "profile-empty": ["--profile", ""], "profile-blank": ["--profile", "  "],
        "profile-unknown": ["--profile", "9.9"], "out-empty": ["--out", ""],
        "out-nul": ["--out", "{dir}/a\x00b"], "out-is-file": ["--out", "{scenario}"],
        "out-long": ["--out", "{dir}/" + "x" * 300], "unknown-flag": ["--frobnicate"],
        "set-no-equals": ["--set", "seed"], "set-empty-key": ["--set", "=1"],
        "set-unknown-key": ["--set", "nope.key=1"], "set-huge": ["--set", f"seed={HUGE}"],
        "set-negative": ["--set", "run.duration_ms=-1"], "set-text": ["--set", "run.duration_ms=abc"],
        "set-missing-item": ["--set", "producers.5.acks=1"], "set-bad-array": ["--set", "topics=[x]"],
        "set-table-for-number": ["--set", "run.duration_ms={a=1}"],
        "set-deep": ["--set", "seed=" + "[" * 3000],
        "set-mutant": ["--set", "protocol.mutant=nope"], "set-index": ["--set", "producers.\u00b2.acks=1"],
        "time-budget-zero": ["--time-budget", "0"], "time-budget-nan": ["--time-budget", "nan"],
        "memory-budget-text": ["--memory-budget", "lots"],
        "determinism-with-out": ["--check-determinism", "--out", "{dir}/o"],
    }
    cases = [Case(f"flag-run-{k}", run + v + (["--out", "{dir}/o"] if "--out" not in v else []),
                  "refused") for k, v in refused.items()]
    other = {
        "check-invariants": ["check", "{run}", "--invariants", "nope"],
        "check-invariants-comma": ["check", "{run}", "--invariants", ","],
        "plot-window": ["plot", "{run}", "--window", "5:1", "-o", "{dir}/t.png"],
        "plot-window-nan": ["plot", "{run}", "--window", "nan:1", "-o", "{dir}/t.png"],
        "plot-o-txt": ["plot", "{run}", "-o", "{dir}/t.txt"],
        "plot-partitions": ["plot", "{run}", "--partitions", ",", "-o", "{dir}/t.png"],
        "report-o-png": ["report", "{run}", "-o", "{dir}/r.png"],
        "diff-context-0": ["diff", "{run}", "{run}", "--context", "0"],
        "diff-kinds": ["diff", "{run}", "{run}", "--kinds", "apend"],
        "suite-seeds-0": ["suite", "{scenario}", "--seeds", "0", "--out", "{dir}/o"],
        "suite-seeds-huge": ["suite", "{scenario}", "--seeds", "10000000", "--out", "{dir}/o"],
        "suite-jobs-text": ["suite", "{scenario}", "--jobs", "two", "--out", "{dir}/o"],
        "explore-budget-0": ["explore", "{scenario}", "--budget", "0", "--out", "{dir}/o"],
        "sweep-seeds-0": ["sweep", "{dir}/none.toml", "--seeds", "0"],
        "sweep-master": ["sweep", "{dir}/none.toml", "--master", "nowhere"],
        "selftest-mutants": ["selftest", "--mutants", "nope"],
        "list-unknown": ["list", "nope"],
        "unknown-command": ["frobnicate"],
        "no-command": [],
    }
    cases += [Case(f"flag-{k}", v, "refused") for k, v in other.items()]
    for n in range(6):  # flags that are fine
        argv = run + ["--seed", str(rng.randrange(2**53)), "--out", "{dir}/o"]
        if n % 2:
            argv += ["--set", f"run.duration_ms={rng.randrange(500, 1200)}"]
        cases.append(Case(f"flag-legal{n}", argv, "runs"))
    cases.append(Case("flag-version", ["--version"], "runs"))
    return cases


# -- sweep specs ---------------------------------------------------------------------------
def spec_cases(rng: random.Random) -> list[Case]:
    base = 'name = "fz"\nscenarios = ["s.toml"]\nseeds = 2\n'
    bodies = {
        "seeds-text": base.replace("seeds = 2", 'seeds = "x"'),
        "seeds-zero": base.replace("seeds = 2", "seeds = 0"),
        "seeds-huge": base.replace("seeds = 2", f"seeds = {HUGE}"),
        "seeds-float": base.replace("seeds = 2", "seeds = 2.5"),
        "no-scenarios": 'seeds = 2\n', "scenarios-empty": base.replace('["s.toml"]', "[]"),
        "scenario-missing": base.replace("s.toml", "nope.toml"),
        "scenarios-text": base.replace('["s.toml"]', '"s.toml"'),
        "unknown-key": base + "colour = 1\n", "grid-not-table": base + "grid = 1\n",
        "grid-not-list": base + '[grid]\n"run.duration_ms" = 5\n',
        "grid-empty-list": base + '[grid]\n"run.duration_ms" = []\n',
        "grid-unknown-key": base + '[grid]\n"nope.key" = [1, 2]\n',
        "grid-bad-value": base + '[grid]\n"run.duration_ms" = [-1]\n',
        "grid-huge": base + f'[grid]\n"seed" = [{HUGE}]\n',
        "per-task-zero": base + "seeds_per_task = 0\n",
        "traces-negative": base + "traces_per_invariant = -1\n",
        "syntax": base.replace("seeds = 2", "seeds 2"), "empty": "",
        "too-many-cells": base + '[grid]\n"seed" = [' + ", ".join(map(str, range(10001))) + "]\n",
    }
    cases = [Case(f"spec-{k}", ["sweep", "{dir}/spec.toml", "--out", "{dir}/o"], "refused",
                  {"spec.toml": v.encode(), "s.toml": FUZZ.encode()}) for k, v in bodies.items()]
    for n in range(4):
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 100))) + b"\xfe"
        cases.append(Case(f"spec-noise{n}", ["sweep", "{dir}/spec.toml", "--out", "{dir}/o"],
                          "refused", {"spec.toml": noise}))
    return cases


# -- traces --------------------------------------------------------------------------------
def _edit_event(lines: list[str], rng: random.Random, how: str) -> list[str]:
    i = rng.randrange(1, len(lines) - 1)
    ev = json.loads(lines[i])
    if how == "kind":
        ev["kind"] = rng.choice(["apend", "", "END", "send ", "x" * 50])
    elif how == "field":
        fields = [k for k in ev if k not in ("seq", "t")]
        ev[rng.choice(fields)] = rng.choice(["x", None, [1, "a"], {"a": 1}, 10**30, True, -1.5])
    elif how == "drop-field":
        fields = [k for k in ev if k not in ("seq", "t", "node", "kind")] or ["kind"]
        del ev[rng.choice(fields)]
    elif how == "seq":
        ev["seq"] = ev["seq"] + rng.choice([-1, 1, 1000, -10**6])
    elif how == "time":
        ev["t"] = rng.choice([-1, "0", 10**25, 0.5])
    return lines[:i] + [json.dumps(ev, separators=(",", ":"))] + lines[i + 1:]


def _lines_edit(lines: list[str], rng: random.Random, how: str) -> list[str]:
    i = rng.randrange(1, len(lines) - 1)
    if how == "delete":
        return lines[:i] + lines[i + 1:]
    if how == "duplicate":
        return lines[:i] + [lines[i]] + lines[i:]
    if how == "swap":
        return lines[:i] + [lines[i + 1], lines[i]] + lines[i + 2:]
    if how == "after-end":
        end = json.loads(lines[-1])
        return lines + [json.dumps({**end, "seq": end["seq"] + 1}, separators=(",", ":"))]
    if how == "garbage":
        return lines[:i] + [rng.choice(["{", "[]", "null", "1", '"x"', "{}"])] + lines[i:]
    return lines[:i] + [lines[i][: rng.randrange(1, len(lines[i]))]]  # cut short mid-line


HEADER_EDITS = {
    "format": lambda h: h.update(format="other/9"), "seed": lambda h: h.update(seed="x"),
    "brokers": lambda h: h["options"]["cluster"].update(brokers=10**6),
    "options": lambda h: h.update(options=[]), "invariants": lambda h: h.update(invariants=[1]),
    "type": lambda h: h.update(type="event"), "producers": lambda h: h["options"].update(producers=7),
}


def trace_cases(rng: random.Random, lines: list[str]) -> list[Case]:
    """Corrupted copies of a stored trace; its verdict.json stays beside it unless noted, so
    even an edit of the right type is refused (the digest no longer matches)."""
    cases = []

    def add(name, new_lines, with_verdict=True, command="check", raw=None):
        files = {"r/trace.jsonl": raw if raw is not None else ("\n".join(new_lines) + "\n").encode()}
        if with_verdict:
            files["r/verdict.json"] = b"{verdict}"  # filled in by the test
        argv = {"check": ["check", "{dir}/r"], "plot": ["plot", "{dir}/r", "-o", "{dir}/t.png"],
                "report": ["report", "{dir}/r", "-o", "{dir}/r.html"],
                "diff": ["diff", "{run}", "{dir}/r"]}[command]
        cases.append(Case(f"trace-{name}", argv, "refused", files))

    for how in ("kind", "field", "drop-field", "seq", "time"):
        for n in range(12):
            add(f"{how}{n}", _edit_event(lines, rng, how))
    for how in ("delete", "duplicate", "swap", "after-end", "garbage", "cut"):
        for n in range(5):
            add(f"{how}{n}", _lines_edit(lines, rng, how))
    for name, edit in HEADER_EDITS.items():
        header = json.loads(lines[0])
        edit(header)
        add(f"header-{name}", [json.dumps(header)] + lines[1:])
    text = ("\n".join(lines) + "\n").encode()
    add("not-utf8", [], raw=text[:200] + b"\xff" + text[200:])
    add("empty", [], raw=b"")
    add("no-header", lines[1:])
    # without a verdict, what the vocabulary forbids is refused by every reader
    for command in ("check", "plot", "report", "diff"):
        add(f"{command}-kind", _edit_event(lines, rng, "kind"), False, command)
        add(f"{command}-after-end", _lines_edit(lines, rng, "after-end"), False, command)
    return cases


# -- paths ---------------------------------------------------------------------------------
PATHS = {"missing": "{dir}/nope.toml", "directory": "{dir}", "fifo": "{fifo}",
         "dev-null": "/dev/null", "dev-zero": "/dev/zero", "nul": "{dir}/a\x00b",
         "long": "{dir}/" + "y" * 300, "loop": "{dir}/loop"}


def path_cases() -> list[Case]:
    cases = []
    for label, path in PATHS.items():
        for argv in (["run", path, "--out", "{dir}/o"], ["check", path], ["sweep", path],
                     ["plot", path, "-o", "{dir}/t.png"], ["report", path],
                     ["diff", "{run}", path], ["shrink", path, "--out", "{dir}/o"]):
            if label == "directory" and argv[0] == "report":
                continue  # a directory is what report takes (an empty one is refused below)
            cases.append(Case(f"path-{argv[0]}-{label}", argv, "refused"))
    cases.append(Case("path-report-empty-dir", ["report", "{dir}"], "refused"))
    return cases


def all_cases(trace_lines: list[str]) -> list[Case]:
    rng = random.Random(35)
    cases = (scenario_cases(rng) + flag_cases(rng) + spec_cases(rng)
             + trace_cases(rng, trace_lines) + path_cases())
    seen: dict[str, int] = {}
    for case in cases:  # a name per case (two keys may share one: `name` of scenario and topic)
        seen[case.name] = seen.get(case.name, 0) + 1
        if seen[case.name] > 1:
            case.name += f"#{seen[case.name]}"
    return cases
