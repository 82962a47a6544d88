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
from heapq import heappop, heappush

import simpy
from simpy.core import NORMAL, URGENT, StopSimulation


class EventBudgetExceeded(Exception):
    """Raised inside the loop when the run reaches `max_events`; caught by `Kernel.run`."""


class _Call:
    """What `call_later` queues: a pre-triggered simpy event (as `simpy.Timeout` is) whose one
    callback, shared by all calls of a kernel, runs `fn(*args)`. Cheaper to build than an
    `Event` with a closure appended to its callbacks; the queue entry is the same."""

    __slots__ = ("callbacks", "fn", "args")
    _ok = True
    _value = None


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
        self._callbacks = (self._dispatch,)

    @property
    def now_us(self) -> int:
        return self.env._now  # noqa: SLF001 - int by construction, read on the hot path

    def call_later(self, delay_us: int, fn, *args) -> None:
        """Schedule `fn(*args)` to run `delay_us` microseconds from now."""
        if delay_us < 0:
            raise ValueError(f"negative delay {delay_us}")
        ev = _Call()
        ev.callbacks = self._callbacks
        ev.fn = fn
        ev.args = args
        env = self.env
        # what env.schedule(ev, NORMAL, delay) does, without the extra call
        heappush(env._queue, (env._now + int(delay_us), NORMAL, next(env._eid), ev))  # noqa: SLF001

    def _dispatch(self, ev: _Call) -> None:
        self.events += 1
        if self.events > self.max_events:
            raise EventBudgetExceeded()
        ev.fn(*ev.args)

    def run(self) -> RunOutcome:
        """Run until `until_us` (exclusive), the event budget, or an empty queue."""
        try:
            self._run_until(self.until_us)
            stopped_by = "until"
        except EventBudgetExceeded:
            self.events = self.max_events
            stopped_by = "max_events"
        if stopped_by == "until" and getattr(self, "idle", False):
            stopped_by = "idle"
        return RunOutcome(end_us=int(self.now_us), events=self.events, stopped_by=stopped_by)

    def _run_until(self, at: int) -> None:
        """`env.run(until=at)` with the step of a `call_later` callback inlined.

        As in simpy, an URGENT stop event is queued at `at` and every queued entry is processed
        in heap order; entries that are not `_Call`s (processes, timeouts, the stop event) go
        through simpy's own `step()`, so they behave exactly as under `env.run`.
        """
        env = self.env
        if at <= env.now:
            raise ValueError(f"until ({at}) must be greater than the current simulation time")
        stop = simpy.Event(env)
        stop._ok = True  # noqa: SLF001 - as env.run(until=...) builds it
        stop._value = None  # noqa: SLF001
        env.schedule(stop, URGENT, at - env.now)
        stop.callbacks.append(StopSimulation.callback)
        queue = env._queue  # noqa: SLF001
        step = env.step
        max_events = self.max_events
        self.idle = False
        try:
            while True:
                if len(queue) == 1 and queue[0][3] is stop:
                    self.idle = True  # nothing left but the stop marker: the run went quiet
                    return
                if type(queue[0][3]) is _Call:
                    t_us, _, _, ev = heappop(queue)
                    env._now = t_us  # noqa: SLF001
                    self.events += 1
                    if self.events > max_events:
                        raise EventBudgetExceeded()
                    ev.fn(*ev.args)
                else:
                    step()
        except StopSimulation:
            return
