"""The `epochsim` command line.

Contract: every subcommand lives in its own module with `register(subparsers)`; `main()`
returns the exit code: 0 success / invariants hold, 1 invariant violated or expectation not
met, 2 usage or input error (one line on stderr, no traceback), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from epochsim import budget
from epochsim.errors import UsageError, path_problem

COMMANDS = ["cmd_run", "cmd_check", "cmd_suite", "cmd_explore", "cmd_selftest", "cmd_plot",
            "cmd_report", "cmd_sweep", "cmd_study", "cmd_diff", "cmd_list", "cmd_serve"]

DESCRIPTION = """\
Deterministic simulation harness for Kafka's leader-epoch, fencing and idempotence protocols.

Same scenario + same seed = the same trace, byte for byte. Typical use:
  epochsim run scenarios/smoke.toml --seed 7 --out runs/smoke    run once, write trace + verdict
  epochsim suite scenarios/ --seeds 5                             check every scenario's expectation
  epochsim check runs/smoke/trace.jsonl                           re-check a stored trace
Exit codes: 0 ok, 1 invariant violated / expectation not met, 2 bad input or usage."""


#: the commands that run scenarios, and so take --time-budget and --memory-budget
RUNNING = frozenset({"run", "suite", "explore", "shrink", "selftest", "study", "sweep"})


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}; see `{self.prog} --help`")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="epochsim", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version())
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"epochsim.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"epochsim.{name}":
                continue  # command not built yet
            raise
        module.register(subs)
    for name, sub in subs.choices.items():
        if name in RUNNING:
            budget.add_budget_args(sub)
    return parser


def _version() -> str:
    from epochsim.version import __version__
    return f"epochsim {__version__}"


def main(argv: list[str] | None = None) -> int:
    saved = {k: os.environ.get(k) for k in (budget.ENV_TIME, budget.ENV_MEMORY)}
    tolerate_undecodable_names()
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra and getattr(args, "command", None):
            raise UsageError(unknown_argument(parser, args.command, extra[0]))
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "func", None):
            raise UsageError("no command given; see `epochsim --help` for the commands")
        refuse_blank_values(parser, args)
        budget.apply_args(args)
        return int(args.func(args) or 0)
    except UsageError as exc:
        return _one_line(str(exc))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a full disk, an immutable file: the machine's limit, not a bug
        return _one_line(os_problem(exc))
    finally:
        for key, value in saved.items():  # a budget flag holds for this command only
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def tolerate_undecodable_names() -> None:
    """Let the process's own stdout and stderr print a path of bytes that are not UTF-8 (Python
    reads one as lone surrogates, '\udcff'): under a UTF-8 locale their errors are "strict",
    and `run` raised UnicodeEncodeError printing its summary after the run was written. The
    bytes go out as they came in, so a printed repro line names the same file."""
    for stream in (sys.stdout, sys.stderr):
        if stream in (sys.__stdout__, sys.__stderr__) and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="surrogateescape")
            except (ValueError, OSError):  # a closed or detached stream: nothing to print to
                pass


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    return sub.choices[command]


def unknown_argument(parser: argparse.ArgumentParser, command: str, arg: str) -> str:
    """The one line for an argument `epochsim COMMAND` does not take: the command, the closest
    flag it has, and its --help (argparse alone blames `epochsim` and its --help)."""
    from difflib import get_close_matches
    flags = [o for a in _subparser(parser, command)._actions for o in a.option_strings]  # noqa: SLF001
    close = get_close_matches(arg.split("=", 1)[0], flags, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"epochsim {command}: unknown argument {arg!r}{hint}; see "
            f"`epochsim {command} --help`")


def refuse_blank_values(parser: argparse.ArgumentParser, args) -> None:
    """Refuse an empty or blank value for any argument (`--out ''`, `--profile ' '`): each was
    silently taken as "not given", and a path or name of blanks is never what was meant. And
    one holding a NUL byte, which a shell cannot pass but `main([...])` can: some paths
    raised ValueError where they were first used (`suite --junit-xml` after all its runs)."""
    for action in _subparser(parser, args.command)._actions:  # noqa: SLF001
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "\0" in v for v in values):  # only in-process callers
            raise UsageError(f"{args.command} {_name(action)}: {value!r} holds a NUL byte, "
                             "which no path or name can; remove it")
        if any(isinstance(v, str) and not v.strip() for v in values):
            if action.option_strings:
                name, fix = max(action.option_strings, key=len), \
                    "give a value, or leave the flag out for its default"
            else:
                name, fix = action.metavar or action.dest, "give a path"
            raise UsageError(f"{args.command} {name}: {value!r} is empty; {fix}")


def _name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings else \
        (action.metavar or action.dest)


def os_problem(exc: OSError) -> str:
    """An OSError that reached the top (a full disk, an immutable file) as one line with the
    fix."""
    fix = ("free some space or choose another --out" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
           else "check its permissions and attributes (chmod, chattr), or choose another --out")
    return f"{exc.filename or 'a file'}: cannot write or read it ({path_problem(exc)}); {fix}"


def _one_line(text: str) -> int:
    text = text.replace("\r", "\\r").replace("\n", "\\n")  # one line, always
    print(f"error: {text}", file=sys.stderr)
    return 2
