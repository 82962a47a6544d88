"""Kernel: simpy in integer microseconds, with a bounded run.

Contract:
- time is an `int` number of microseconds (`now_us`); delays must be non-negative ints;
- `call_later(delay_us, fn, *args)` runs `fn(*args)` after `delay_us`; callbacks scheduled for the
  same instant run in the order they were scheduled (simpy breaks ties by insertion order);
- `run()` stops before `until_us` (events *at* `until_us` do not run, as with simpy) or after
  `max_events` callbacks, whichever comes first, and reports which bound stopped it;
- `watch`, if set, is called before the first callback and then every `WATCH_EVERY`, with
  nothing, and returns None to go on or a reason (a `stopped_by` word such as "time_budget") to stop before the next callback.
  It only observes: a run it never stops is the same run, callback for callback.

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


class WatchStop(Exception):
    """Raised inside the loop when `Kernel.watch` names a reason to stop; caught by `run`."""


#: callbacks between two calls of `Kernel.watch`: often enough to stop within seconds even
#: when each callback is slow (a Fetch over 20,000 partitions took ~50 ms), rare enough to
#: cost nothing measurable (a watch that reads a clock is ~0.3 us, 5 ns a callback)
WATCH_EVERY = 64


# A `call_later` queues `(time, NORMAL, eid, fn, args)` where simpy queues `(time, priority,
# eid, event)`: entries compare by their first three members only (eids are unique), so calls
# and simpy events interleave exactly as simpy orders them, and no event object is built per
# call. Only `Kernel._run_until` pops entries; it hands the 4-member ones (processes, timeouts,
# the stop event) to simpy's own `step()`.


@dataclass(frozen=True)
class RunOutcome:
    """Why and where a bounded run stopped."""

    end_us: int
    events: int
    stopped_by: str  # "until" | "max_events" | "idle" | a reason `Kernel.watch` gave


class Kernel:
    """The single scheduler of one simulation run."""

    def __init__(self, until_us: int, max_events: int = 50_000_000):
        if until_us < 0 or max_events <= 0:
            raise ValueError("until_us must be >= 0 and max_events > 0")
        self.env = simpy.Environment(initial_time=0)
        self.until_us = int(until_us)
        self.max_events = int(max_events)
        self.events = 0
        self.watch = None  # () -> None or a reason to stop; see the module contract

    @property
    def now_us(self) -> int:
        return self.env._now  # int by construction, read on the hot path

    def call_later(self, delay_us: int, fn, *args) -> None:
        """Schedule `fn(*args)` to run `delay_us` microseconds from now."""
        if delay_us < 0:
            raise ValueError(f"negative delay {delay_us}")
        env = self.env
        # what env.schedule(ev, NORMAL, delay) does, with a call entry instead of an event
        heappush(env._queue, (env._now + int(delay_us), NORMAL, next(env._eid), fn, args))

    def run(self) -> RunOutcome:
        """Run until `until_us` (exclusive), the event budget, or an empty queue."""
        try:
            self._run_until(self.until_us)
            stopped_by = "until"
        except EventBudgetExceeded:
            self.events = self.max_events
            stopped_by = "max_events"
        except WatchStop as stop:
            self.events = max(0, self.events - 1)  # the callback that reached the check did not run
            stopped_by = str(stop)
        if stopped_by == "until" and getattr(self, "idle", False):
            stopped_by = "idle"
        return RunOutcome(end_us=int(self.now_us), events=self.events, stopped_by=stopped_by)

    def _run_until(self, at: int) -> None:
        """`env.run(until=at)` with the calls (5-member entries, see above) run inline.

        As in simpy, an URGENT stop event is queued at `at` and every queued entry is processed
        in heap order; entries that are simpy events (processes, timeouts, the stop event) go
        through simpy's own `step()`, so they behave exactly as under `env.run`.
        """
        env = self.env
        if at <= env.now:
            raise ValueError(f"until ({at}) must be greater than the current simulation time")
        stop = simpy.Event(env)
        stop._ok = True  # as env.run(until=...) builds it
        stop._value = None
        env.schedule(stop, URGENT, at - env.now)
        stop.callbacks.append(StopSimulation.callback)
        queue = env._queue
        step = env.step
        events = self.events  # a local counter on the hot path, stored back however we leave
        # one comparison per callback serves both bounds: `limit` is the next watch point or
        # max_events, whichever is first (`_checkpoint` says which, and moves it on)
        limit = self._next_limit(events - WATCH_EVERY + 1)  # the first watch at the first call
        self.idle = False
        try:
            while True:
                entry = queue[0]
                if len(entry) == 5:
                    heappop(queue)
                    env._now = entry[0]
                    events += 1
                    if events > limit:
                        limit = self._checkpoint(events)
                    entry[3](*entry[4])
                elif entry[3] is stop and len(queue) == 1:
                    self.idle = True  # nothing left but the stop marker: the run went quiet
                    return
                else:
                    step()
        except StopSimulation:
            return
        finally:
            self.events = events

    def _next_limit(self, events: int) -> int:
        if self.watch is None:
            return self.max_events
        return min(self.max_events, events + WATCH_EVERY)

    def _checkpoint(self, events: int) -> int:
        """At callback number `events` (not yet run): raise if a bound is reached, else return
        the next limit."""
        if events > self.max_events:
            raise EventBudgetExceeded()
        reason = self.watch() if self.watch is not None else None
        if reason:
            raise WatchStop(reason)
        return self._next_limit(events - 1)
