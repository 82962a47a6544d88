"""Helpers shared by CLI commands: loading scenarios, output directories, repro lines."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import tempfile
from contextlib import contextmanager

from epochsim.errors import UsageError, path_problem
from reports.style import written_by_epochsim
from scenarios.schema import ScenarioError, load_scenario

OWN_OUTPUTS = {"trace.jsonl", "verdict.json", "timeline.png", "timeline.svg", "timeline.html",
               "sequence.svg", "report.html", "counterexample.toml", "explore.json", "suite.json",
               "sequence.png", "coverage.png"}


OWN_SUFFIXES = (".html", ".png", ".svg")


def load(path: str, overrides: dict | None = None):
    try:
        return load_scenario(path, overrides)
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None


def profile_note(path: str, overrides: dict | None, scenario) -> str | None:
    """A note naming the release defaults that the command line's profile moved in `scenario`
    (loaded from `path` with `overrides`): the options it leaves out take the new release's
    values, so a result differs from the file's by more than the switches. None when no
    override names a profile, or nothing moved."""
    from epochsim.moved_defaults import moved_defaults

    keys = [k for k in overrides or {} if names_a_profile(k)]
    if not keys:
        return None
    rest = {k: v for k, v in overrides.items() if k not in keys}
    try:
        before = load_scenario(path, rest).options
    except ScenarioError:  # the file needs the override to load: nothing to compare with
        return None
    moved = moved_defaults(before, scenario.options)
    if not moved:
        return None
    given = ", ".join(f"{k} = {overrides[k]}" for k in keys)
    return (f"note: {path}: {given} moves Kafka's defaults that the scenario leaves out: "
            f"{'; '.join(moved)} (write them in the scenario, or --set them, to compare the "
            "switches alone)")


def note_moved_defaults(path: str, overrides: dict | None, scenario) -> None:
    """Print `profile_note` on stderr, if any."""
    note = profile_note(path, overrides, scenario)
    if note:
        import sys
        print(note, file=sys.stderr)


TEXT_KEYS = frozenset({"protocol.profile", "protocol.inter_broker_protocol"})


def names_a_profile(key: str) -> bool:
    """Whether `--set KEY` names a profile, a name that may look like a number: the run's, the
    IBP, a broker's (`protocol.brokers.b1`) or a client's (`producers.0.profile`)."""
    parts = key.split(".")
    return (key in TEXT_KEYS or parts[:2] == ["protocol", "brokers"]
            or parts[0] in ("producers", "consumers") and parts[-1] == "profile")


def distinct_names(files: list[str], scenarios: list) -> None:
    """Refuse a command line that names one scenario twice (the same file, or two files with
    the same `name`): their results and output directories would be indistinguishable."""
    seen: dict[str, str] = {}
    for f, sc in zip(files, scenarios):
        if sc.name in seen:
            raise UsageError(f"{f}: name {sc.name!r} is also the name of {seen[sc.name]}; "
                             "pass each scenario once, and give each its own name")
        seen[sc.name] = f


def parse_sets(pairs: list[str] | None, profile: str | None = None) -> dict:
    """`--set KEY=VALUE` pairs (VALUE read as a TOML value, else as a string) and `--profile`.
    A profile is a name even when it reads as a number (`--set protocol.profile=3.7`)."""
    import tomllib
    out: dict = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE, e.g. --set protocol.profile=2.5")
        try:
            value = tomllib.loads(f"v = {text}")["v"]
            if names_a_profile(key.strip()) and not isinstance(value, str):
                value = text.strip()
        except tomllib.TOMLDecodeError as exc:
            if text.strip().startswith(("[", "{")):  # meant as an array or table, not a string
                raise UsageError(f"--set {key.strip()}: {text.strip()} is not a TOML value "
                                 f"({str(exc).split(' (at ')[0]}); "
                                 f"{_quoting_fix(key.strip(), text.strip())}") from None
            value = text
        except RecursionError:
            raise UsageError(f"--set {key.strip()}: the value is nested too deeply; "
                             "give a plain value, array or inline table") from None
        except ValueError:  # an integer of more than 4300 digits, which Python will not read
            raise UsageError(f"--set {key.strip()}: the integer is too long to read (over 4300 "
                             "digits); scenario numbers stop at 2**53") from None
        out[key.strip()] = value
    if profile:
        out["protocol.profile"] = profile
    return out


def _quoting_fix(key: str, text: str) -> str:
    """How to write an array or table `--set` value TOML cannot read: most often strings left
    bare inside it, such as `[stray_replica]`; with them quoted, the value to paste."""
    import tomllib

    quoted = re.sub(r'(?<![\w."\'-])([A-Za-z_][\w.-]*)(?![\w."\'-]|\s*=)',
                    lambda m: m.group(1) if m.group(1) in ("true", "false", "inf", "nan")
                    else f'"{m.group(1)}"', text)
    try:
        tomllib.loads(f"v = {quoted}")
    except tomllib.TOMLDecodeError:
        return ("write it as a TOML array or inline table, strings quoted, e.g. "
                "--set 'invariants=[\"stray_replica\"]'")
    return f"quote the strings inside it: --set {shlex.quote(f'{key}={quoted}')}"


def set_args(overrides: dict) -> list[str]:
    """`overrides` as the arguments `--set KEY=VALUE ...` that `parse_sets` reads back to the
    same values: each VALUE written as TOML text (a table is `{ dist = "constant", ms = 2 }`,
    not Python's repr), a string quoted unless it reads back bare (`name = "123"` must stay
    quoted, or it comes back as the integer 123; `protocol.profile=2.5` is a name bare)."""
    from scenarios.toml_text import value_text

    args = []
    for key, value in overrides.items():
        try:
            text = value_text(value)
        except TypeError:  # not a value any scenario key takes: the loader refused it already
            text = str(value)
        if isinstance(value, str) and _reads_back(key, value, value):
            text = value  # a name reads better bare: protocol.mutant=no_dedup_cache
        args += ["--set", f"{key}={text}"]
    return args


def _reads_back(key: str, text: str, value) -> bool:
    """Does `--set key=text` give exactly `value` (type included: "123" bare is an integer)?"""
    if text != text.strip() or any(c in text for c in "\r\n"):
        return False
    try:
        got = parse_sets([f"{key}={text}"])[key]
    except UsageError:
        return False
    return type(got) is type(value) and got == value


def override_flags(overrides: dict) -> str:
    """The command-line form of `overrides`, for repro lines: `set_args` quoted for a POSIX
    shell, so that the line runs as pasted."""
    return "".join(f" {shlex.quote(arg)}" for arg in set_args(overrides))


def add_override_args(parser) -> None:
    parser.add_argument("--profile", help="run under this Kafka version profile instead of the "
                        "scenario's, with that release's defaults for the configs the scenario "
                        "leaves out (epochsim list defaults; a note on stderr names those it moves)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE", dest="sets",
                        help="override a scenario key, e.g. --set protocol.mutant=no_dedup_cache "
                             "or --set producers.0.acks=1 (repeatable)")


def prepare_out_dir(path: str, allowed: set[str] | None = None) -> str:
    """Create `path`, or reuse it when it holds only files epochsim writes; never clobber others.
    A directory that cannot be made or read is a usage error naming the path, not a traceback."""
    allowed = OWN_OUTPUTS if allowed is None else allowed
    try:
        if os.path.exists(path):
            if not os.path.isdir(path):
                raise UsageError(f"--out {path}: exists and is not a directory; choose another --out")
            foreign = sorted(f for f in os.listdir(path) if foreign_output(path, f, allowed))
            if foreign:
                raise UsageError(f"--out {path}: holds files epochsim did not write ({foreign[0]}, "
                                 "...); choose an empty or new directory")
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise UsageError(f"--out {path}: cannot create or read it ({path_problem(exc)}); choose "
                         "another --out") from None
    check_writable(path)
    return path


def check_writable(path: str, flag: str = "--out") -> None:
    """Refuse an existing directory the process cannot create files in (read-only, immutable,
    on a read-only mount), before any run: found only when the results are written, it lost
    them (study) or raised from a worker (suite). Probed by making and removing a hidden
    file, as permission bits alone say nothing for root or an immutable directory."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".epochsim-probe-", dir=path)
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write into it ({path_problem(exc)}); choose "
                         f"another {flag}") from None


