"""Kernel: simpy in integer microseconds, with a bounded run.

Contract:
- time is an `int` number of microseconds (`now_us`); delays must be non-negative ints;
- `call_later(delay_us, fn, *args)` runs `fn(*args)` after `delay_us`; callbacks scheduled for the
  same instant run in the order they were scheduled (simpy breaks ties by insertion order);
- `run()` stops before `until_us` (events *at* `until_us` do not run, as with simpy) or after
  `max_events` callbacks, whichever comes first, and reports which bound stopped it.

Callbacks are plain functions, not simpy processes: a process per message costs ~4x more
(see DESIGN.md measurements) and nothing here needs to block.
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy
from simpy.core import NORMAL


class EventBudgetExceeded(Exception):
    """Raised inside the loop when the run reaches `max_events`; caught by `Kernel.run`."""


@dataclass(frozen=True)
class RunOutcome:
    """Why and where a bounded run stopped."""

    end_us: int
    events: int
    stopped_by: str  # "until" | "max_events" | "idle"


class Kernel:
    """The single scheduler of one simulation run."""

    def __init__(self, until_us: int, max_events: int = 50_000_000):
        if until_us < 0 or max_events <= 0:
            raise ValueError("until_us must be >= 0 and max_events > 0")
        self.env = simpy.Environment(initial_time=0)
        self.until_us = int(until_us)
        self.max_events = int(max_events)
        self.events = 0

    @property
    def now_us(self) -> int:
        return self.env._now  # noqa: SLF001 - int by construction, read on the hot path

    def call_later(self, delay_us: int, fn, *args) -> None:
        """Schedule `fn(*args)` to run `delay_us` microseconds from now."""
        if delay_us < 0:
            raise ValueError(f"negative delay {delay_us}")
        ev = simpy.Event(self.env)
        ev._ok = True  # noqa: SLF001 - a pre-triggered event, as simpy.Timeout does
        ev._value = None  # noqa: SLF001
        ev.callbacks.append(lambda _ev: self._dispatch(fn, args))
        self.env.schedule(ev, NORMAL, int(delay_us))

    def _dispatch(self, fn, args) -> None:
        self.events += 1
        if self.events > self.max_events:
            raise EventBudgetExceeded()
        fn(*args)

    def run(self) -> RunOutcome:
        """Run until `until_us` (exclusive), the event budget, or an empty queue."""
        try:
            self.env.run(until=self.until_us)
            stopped_by = "until"
        except EventBudgetExceeded:
            self.events = self.max_events
            stopped_by = "max_events"
        if stopped_by == "until" and self.env.peek() == float("inf") and self.now_us < self.until_us:
            stopped_by = "idle"
        return RunOutcome(end_us=int(self.now_us), events=self.events, stopped_by=stopped_by)
