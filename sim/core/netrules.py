"""Network rules: what acts on the messages of one kind while it is active.

Contract:
- a `Rule` matches messages by kind and/or source and destination, from when it is added until
  `end_us` (exclusive) and for at most `count` messages: `delay` adds `delay_us`, `drop`
  discards, `reorder` adds a random delay in [0, delay_us] and lifts FIFO, `duplicate`
  delivers twice, `hold` keeps them until a message of kind `release_kind`, sent later to the
  same destination, has been delivered ("deliver this one after that one");
- `rule_effects` is what the active rules do to one message, in the order they were added:
  the first `drop` or `hold` that matches takes it, and the rules after it are not consulted.
The network (`sim.core.network`) acts on the answer: it drops, holds, delays or copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from sim.core.links import Message

RULE_ACTIONS = ("delay", "drop", "reorder", "duplicate", "hold")


@dataclass
class Rule:
    """A per-kind network rule, active in [start_us, end_us) for up to `count` messages."""

    rid: int
    action: str  # delay | drop | reorder | duplicate | hold
    kind: str | None = None
    src: str | None = None
    dst: str | None = None
    delay_us: int = 0
    count: int | None = None
    end_us: int | None = None
    release_kind: str | None = None
    held: list = field(default_factory=list)

    def matches(self, msg: Message, now_us: int) -> bool:
        if self.end_us is not None and now_us >= self.end_us:
            return False
        if self.count is not None and self.count <= 0:
            return False
        return ((self.kind is None or self.kind == msg.kind)
                and (self.src is None or self.src == msg.src)
                and (self.dst is None or self.dst == msg.dst))

    def in_force(self, now_us: int) -> bool:
        """Does this rule still act on messages sent at `now_us` (not lapsed, not used up)?"""
        return (self.end_us is None or now_us < self.end_us) and (self.count is None or self.count > 0)

    def armed(self, now_us: int) -> bool:
        """Can this rule still keep a message from ever arriving (a `drop` or `hold` that is
        active, or a `hold` still keeping messages)?"""
        return bool(self.held) or (
            self.action in ("drop", "hold") and (self.end_us is None or now_us < self.end_us)
            and (self.count is None or self.count > 0))

    def to_json(self) -> dict:
        out = {"rid": self.rid, "action": self.action}
        for key in ("kind", "src", "dst", "count", "end_us", "release_kind"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.delay_us:
            out["delay_us"] = self.delay_us
        return out




class Effects(NamedTuple):
    """What the rules do to one message: the `drop` or `hold` rule that takes it (None if
    none), the delay they add, how many copies to deliver, and whether FIFO was lifted."""

    taker: Rule | None
    extra_us: int = 0
    copies: int = 1
    reordered: bool = False


def rule_effects(rules: list[Rule], msg: Message, now_us: int, rng) -> Effects:
    """What `rules` do to `msg` sent at `now_us`. Each rule that matches counts one use; a
    `reorder` draws its delay from `rng` (the link's stream), in rule order."""
    extra_us, copies, reordered = 0, 1, False
    for rule in rules:
        if not rule.matches(msg, now_us):
            continue
        if rule.count is not None:
            rule.count -= 1
        action = rule.action
        if action == "drop" or action == "hold":
            return Effects(rule)
        if action == "delay":
            extra_us += rule.delay_us
        elif action == "reorder":
            extra_us += rng.randrange(rule.delay_us + 1)
            reordered = True
        elif action == "duplicate":
            copies = 2
    return Effects(None, extra_us, copies, reordered)