def check_output_file(out: str, suffixes: tuple[str, ...]) -> str:
    """`-o FILE` for a page or picture: one of `suffixes`, and never an existing file that
    epochsim did not write: only a file with its stamp is replaced, whatever its name (a
    hand-written notes/report.html is the user's)."""
    if not out.lower().endswith(suffixes):
        raise UsageError(f"-o {out}: write it as {' or '.join(suffixes)}; pick such a name")
    if os.path.basename(out).lower() in suffixes:  # ".png": an extension, no name
        example = ("report" if suffixes[0] == ".html" else "timeline") + suffixes[0]
        raise UsageError(f"-o {out}: names no file, only an extension; give it a name, e.g. "
                         f"{os.path.join(os.path.dirname(out), example)}")
    if os.path.islink(out):
        raise UsageError(f"-o {out}: is a symbolic link, and epochsim does not write through "
                         "links; remove it or choose another name")
    if os.path.lexists(out) and not (os.path.isfile(out) and written_by_epochsim(out)):
        raise UsageError(f"-o {out}: exists and is not a file epochsim writes; choose another "
                         "name or remove it first")
    return out


def foreign_output(path: str, name: str, allowed: set[str]) -> bool:
    """Is `name` in an output directory something epochsim did not write? (A directory where
    epochsim writes a file, such as a folder named trace.jsonl, is foreign too, and so is a
    page or picture without epochsim's stamp, such as the user's own timeline.png.)"""
    full = os.path.join(path, name)
    if os.path.islink(full):
        return True  # writing through it would change a file elsewhere
    if name.startswith("."):
        return False
    if name.endswith(OWN_SUFFIXES):
        return not (os.path.isfile(full) and written_by_epochsim(full))
    if name in OWN_OUTPUTS:
        return not os.path.isfile(full)
    return name not in allowed


