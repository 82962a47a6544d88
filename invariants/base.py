"""Invariant base class and the violation record.

Contract: an invariant subclass lists `handlers` (event kind -> method name); `step` methods
receive event dicts in trace order; `finish(ctx)` runs once at the end. `violate` records a
`Violation` with the time, a one-line message and the `seq`s of the witnessing events.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Violation:
    invariant: str
    t_us: int
    message: str
    seqs: tuple

    def to_json(self) -> dict:
        out = asdict(self)
        out["seqs"] = list(self.seqs)
        return out


class Invariant:
    name = ""
    rule = "safety"  # safety | liveness | sanity
    description = ""
    handlers: dict[str, str] = {}

    def __init__(self, ctx):
        self.ctx = ctx
        self.violations: list[Violation] = []

    def violate(self, t_us: int, message: str, *seqs: int) -> None:
        self.violations.append(Violation(self.name, int(t_us), message,
                                         tuple(s for s in seqs if s is not None)))

    def finish(self) -> None:
        """End-of-trace checks (liveness rules); safety rules usually need none."""
