"""The sweep's progress line on stderr: runs done of total, rate, ETA, violations so far.

Contract: `Progress(total, done, violating)` starts from the runs already on disk (a resumed
sweep); `add(runs, violating)` records a finished chunk and prints when due; `finish()` prints
the final line. On a terminal the line is rewritten in place (at most 4 times a second);
otherwise a full line is printed every `every_s` seconds, so a CI log stays short. The rate
counts only this invocation's runs, so an ETA after `--resume` is not inflated by old chunks.
"""

from __future__ import annotations

import sys
import time


def duration_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    def __init__(self, total: int, done: int = 0, violating: int = 0, stream=None,
                 every_s: float = 10.0):
        self.total, self.done, self.violating = total, done, violating
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every_s = 0.25 if self.tty else every_s
        self.started = time.monotonic()
        self.new_runs = 0
        self._last_print = 0.0

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.new_runs / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        rate = self.rate()
        left = self.total - self.done
        eta = duration_text(left / rate) if rate > 0 else "?"
        pct = 100.0 * self.done / self.total if self.total else 100.0
        return (f"sweep: {self.done}/{self.total} runs ({pct:.0f}%)  {rate:.1f} runs/s  "
                f"ETA {eta}  violations in {self.violating} runs")

    def add(self, runs: int, violating: int) -> None:
        self.done += runs
        self.new_runs += runs
        self.violating += violating
        now = time.monotonic()
        if now - self._last_print >= self.every_s:
            self._last_print = now
            self._print()

    def _print(self, final: bool = False) -> None:
        if self.tty:
            end = "\n" if final else ""
            print("\r" + self.line().ljust(100), end=end, file=self.stream, flush=True)
        else:
            print(self.line(), file=self.stream, flush=True)

    def finish(self) -> None:
        elapsed = time.monotonic() - self.started
        self._print(final=True)
        print(f"sweep: {self.new_runs} runs in {duration_text(elapsed)} this time",
              file=self.stream, flush=True)