def trace_file(path: str) -> str:
    """The stored trace `path` names: the file itself, or the trace.jsonl of a run directory
    (as `diff` and `report` take them). A pipe or another file that is not a regular one
    (`check /dev/stdin`, `<(cat ...)`) is refused: the readers go through a trace more than
    once (to check it, then for its digest), and a pipe's second reading finds it empty."""
    if os.path.isdir(path):
        inner = os.path.join(path, "trace.jsonl")
        if not os.path.isfile(inner):
            raise UsageError(f"{path}: a directory without trace.jsonl; pass a trace or the "
                             "--out directory of `epochsim run`")
        return inner
    if os.path.exists(path) and not os.path.isfile(path):
        raise UsageError(f"{path}: not a regular file (a pipe or a device); a trace is read "
                         "more than once, so save it to a file and pass that")
    return path


@contextmanager
def reading_user_files(source: str, out: str):
    """Turn what goes wrong reading `source` (a trace, a run or sweep directory) or writing
    `out` into one-line usage errors. Files epochsim wrote itself always read, so an event or
    record of the wrong shape means the file was edited or comes from another version."""
    from invariants.registry import SHAPE_ERRORS
    from reports.style import ReportError
    from sim.core.trace import TraceError

    try:
        yield
    except (TraceError, ReportError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{exc.filename or out}: cannot read or write it ({exc.strerror}); "
                         "check the path") from None
    except RecursionError:
        raise UsageError(f"{source}: a file in it is nested too deeply to be one epochsim "
                         "wrote; was it edited?") from None
    except SHAPE_ERRORS as exc:
        event = _event_being_read(exc.__traceback__)
        where = f"event seq {event['seq']} ({event['kind']}) " if event else "a record "
        raise UsageError(f"{source}: {where}does not have the shape epochsim writes "
                         f"({type(exc).__name__}: {exc}); was it edited, or written by another "
                         "version?") from None


