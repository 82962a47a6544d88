"""Where `epochsim run` keeps its runs: one new directory per run, never overwritten.

Contract: `new_run_dir(root, scenario, seed)` makes and returns
`root/<scenario>/<UTC time>-seed-<N>/` (a `-2`, `-3`... suffix if that name is taken, so two
runs in one second both stay); `point_latest(run_dir)` makes `root/<scenario>/latest` a
relative symbolic link to it, replaced atomically (a platform without symbolic links gets no
`latest` and a note). `held_run(path)` names the run an existing directory already holds (its
verdict's scenario and seed), or None: a run given an explicit `--out` that holds another run
is refused unless `--force`. Wall-clock time names directories only; it never enters a trace.
"""

from __future__ import annotations

import json
import os
import sys
import time

from epochsim.errors import UsageError

RUN_FILES = ("trace.jsonl", "verdict.json")


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def new_run_dir(root: str, scenario: str, seed: int) -> str:
    base = os.path.join(root, scenario, f"{_stamp()}-seed-{seed}")
    path, n = base, 1
    while True:
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            n += 1
            path = f"{base}-{n}"
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: cannot create the run directory ({exc}); choose a "
                             "directory with --out") from None


def point_latest(run_dir: str) -> str | None:
    """Make `latest` beside `run_dir` point to it; the link's path, or None if not made."""
    parent = os.path.dirname(os.path.abspath(run_dir))
    link = os.path.join(parent, "latest")
    tmp = os.path.join(parent, f".latest-{os.getpid()}")
    try:
        if os.path.lexists(link) and not os.path.islink(link):
            print(f"note: {link} exists and is not a link; left as it is", file=sys.stderr)
            return None
        os.symlink(os.path.basename(run_dir), tmp)
        os.replace(tmp, link)
        return link
    except OSError as exc:
        if os.path.lexists(tmp):
            os.remove(tmp)
        print(f"note: no 'latest' link beside {run_dir} ({exc.strerror or exc})", file=sys.stderr)
        return None


def held_run(path: str) -> str | None:
    """'<scenario> seed <N>' (or 'a run') when `path` holds a run's files, else None."""
    files = [os.path.join(path, f) for f in RUN_FILES]
    if not os.path.isdir(path) or not any(os.path.isfile(f) and not os.path.islink(f)
                                          for f in files):
        return None  # (a link there is refused as foreign by `prepare_out_dir`)
    try:
        with open(os.path.join(path, "verdict.json"), encoding="utf-8") as fh:
            verdict = json.load(fh)
        return f"the run of {verdict['scenario']} at seed {verdict['seed']}"
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # edited, not JSON
        return "a run"


def refuse_held_run(path: str, force: bool) -> None:
    held = held_run(path)
    if held is not None and not force:
        raise UsageError(f"--out {path}: already holds {held}; pass --force to replace it, "
                         "or leave out --out to keep every run under runs/<scenario>/")
