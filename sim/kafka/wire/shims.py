"""The clock and randomness a real client library reads, bound to the run.

Contract: `bind_library(prefix)` replaces the `time` and `random` modules that the library's
modules (those named `prefix` or `prefix.*`) imported with `CLOCK` and `RANDOM`. While a
simulated client runs (`running(kernel, rng)`), `CLOCK` reads the simulation's clock
(`monotonic`, `perf_counter`: seconds since the run started; `time`: a fixed epoch plus that)
and `RANDOM` draws from the client's own seeded stream, making choices independent of the
order a set gave them: `choice` and `shuffle` sort their input first (aiokafka picks a broker
with `random.choice` from a list built from a set of records that hold `rack=None`, whose hash
on Python 3.11 is its address). Outside a simulated client they are the real modules, so the
library still works elsewhere in the process. Binding is idempotent.
"""

from __future__ import annotations

import random as _random
import sys
import time as _time
from contextlib import contextmanager

#: what `time.time()` reads at simulated time 0: 2023-11-14T22:13:20Z
EPOCH_S = 1_700_000_000

_active: list = []  # (kernel, rng) of the simulated client running now, innermost last


class _Clock:
    """`time` as the library sees it."""

    def monotonic(self) -> float:
        if not _active:
            return _time.monotonic()
        return _active[-1][0].now_us / 1_000_000

    perf_counter = monotonic

    def monotonic_ns(self) -> int:
        if not _active:
            return _time.monotonic_ns()
        return _active[-1][0].now_us * 1000

    def time(self) -> float:
        if not _active:
            return _time.time()  # noqa: TID251 - the real clock outside a simulated run
        return EPOCH_S + _active[-1][0].now_us / 1_000_000

    def time_ns(self) -> int:
        if not _active:
            return _time.time_ns()  # noqa: TID251 - as above
        return EPOCH_S * 1_000_000_000 + _active[-1][0].now_us * 1000

    def sleep(self, seconds) -> None:
        if _active:
            raise RuntimeError("a simulated client may not block the process")
        _time.sleep(seconds)

    def __getattr__(self, name):
        return getattr(_time, name)


def _order_key(x):
    return (0, x, "") if isinstance(x, int | float) else (1, 0, repr(x))


class _Random:
    """`random` as the library sees it."""

    def _rng(self):
        return _active[-1][1] if _active else _random

    def choice(self, seq):
        items = sorted(seq, key=_order_key)
        return items[self._rng().randrange(len(items))]

    def shuffle(self, items) -> None:
        items.sort(key=_order_key)
        self._rng().shuffle(items)

    def __getattr__(self, name):
        return getattr(self._rng(), name)


CLOCK = _Clock()
RANDOM = _Random()


def bind_library(prefix: str) -> list[str]:
    """Bind the loaded modules of `prefix`; returns the names of those it changed."""
    changed = []
    for name in sorted(sys.modules):
        if name != prefix and not name.startswith(prefix + "."):
            continue
        module = sys.modules[name]
        if getattr(module, "time", None) is _time:
            module.time = CLOCK
            changed.append(name)
        if getattr(module, "random", None) is _random:
            module.random = RANDOM
            changed.append(name)
    return changed


@contextmanager
def running(kernel, rng):
    _active.append((kernel, rng))
    try:
        yield
    finally:
        _active.pop()


class OrderedFrozenSet(frozenset):
    """A frozenset that iterates in sorted order: a library's loop over it no longer depends
    on the string hash (`PYTHONHASHSEED`) of the members."""

    def __iter__(self):
        return iter(sorted(frozenset.__iter__(self)))


def order_assignment(assignment_class) -> None:
    """Make a consumer's assignment iterate its partitions in order. aiokafka's
    `Assignment` keeps them in a frozenset of (topic, partition) tuples, whose order follows
    the topic's string hash, and the fetcher walks it to decide which node to ask first."""
    if getattr(assignment_class, "_epochsim_ordered", False):
        return
    original = assignment_class.__init__

    def __init__(self, *args, **kw):
        original(self, *args, **kw)
        self._topic_partitions = OrderedFrozenSet(self._topic_partitions)
        self._tp_state = {tp: self._tp_state[tp] for tp in sorted(self._tp_state)}

    assignment_class.__init__ = __init__
    assignment_class._epochsim_ordered = True
