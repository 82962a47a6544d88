"""The choices an explore draw makes, as hypothesis strategies.

Contract: `Pick(draw)` wraps hypothesis' `draw` of one example; a fault action's explore draw
(`sim.kafka.faults`, `draw(pick, space, start_ms)`) makes every choice through it, so the
catalogue needs no hypothesis. Each method is one strategy, the same one whatever the caller:
the choices of a search, and so its cases, depend on these strategies and their order.
Shrinking moves each choice towards the first entry of its list, the smallest integer, or
None.
"""

from __future__ import annotations

from hypothesis import strategies as st

SLOT_MS = 100  # the grid of explore's times and durations
MAX_DURATION_SLOTS = 30


class Pick:
    """One example's choices (see the module contract)."""

    def __init__(self, draw):
        self.draw = draw

    def one(self, choices):
        """One of `choices` (a sequence), the first preferred."""
        return self.draw(st.sampled_from(choices))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def maybe_integer(self, lo: int, hi: int, scale: int = 1) -> int | None:
        """None, or an integer in [lo, hi] times `scale`."""
        ints = st.integers(lo, hi) if scale == 1 else st.integers(lo, hi).map(lambda k: k * scale)
        return self.draw(st.one_of(st.none(), ints))

    def permutation(self, items) -> list:
        return self.draw(st.permutations(items))

    def duration_ms(self, lo_slots: int = 1) -> int:
        """A duration on the slot grid, `lo_slots` to MAX_DURATION_SLOTS slots."""
        return self.draw(st.integers(lo_slots, MAX_DURATION_SLOTS).map(lambda k: k * SLOT_MS))