def _event_being_read(tb) -> dict | None:
    """The trace event the failing code was reading, if any: the innermost frame holding an
    event dict (int `seq`, str `kind`) in a local. Readers take events one at a time, so
    that is the event whose shape was wrong; it lets the error point into the file."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            if (isinstance(value, dict) and type(value.get("seq")) is int
                    and type(value.get("kind")) is str):
                return value
    return None


def repro_line(scenario_path: str, seed: int, out: str | None = None,
               overrides: dict | None = None) -> str:
    line = f"epochsim run {shlex.quote(scenario_path)} --seed {seed}{override_flags(overrides or {})}"
    return line + (f" --out {shlex.quote(out)}" if out else "")


MAX_SEED = 2**53  # the largest seed `run --seed` and a scenario's `seed` take
# Seeds per scenario for `suite` and `study`, which plan and keep every run in memory;
# `sweep` is made for more.
MAX_SEEDS_PER_SCENARIO = 100_000


_INTEGER = re.compile(r"-?[0-9]{1,30}")


def strict_int(text: str, example: str = "7") -> int:
    """`text` as an integer written plainly: ASCII digits, an optional minus, nothing else
    (Python's int() also takes ' 7 ', '1_000' and other scripts' digits such as '٣', which
    no repro line writes back the same)."""
    if not _INTEGER.fullmatch(text):
        digits = text.removeprefix("-")
        too_long = digits.isascii() and digits.isdigit()  # only digits, and more than 30
        what = "too many digits" if too_long else "not an integer written in digits 0-9"
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: {what}; pass e.g. {example}")
    return int(text)


def seed_arg(text: str) -> int:
    """argparse type of a seed flag; argparse names the flag in the error
    (`argument --seed: 'x': not an integer ...`)."""
    value = strict_int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value}: must be between 0 and 2**53")
    return value


def seeds_arg(text: str) -> int:
    """argparse type of `--seeds` for `suite` and `study`: a positive count, at most
    MAX_SEEDS_PER_SCENARIO."""
    value = positive_int(text)
    if value > MAX_SEEDS_PER_SCENARIO:
        raise argparse.ArgumentTypeError(f"{value}: at most {MAX_SEEDS_PER_SCENARIO} seeds per "
                                         "scenario here; `epochsim sweep` runs more")
    return value


def check_seed_range(files: list[str], scenarios: list, seeds: int) -> None:
    """Refuse seeds past MAX_SEED: each scenario runs `seeds` seeds from its own `seed`, and a
    larger seed could not be replayed with `epochsim run --seed`."""
    for f, sc in zip(files, scenarios):
        if sc.seed + seeds - 1 > MAX_SEED:
            raise UsageError(f"{f}: seeds {sc.seed}..{sc.seed + seeds - 1} pass 2**53, the "
                             "largest seed; lower the scenario's seed or --seeds")


def positive_int(text: str) -> int:
    """argparse type of a count flag (`--seeds`, `--jobs`, `--budget`, ...); argparse names the
    flag in the error (`argument --seeds: 0: must be a positive integer`)."""
    value = strict_int(text, "10")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value}: must be a positive integer")
    return value


def describe_violations(verdict: dict, limit: int = 5) -> list[str]:
    lines = []
    for v in verdict["violations"][:limit]:
        lines.append(f"  VIOLATION {v['invariant']} at {v['t_us'] / 1e6:.6f}s: {v['message']} "
                     f"(events {', '.join(map(str, v['seqs']))})")
    extra = len(verdict["violations"]) - limit
    if extra > 0:
        lines.append(f"  ... and {extra} more")
    return lines


def describe_liveness(notes: dict) -> list[str]:
    """One line per after-heal rule: what it judged, or why it judged nothing (a rule that
    judged nothing holds vacuously)."""
    return [f"  liveness {name}: {note}" for name, note in notes.items()]
