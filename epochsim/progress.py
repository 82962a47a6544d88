"""Live progress for long loops, and phase lines, on stderr.

Contract: `RunProgress(label, total)` is a context manager over a loop of `total` units
(runs): `advance(n, note=...)` records `n` more done (and, optionally, a short note such as
"violations in 3 runs" shown beside the bar). On a terminal it draws a rich progress bar with
the count, the rate, the elapsed time and the ETA, redrawn in place; otherwise (a pipe, a CI
log) it prints one plain line every `every_s` seconds and a last one at the end, so a log
stays short and still shows the loop is alive. `done` may start above zero (a resumed sweep):
the rate and ETA count only this invocation's units. `phase(text)` prints one line naming
what a command is doing now (starting Spark, planning, writing, plotting), so no phase that
can take seconds is silent. Nothing here goes to stdout: a command's results stay parseable.
"""

from __future__ import annotations

import sys
import time


def duration_text(seconds: float) -> str:
    """`seconds` as 42s, 3m07s or 1h05m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def phase(text: str, stream=None) -> None:
    """One line on stderr saying what the command is doing now."""
    print(f"epochsim: {text}", file=stream if stream is not None else sys.stderr, flush=True)


def is_terminal(stream) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


class RunProgress:
    def __init__(self, label: str, total: int, done: int = 0, stream=None,
                 every_s: float = 10.0, unit: str = "runs"):
        self.label, self.total, self.done, self.unit = label, total, done, unit
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.note = ""
        self.new = 0
        self.started = time.monotonic()
        self._last_line = self.started
        self._bar = None

    def __enter__(self) -> RunProgress:
        if is_terminal(self.stream):
            self._start_bar()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
            console=Console(file=self.stream), transient=False)
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.total, completed=self.done,
                                        rate="", note="")

    def rate(self) -> float:
        """Units per second done by this invocation."""
        elapsed = time.monotonic() - self.started
        return self.new / elapsed if elapsed > 0 else 0.0

    def eta_text(self) -> str:
        rate = self.rate()
        return duration_text((self.total - self.done) / rate) if rate > 0 else "?"

    def line(self) -> str:
        """The plain progress line (what a non-terminal gets)."""
        pct = 100.0 * self.done / self.total if self.total else 100.0
        note = f"  {self.note}" if self.note else ""
        return (f"{self.label}: {self.done}/{self.total} {self.unit} ({pct:.0f}%)  "
                f"{self.rate():.1f} {self.unit}/s  ETA {self.eta_text()}{note}")

    def advance(self, n: int = 1, note: str | None = None) -> None:
        self.done += n
        self.new += n
        if note is not None:
            self.note = note
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, note=self.note,
                             rate=f"{self.rate():.1f} {self.unit}/s")
            return
        now = time.monotonic()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            print(self.line(), file=self.stream, flush=True)

    def log(self, text: str) -> None:
        """A line about one finished unit, printed above the bar (or as a plain line)."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the bar (or print the last line) and say how long this invocation took."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        else:
            print(self.line(), file=self.stream, flush=True)
        print(f"{self.label}: {self.new} {self.unit} in "
              f"{duration_text(time.monotonic() - self.started)}", file=self.stream, flush=True)
