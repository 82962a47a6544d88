"""What a probe's check reads: a step's `Seen` and an `Observable` (how one check reads it).

Contract: `Seen` holds what one step showed (the node, its answer to the step's sender, what it
sent, the trace events it recorded); an `Observable` says whether a check takes an argument
(`name:arg`), how it reads its value from a `Seen`, what it means, and whether the value is an
error code (shown by its name). `NONE` is what an absent thing reads as. `COMMON` holds the
checks every role has: what the node sent and recorded during the step, and whether it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

NONE = "none"


@dataclass
class Seen:
    """What one step showed: the node, its answer to the step's sender (None: no answer), the
    messages it sent (dst, kind, body), the trace events it recorded, the partitions a broker
    (re)added to its fetchers, and when each step so far began, this one last (a Kafka test's mock clock stands still; the model's moves by
    latencies, so a time is named by the step it fell in)."""

    node: Any
    answer: Any = None
    sent: list = field(default_factory=list)
    events: list = field(default_factory=list)
    step_starts: tuple = ()
    fetcher_added: list = field(default_factory=list)  # (tp, leader) as the step (re)added them


@dataclass(frozen=True)
class Observable:
    takes_arg: bool
    read: Callable[[Seen, str], Any]
    doc: str
    error: bool = False  # the value is an error code, shown by its name


def _sent(seen: Seen, arg: str) -> list:
    return [kind for _dst, kind, _body in seen.sent]


def _sent_to(seen: Seen, arg: str) -> list:
    return [f"{kind}>{dst}" for dst, kind, _body in seen.sent]


def _sent_count(seen: Seen, arg: str) -> int:
    kind, _, dst = arg.partition(">")
    return sum(k == kind and dst in ("", d) for d, k, _b in seen.sent)


def _emitted(seen: Seen, arg: str) -> list:
    return [ev["kind"] for ev in seen.events]


Obs = Observable
COMMON = {
    "sent": Obs(False, _sent, "the kinds of message the node sent during the step, in order"),
    "sent_to": Obs(False, _sent_to, "the same as `kind>destination`, e.g. \"Produce>b2\""),
    "sent_count": Obs(True, _sent_count,
                      "how many `Kind` messages the node sent during the step, whatever their "
                      "order among the others (arg Kind, e.g. AlterPartition, or Kind>node "
                      "for those to one node, e.g. LeaderAndIsr>b2)"),
    "emitted": Obs(False, _emitted, "the trace event kinds the node recorded during the step"),
    "alive": Obs(False, lambda s, a: bool(s.node.alive), "whether the node still runs (a halt stops it)"),
}
