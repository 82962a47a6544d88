"""An asyncio event loop in simulated time, driven by the kernel.

Contract: `SimLoop(kernel)` is an `asyncio.BaseEventLoop` whose `time()` is the kernel's clock
(integer µs, shown in seconds) and which never blocks or selects: `pump()` runs what is ready
(callbacks, timers now due) until nothing is, with the loop set as the running one, and then
schedules itself on the kernel for the loop's next timer (rounded up to a whole µs, so a timer
re-armed with a remainder below the clock's resolution still moves time on). Whoever hands the
loop new work from outside (a delivered message, a closed connection) calls `pump()` after it;
`scope`, if set, gives a context manager entered around each pump (to bind what the code on the
loop reads, such as a library's clock).
`create_connection` is given by a subclass or an `connector` callable: `connector(loop,
protocol_factory, host, port)` returns `(transport, protocol)` or raises `OSError`. Threads,
executors and name resolution are refused: nothing in a simulated run may leave it.
"""

from __future__ import annotations

import asyncio
import heapq
import threading
from asyncio import events
from contextlib import nullcontext

#: rounds of ready callbacks one instant may take: a client that keeps rescheduling itself at
#: the same instant would otherwise hold simulated time still forever
MAX_ROUNDS = 100_000


class _NoSelector:
    """What `BaseEventLoop._run_once` selects on: never any I/O, never a wait."""

    def select(self, timeout=None):
        return []

    def close(self):
        pass


class SimLoop(asyncio.BaseEventLoop):
    def __init__(self, kernel, connector=None):
        super().__init__()
        self.kernel = kernel
        self.connector = connector
        self.scope = None  # () -> a context manager entered around every pump
        self.halted = False
        self._selector = _NoSelector()
        # Timers fire on whole microseconds (`call_at` rounds, up to the next microsecond for
        # a time in the future by less than one), so a timer is due exactly when the clock
        # reaches it; a client that re-arms a timer for a remainder below a microsecond waits
        # for the next one instead of firing again and again at the same instant
        self._clock_resolution = 1e-9
        self._wake_at_us: int | None = None  # the kernel call already queued for the next timer
        self.set_exception_handler(_record_exception)
        self.exceptions: list[str] = []

    # -- time ----------------------------------------------------------------------------
    def time(self) -> float:
        return self.kernel.now_us / 1_000_000

    def call_at(self, when, callback, *args, context=None, _later=False):
        at_us = _whole_us(when)
        now_us = self.kernel.now_us
        if at_us <= now_us and (_later or when > now_us / 1_000_000):
            at_us = now_us + 1  # in the future, by less than a microsecond: the next one
        return super().call_at(at_us / 1_000_000, callback, *args, context=context)

    def call_later(self, delay, callback, *args, context=None):
        # a positive delay too small to move the float clock (a client's timer remainder,
        # `deadline - time.monotonic()`, can be 1e-17 s) is still a later instant
        return self.call_at(self.time() + delay, callback, *args, context=context,
                            _later=delay > 0)

    # -- driving -------------------------------------------------------------------------
    def halt(self) -> None:
        """The process running the loop died: nothing on it runs again (wake-ups already
        queued on the kernel find it halted)."""
        self.halted = True

    def pump(self) -> None:
        """Run everything ready now, then arrange to run again at the next timer."""
        if self.halted:
            return
        previous = events._get_running_loop()
        events._set_running_loop(self)
        self._thread_id = threading.get_ident()  # `is_running()` is true while it pumps
        scope = self.scope() if self.scope is not None else nullcontext()
        try:
            scope.__enter__()
            for _ in range(MAX_ROUNDS):
                if not (self._ready or self._due()):
                    break
                self._run_once()
            else:
                raise RuntimeError(f"the loop did not settle in {MAX_ROUNDS} rounds at one instant")
        finally:
            scope.__exit__(None, None, None)
            self._thread_id = None
            events._set_running_loop(previous)
        self._arm()

    def _due(self) -> bool:
        timers = self._scheduled
        while timers and timers[0]._cancelled:  # as `_run_once` drops them
            heapq.heappop(timers)._scheduled = False
            self._timer_cancelled_count -= 1
        # `_run_once` moves a timer to ready when it is due before now + the resolution
        return bool(timers) and timers[0]._when < self.time() + self._clock_resolution

    def _arm(self) -> None:
        timers = self._scheduled
        if not timers:
            return
        at_us = max(self.kernel.now_us + 1, _whole_us(timers[0]._when))
        if self._wake_at_us is not None and self._wake_at_us <= at_us:
            return  # an earlier (or the same) wake-up is queued; it re-arms
        self._wake_at_us = at_us
        self.kernel.call_later(at_us - self.kernel.now_us, self._wake, at_us)

    def _wake(self, at_us: int) -> None:
        if self._wake_at_us == at_us:
            self._wake_at_us = None
        self.pump()

    # -- what a simulated loop does not do -------------------------------------------------
    def _process_events(self, event_list) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    async def create_connection(self, protocol_factory, host=None, port=None, **kw):
        if self.connector is None:
            raise OSError("no simulated network attached")
        return self.connector(self, protocol_factory, host, port)

    def run_in_executor(self, executor, func, *args):
        raise RuntimeError("a simulated run uses no threads")

    async def getaddrinfo(self, *args, **kw):
        raise OSError("a simulated run resolves no names")


def _whole_us(when_s: float) -> int:
    """`when_s` in whole microseconds: rounded when float error put it a hair off one
    (0.8 + 0.4 is 1.2000000000000002), else rounded up."""
    us = when_s * 1_000_000
    nearest = round(us)
    if abs(us - nearest) < 1e-3:
        return nearest
    whole = int(us)
    return whole if whole >= us else whole + 1


def _record_exception(loop, context) -> None:
    """Unhandled errors in callbacks are kept for the run to report, not printed."""
    exc = context.get("exception")
    loop.exceptions.append(f"{context.get('message', '')}: {exc!r}" if exc else
                           str(context.get("message", "")))
