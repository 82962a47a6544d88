"""Many timeouts behind one kernel timer, with cheap cancellation.

Contract: `Deadlines(actor, timer_name)` keeps (key, at_us) deadlines for one actor and arms at
most one pending actor timer for the earliest of them (plus at most one stale one when an
earlier deadline arrives). `cancel(key)` is O(1); cancelled entries are skipped lazily. When the
actor's timer `timer_name` fires, `expired()` returns the keys whose deadline passed, in
deadline order (ties by insertion). `reset()` forgets everything (crash). Most request timeouts
never fire; one timer per request would cost a kernel event each.
"""

from __future__ import annotations

import heapq


class Deadlines:
    __slots__ = ("actor", "name", "heap", "live", "armed_us", "counter")

    def __init__(self, actor, name: str):
        self.actor = actor
        self.name = name
        self.reset()

    def reset(self) -> None:
        self.heap: list = []
        self.live: dict = {}
        self.armed_us = None
        self.counter = 0

    def add(self, key, at_us: int) -> None:
        self.live[key] = at_us
        heapq.heappush(self.heap, (at_us, self.counter, key))
        self.counter += 1
        if self.armed_us is None or at_us < self.armed_us:
            self._arm(at_us)

    def cancel(self, key) -> None:
        self.live.pop(key, None)

    def expired(self) -> list:
        now = self.actor.now_us
        heap, live, out = self.heap, self.live, []
        while heap and heap[0][0] <= now:
            at_us, _, key = heapq.heappop(heap)
            if live.get(key) == at_us:
                del live[key]
                out.append(key)
        while heap and live.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # drop cancelled entries so the next timer is a live one
        self.armed_us = None
        if heap:
            self._arm(heap[0][0])
        return out

    def _arm(self, at_us: int) -> None:
        self.armed_us = at_us
        self.actor.set_timer(max(0, at_us - self.actor.now_us), self.name)
