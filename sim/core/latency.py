"""Latency distributions for network links, sampled in integer microseconds.

Contract: `LatencyDist.parse(spec)` accepts a dict such as `{dist="constant", ms=1}`,
`{dist="uniform", min_ms=1, max_ms=5}`, `{dist="exponential", mean_ms=2}` or
`{dist="lognormal", median_ms=1, sigma=0.5}` and raises ValueError naming the bad key;
`sample(rng)` returns a non-negative int number of microseconds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

MAX_MS = 86_400_000  # a day: a link slower than that is a cut, not a latency
MAX_SIGMA = 5.0  # lognormal spread; exp(5 * 8 sigma) is already 10**17 times the median

_KEYS = {
    "constant": ("ms",),
    "uniform": ("min_ms", "max_ms"),
    "exponential": ("mean_ms",),
    "lognormal": ("median_ms", "sigma"),
}


@dataclass(frozen=True)
class LatencyDist:
    dist: str
    a: float  # first parameter (ms, min_ms, mean_ms or median_ms)
    b: float = 0.0  # second parameter (max_ms or sigma)

    @classmethod
    def parse(cls, spec: dict) -> LatencyDist:
        dist = spec.get("dist", "constant")
        if dist not in _KEYS:
            raise ValueError(f"dist: unknown distribution {dist!r}; use one of {sorted(_KEYS)}")
        keys = _KEYS[dist]
        extra = sorted(set(spec) - set(keys) - {"dist"})
        if extra:
            raise ValueError(f"{extra[0]}: not a parameter of {dist}; expected {list(keys)}")
        values = []
        for key in keys:
            if key not in spec:
                raise ValueError(f"{key}: missing for dist={dist}")
            v = spec[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise ValueError(f"{key}: must be a non-negative number, got {v!r}")
            limit = MAX_SIGMA if key == "sigma" else MAX_MS
            if v > limit:
                raise ValueError(f"{key}: above the maximum {limit}, got {v!r}")
            values.append(float(v))
        if dist == "uniform" and values[0] > values[1]:
            raise ValueError("min_ms: must not exceed max_ms")
        return cls(dist, *values)

    def to_json(self) -> dict:
        keys = _KEYS[self.dist]
        return {"dist": self.dist, **dict(zip(keys, (self.a, self.b)[: len(keys)]))}

    def sample(self, rng: random.Random) -> int:
        if self.dist == "constant":
            ms = self.a
        elif self.dist == "uniform":
            ms = rng.uniform(self.a, self.b)
        elif self.dist == "exponential":
            ms = rng.expovariate(1.0 / self.a) if self.a > 0 else 0.0
        else:
            ms = self.a * math.exp(rng.gauss(0.0, self.b)) if self.a > 0 else 0.0
        return max(0, int(round(ms * 1000)))

    def mean_us(self) -> int:
        """Expected latency, for sizing timeouts."""
        if self.dist == "uniform":
            ms = (self.a + self.b) / 2
        elif self.dist == "lognormal":
            ms = self.a * math.exp(self.b * self.b / 2)
        else:
            ms = self.a
        return int(ms * 1000)
