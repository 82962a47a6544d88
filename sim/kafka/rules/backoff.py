"""Kafka's client backoff (`ExponentialBackoff`, KIP-580, 3.7).

Contract: a pure function of plain values; the random factor is given, never drawn here.
"""

from __future__ import annotations

JITTER = 0.2  # CommonClientConfigs.RETRY_BACKOFF_JITTER


def exponential_backoff_us(base_ms: int, max_ms: int, n: int, factor: float) -> int:
    """`ExponentialBackoff.backoff(n)` with its random factor in [1 - JITTER, 1 + JITTER]
    given: base_ms * 2^n, times the factor, at most max_ms."""
    return int(min(min(base_ms * 2 ** n, max_ms) * factor, max_ms) * 1000)
