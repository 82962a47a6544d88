"""A kernel paced by the wall clock: simulated time runs no faster than wall time allows.

Contract: `PacedKernel(until_us, max_events, slowdown, poll)` is a `Kernel` whose run lets
simulated time reach `t` only once `t * slowdown` wall microseconds have passed since the run
began. Between events it waits in `poll(timeout_s)` (the listeners' select), which returns a
callable to run once the clock has been brought up to the wall clock's simulated time (never
past the next queued event, so nothing queued is skipped), or None. What that callable starts
(a frame sent on the simulated network) is scheduled from there as any message is. Ctrl-C
ends the run as a watch does (`stopped_by` "interrupted"): what ran so far stands.
A paced run is not replayable: when a frame arrives depends on the wall clock.
"""

from __future__ import annotations

import time
from heapq import heappop

from sim.core.kernel import Kernel, WatchStop

# the longest wait between two looks at the sockets, in wall seconds
MAX_WAIT_S = 0.01


class PacedKernel(Kernel):
    def __init__(self, until_us: int, max_events: int, slowdown: float, poll):
        super().__init__(until_us, max_events)
        self.slowdown = float(slowdown)
        self.poll = poll
        self.started = None
        # set by a SIGINT handler (`serve`): a Ctrl-C that came before the loop, while the
        # listeners were starting, stops the run at its first look as one inside it does
        self.interrupted = False

    def sim_now_us(self) -> int:
        """The simulated time the wall clock allows now."""
        return int((time.monotonic() - self.started) * 1_000_000 / self.slowdown)

    def _run_until(self, at: int) -> None:
        env = self.env
        queue = env._queue
        self.started = time.monotonic()
        try:
            while True:
                if self.interrupted:
                    raise KeyboardInterrupt
                allowed = min(self.sim_now_us(), at - 1)
                while queue and queue[0][0] <= allowed:
                    self._step(queue)
                if allowed >= at - 1 and not (queue and queue[0][0] < at):
                    env._now = at
                    return
                upto = queue[0][0] if queue else at
                wait = (min(upto, at) - self.sim_now_us()) * self.slowdown / 1_000_000
                then = self.poll(max(0.0, min(wait, MAX_WAIT_S)))
                if then is not None:
                    limit = min(self.sim_now_us(), at - 1, queue[0][0] if queue else at)
                    env._now = max(env._now, limit)
                    then()
        except KeyboardInterrupt:
            raise WatchStop("interrupted") from None

    def _step(self, queue) -> None:
        entry = queue[0]
        if len(entry) == 5:  # a kernel call (`Kernel.call_later`)
            heappop(queue)
            self.env._now = entry[0]
            self.events += 1
            entry[3](*entry[4])
        else:  # a simpy event
            self.env.step()
