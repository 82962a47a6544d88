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
    messages it sent (dst, kind, body) and the trace events it recorded."""

    node: Any
    answer: Any = None
    sent: list = field(default_factory=list)
    events: list = field(default_factory=list)


@dataclass(frozen=True)
class Observable:
    takes_arg: bool
    read: Callable[[Seen, str], Any]
    doc: str
    error: bool = False  # the value is an error code, shown by its name
