"""Named random substreams derived from the run seed with a stable hash.

Contract: `Streams(seed).get(name)` returns the same `random.Random` sequence for the same
(seed, name) on any machine and under any PYTHONHASHSEED, and each name is independent of the
others, so an extra draw in one component never shifts another's draws. Seeds come from
`blake2b(f"{seed}/{name}")`, never from `hash()`.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, name: str) -> int:
    """A 64-bit integer seed for substream `name` of run `seed`."""
    digest = hashlib.blake2b(f"{seed}/{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Streams:
    """Lazily created, cached substreams of one run."""

    def __init__(self, seed: int):
        self.seed = int(seed)
        self._streams: dict[str, random.Random] = {}

    def get(self, name: str) -> random.Random:
        stream = self._streams.get(name)
        if stream is None:
            stream = random.Random(derive_seed(self.seed, name))
            self._streams[name] = stream
        return stream
