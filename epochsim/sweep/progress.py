"""The sweep's progress on stderr: runs done of total, rate, ETA, violations so far.

Contract: `Progress(total, done, violating)` starts from the runs already on disk (a resumed
sweep); `add(runs, violating)` records a finished chunk; `finish()` ends the display and says
how long this invocation's runs took. A rich bar on a terminal, a plain line every `every_s`
seconds otherwise (`epochsim.progress.RunProgress`). The rate counts only this invocation's
runs, so an ETA after `--resume` is not inflated by old chunks.
"""

from __future__ import annotations

from epochsim.progress import RunProgress


class Progress(RunProgress):
    def __init__(self, total: int, done: int = 0, violating: int = 0, stream=None,
                 every_s: float = 10.0):
        super().__init__("sweep", total, done, stream, every_s)
        self.violating = violating
        self.note = f"violations in {violating} runs"
        self.__enter__()

    def add(self, runs: int, violating: int) -> None:
        self.violating += violating
        self.advance(runs, note=f"violations in {self.violating} runs")

    def finish(self) -> None:
        self.close()
