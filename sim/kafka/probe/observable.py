"""What a probe's check reads: a step's `Seen` and an `Observable` (how one check reads it).

Contract: `Seen` holds what one step showed (the node, its answer to the step's sender, what it
sent, the trace events it recorded); an `Observable` says whether a check takes an argument
(`name:arg`), how it reads its value from a `Seen`, what it means, and whether the value is an
error code (shown by its name). `NONE` is what an absent thing reads as.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

NONE = "none"


@dataclass
class Seen:
    """What one step showed: the node, its answer to the step's sender (None: no answer), the
    messages it sent (dst, kind, body), the trace events it recorded and when each step so far
    began, this one last (a Kafka test's mock clock stands still; the model's moves by
    latencies, so a time is named by the step it fell in)."""

    node: Any
    answer: Any = None
    sent: list = field(default_factory=list)
    events: list = field(default_factory=list)
    step_starts: tuple = ()


@dataclass(frozen=True)
class Observable:
    takes_arg: bool
    read: Callable[[Seen, str], Any]
    doc: str
    error: bool = False  # the value is an error code, shown by its name
