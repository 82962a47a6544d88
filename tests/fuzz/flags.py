"""Every flag and positional argument of every `epochsim` command, given bad values.

Contract: `flag_cases(world)` builds, from the parser itself (`epochsim.cli.build_parser`),
one case per (command, argument, bad value): the command's smallest valid command line
(`BASE`) with that one argument replaced or added. `world` names the inputs the base lines
need (a scenario, a run, a sweep spec, a fresh directory). A case is `(name, argv)`; run it
with `tests.fuzz.inputs.invoke`, which says "refused", "ran", "raised", "timeout" or
"exit-N". Nothing here decides which values are legal: a value the command takes is "ran".
"""

from __future__ import annotations

import argparse

# the smallest command line per command, that runs (quickly) as it is
BASE: dict[str, list[str]] = {
    "run": ["run", "{scenario}", "--out", "{o}", "--no-plot"],
    "check": ["check", "{run}"],
    "suite": ["suite", "{scenario}", "--seeds", "1", "--out", "{o}"],
    "explore": ["explore", "{scenario}", "--budget", "2", "--out", "{o}", "--no-plot"],
    "shrink": ["shrink", "{run}", "--out", "{o}", "--no-plot"],
    "selftest": ["selftest", "--mutants", "no_dedup_cache", "--budget", "2", "--no-clean",
                 "--no-plot", "--out", "{o}"],
    "plot": ["plot", "{run}", "-o", "{o}.png"],
    "report": ["report", "{run}", "-o", "{o}.html"],
    "sweep": ["sweep", "{spec}", "--out", "{o}"],
    "study": ["study", "--seeds", "1", "--out", "{o}", "--no-plot"],
    "diff": ["diff", "{run}", "{run}"],
    "list": ["list", "profiles"],
    "serve": ["serve", "{scenario}", "--out", "{o}", "--no-clients"],
}
# commands whose valid lines take minutes (or the wall clock): only their refusals are awaited
SLOW = frozenset({"selftest", "study", "serve", "sweep", "shrink"})

BAD_VALUES: list[tuple[str, str]] = [
    ("empty", ""), ("blank", "  "), ("text", "x"), ("negative", "-1"), ("zero", "0"),
    ("float", "1.5"), ("nan", "nan"), ("inf", "inf"), ("exp", "1e999"), ("huge", "9" * 400),
    ("nul", "a\x00b"), ("newline", "a\nb"), ("not-utf8", "\udcff"), ("missing", "{dir}/nope"),
    ("directory", "{dir}"), ("dev-null", "/dev/null"), ("comma", ","), ("colon", "5:1"),
    ("equals", "a=b"), ("long", "y" * 5000),
]


def _arguments(parser: argparse.ArgumentParser, command: str) -> list[argparse.Action]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return [a for a in sub.choices[command]._actions  # noqa: SLF001
            if not isinstance(a, argparse._HelpAction) and a.nargs != 0]  # noqa: SLF001


def _with(base: list[str], action: argparse.Action, value: str) -> list[str]:
    """`base` with `action` given `value` (replacing the value there, if any). Every base
    line has its first positional at index 1 (diff's B at 2); one that takes many
    (`list WHAT [PROFILE ...]`) gets the value added."""
    argv = list(base)
    if not action.option_strings:
        if action.nargs in ("*", "+") and action.dest != "paths":
            return argv + [value]
        argv[2 if action.dest == "b" else 1] = value
        return argv
    for flag in action.option_strings:
        if flag in argv:
            argv[argv.index(flag) + 1] = value
            return argv
    return argv + [action.option_strings[-1], value]


def flag_cases() -> list[tuple[str, list[str]]]:
    """Every (name, argv) case (see the module contract)."""
    from epochsim.cli import build_parser

    parser = build_parser()
    cases = []
    for command, base in BASE.items():
        for action in _arguments(parser, command):
            name = action.option_strings[-1] if action.option_strings else action.dest
            for label, value in BAD_VALUES:
                cases.append((f"{command} {name} {label}", _with(base, action, value)))
    return cases
