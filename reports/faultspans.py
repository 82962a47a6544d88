"""Fault windows: each nemesis action paired with the step that undoes it.

Contract: feed every event to `FaultSpans.step`, then `finish(end_us)` returns `FaultSpan`s
sorted by start. A window runs from its action to its undo: crash or power_loss -> restart
of the same node; isolate / partition / block -> the next heal (a heal with a `cut` name ends
only the cuts of that name); a network rule -> clear_rules, its
`duration_ms`, or (for a counted hold) the delivery of the last message it held, whichever
comes first. A window never undone runs to `end_us`. Every other action is an instant
(`end_us is None`). Which window an action opens or closes is its `window` / `ends` in
`sim.kafka.faults`; labels come from `reports.words.describe_fault`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reports.words import describe_fault
from sim.kafka import vocab as V
from sim.kafka.faults import ACTIONS


def _window(action: str) -> str | None:
    """The window `action` opens: "down" (a node until its restart), "cut", "rule", or None."""
    known = ACTIONS.get(action)
    return known.window if known is not None else None


def _ends(action: str) -> str | None:
    """The windows `action` closes (an undo), or None."""
    known = ACTIONS.get(action)
    return known.ends if known is not None else None


def _target_kind(action: str) -> str:
    known = ACTIONS.get(action)
    return known.target if known is not None else "node"


@dataclass
class FaultSpan:
    step: int
    start_us: int
    end_us: int | None
    action: str
    label: str
    seq: int
    nodes: tuple = ()
    tps: tuple = ()
    outcome: str | None = None
    params: dict = field(default_factory=dict)
    held: list = field(default_factory=list)
    released_us: dict = field(default_factory=dict)
    cleared_us: int | None = None

    @property
    def is_window(self) -> bool:
        return _window(self.action) is not None


class FaultSpans:
    def __init__(self) -> None:
        self.spans: list[FaultSpan] = []
        self.by_step: dict[int, FaultSpan] = {}
        self.crashed: dict[str, FaultSpan] = {}
        self.cuts: list[FaultSpan] = []
        self.rules: dict[int, FaultSpan] = {}
        self.held_by: dict[int, FaultSpan] = {}

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == V.FAULT:
            self._fault(ev)
        elif kind == V.FAULT_OUTCOME:
            self._outcome(ev)
        elif kind == V.HOLD:
            span = self.rules.get(ev.get("rule"))
            if span is not None:
                span.held.append(ev["mid"])
                self.held_by[ev["mid"]] = span
        elif kind in (V.DELIVER, V.DROP) and ev.get("mid") in self.held_by:
            self.held_by.pop(ev["mid"]).released_us[ev["mid"]] = ev["t"]

    def _fault(self, ev: dict) -> None:
        action = ev.get("action", "?")
        target = ev.get("resolved")
        params = ev.get("params") or {}
        span = FaultSpan(ev.get("step", -1), ev["t"], None, action, describe_fault(ev), ev["seq"],
                         _nodes(action, target, params),
                         (target,) if _on_partition(action) and target else (),
                         ev.get("outcome"), params)
        self.by_step[span.step] = span
        if span.outcome is None and not self._undo(span, ev):
            self.spans.append(span)
            if _window(action) == "down":
                self.crashed[target] = span
            elif _window(action) == "cut":
                self.cuts.append(span)
        elif span.outcome is not None:
            self.spans.append(span)

    def _undo(self, span: FaultSpan, ev: dict) -> bool:
        """Close the windows `span` undoes; True when it closed one (no mark of its own)."""
        t = ev["t"]
        ends = _ends(span.action)
        if ends == "down" and ev.get("resolved") in self.crashed:
            self.crashed.pop(ev["resolved"]).end_us = t
            return True
        if ends == "cut" and self.cuts:
            name = span.params.get("cut")
            ended = [c for c in self.cuts if name is None or c.params.get("cut") == name]
            for cut in ended:
                cut.end_us = t
            self.cuts = [c for c in self.cuts if c not in ended]
            return bool(ended)
        if ends == "rule":
            kind = span.params.get("kind")
            hit = [r for r in self.rules.values()
                   if r.cleared_us is None and (kind is None or r.params.get("kind") == kind)]
            for rule in hit:
                rule.cleared_us = t
            return bool(hit)
        return False

    def _outcome(self, ev: dict) -> None:
        span = self.by_step.get(ev.get("step"))
        if span is None:
            return
        outcome = str(ev.get("outcome", ""))
        if _window(span.action) == "rule" and outcome.startswith("rule "):
            self.rules[int(outcome.split()[1])] = span
            return
        span.outcome = outcome
        span.label += f" ({outcome})"
        if _window(span.action) == "down" and self.crashed.get(span.nodes[0] if span.nodes else None) is span:
            self.crashed.pop(span.nodes[0])  # "already down": nothing was crashed

    def finish(self, end_us: int) -> list[FaultSpan]:
        for span in self.spans:
            if _window(span.action) == "rule":
                span.end_us = _rule_end(span, end_us)
            elif span.is_window and span.outcome is None and span.end_us is None:
                span.end_us = end_us
        return sorted(self.spans, key=lambda s: (s.start_us, s.seq))


def _rule_end(span: FaultSpan, end_us: int) -> int:
    ends = [end_us]
    if span.cleared_us is not None:
        ends.append(span.cleared_us)
    duration_ms = span.params.get("duration_ms")
    if duration_ms:
        ends.append(span.start_us + int(duration_ms * 1000))
    count = span.params.get("count")
    if count and len(span.released_us) >= count:
        ends.append(max(span.released_us.values()))
    return max(span.start_us, min(ends))


def _on_partition(action: str) -> bool:
    """Whether `action` targets a partition (or a topic as well): its lane lights up."""
    return _target_kind(action).startswith("partition")


def _nodes(action: str, target: str | None, params: dict) -> tuple:
    nodes = []
    if target and not _on_partition(action) and _target_kind(action) not in ("topic", "none"):
        nodes.append(target)
    for key in ("src", "dst"):
        if params.get(key):
            nodes.append(params[key])
    return tuple(dict.fromkeys(nodes))
