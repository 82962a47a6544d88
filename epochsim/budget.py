"""Per-run budgets of wall-clock time and memory: bounds on the machine, not on the model.

Contract: `current()` is the budget a run gets: `--time-budget` / `--memory-budget` of the
command (exported through the environment, so that worker processes of `suite`, `study` and
`sweep` inherit it), else the defaults below, which suit a laptop. `watcher(budget)` returns
the check the kernel calls every few thousand callbacks (`sim.core.kernel.Kernel.watch`): it
returns "time_budget" once the run has taken longer than `time_s` since it started,
"memory_budget" once the process holds more than `memory_mb` resident, else None. A budget
never changes a run it does not stop (the check only reads the clock and /proc); a run it
stops ends like one stopped by `run.max_events`: an `end` event with that `stopped_by` and
`settled: false`, and a verdict whose `pass` is NOT met (`epochsim.runner.cut_short`). Such a
trace depends on the machine's speed, so it is not reproducible; the budget is not part of
the scenario, the header or the digest.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

DEFAULT_TIME_S = 600.0  # ten minutes: the library's runs take seconds
DEFAULT_MEMORY_MB = 4096  # half of a small laptop's memory
ENV_TIME = "EPOCHSIM_TIME_BUDGET_S"
ENV_MEMORY = "EPOCHSIM_MEMORY_BUDGET_MB"
MAX_TIME_S = 7 * 24 * 3600.0
MAX_MEMORY_MB = 1 << 30
STOP_REASONS = ("time_budget", "memory_budget")
MEMORY_READ_S = 0.1  # reading /proc/self/statm costs ~10 us: not at every watch


@dataclass(frozen=True)
class Budget:
    time_s: float = DEFAULT_TIME_S
    memory_mb: int = DEFAULT_MEMORY_MB


def current() -> Budget:
    """The budget of a run started now (the environment's, else the defaults)."""
    return Budget(_env_number(ENV_TIME, DEFAULT_TIME_S, float),
                  _env_number(ENV_MEMORY, DEFAULT_MEMORY_MB, int))


def _env_number(name: str, default, kind):
    try:
        value = kind(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def resident_mb() -> float | None:
    """The memory this process holds now (resident set), in MiB; None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return _peak_mb()
    return pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def _peak_mb() -> float | None:
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def watcher(budget: Budget, started: float | None = None):
    """The kernel's watch for one run under `budget` that started at `started` (a
    `time.monotonic()` reading; default now). See the contract."""
    deadline = (time.monotonic() if started is None else started) + budget.time_s
    next_memory_read = 0.0  # /proc is read at most every MEMORY_READ_S, the clock every call

    def watch() -> str | None:
        nonlocal next_memory_read
        now = time.monotonic()
        if now > deadline:
            return "time_budget"
        if now >= next_memory_read:
            next_memory_read = now + MEMORY_READ_S
            held = resident_mb()
            if held is not None and held > budget.memory_mb:
                return "memory_budget"
        return None

    return watch


def describe(stopped_by: str, budget: Budget | None = None) -> tuple[str, str]:
    """The budget that stopped a run in words, and the flag that raises it."""
    budget = budget or current()
    if stopped_by == "time_budget":
        return (f"the time budget ({budget.time_s:g} s of wall-clock time per run)",
                "raise it with --time-budget SECONDS")
    return (f"the memory budget ({budget.memory_mb:,} MiB resident)",
            "raise it with --memory-budget MB")


def time_arg(text: str) -> float:
    """argparse type of --time-budget: seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number of seconds") from None
    if not 0 < value <= MAX_TIME_S:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0 and at most "
                                         f"{MAX_TIME_S:g} seconds (a week)")
    return value


def memory_arg(text: str) -> int:
    """argparse type of --memory-budget: MiB, a positive whole number."""
    from epochsim.common import positive_int

    value = positive_int(text)
    if value > MAX_MEMORY_MB:
        raise argparse.ArgumentTypeError(f"{value}: at most {MAX_MEMORY_MB} MiB")
    return value


def add_budget_args(parser) -> None:
    parser.add_argument("--time-budget", type=time_arg, metavar="SECONDS",
                        help=f"stop a run after this much wall-clock time (default "
                             f"{DEFAULT_TIME_S:g}); its verdict then says NOT met")
    parser.add_argument("--memory-budget", type=memory_arg, metavar="MB",
                        help=f"stop a run once the process holds this many MiB (default "
                             f"{DEFAULT_MEMORY_MB}); its verdict then says NOT met")


def apply_args(args) -> None:
    """Make the budget flags of `args` the budget of every run from now on, in this process
    and in the worker processes it starts."""
    if getattr(args, "time_budget", None) is not None:
        os.environ[ENV_TIME] = repr(args.time_budget)
    if getattr(args, "memory_budget", None) is not None:
        os.environ[ENV_MEMORY] = str(args.memory_budget)
