"""What the network carries and over what: messages, link specs, per-link state.

Contract:
- `Message` is one message on the network, immutable; `LinkSpec` is a directed link's latency
  distribution, jitter, and drop and duplicate probabilities;
- `Link` is the state the network keeps per directed link on its hot path: the FIFO horizon,
  the link's random stream, messages stalled on a cut, and the JSON text of its trace events.
Nothing here sends, schedules or records anything: `sim.core.network` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from sim.core.latency import LatencyDist
from sim.core.trace import event_head, json_str


class Message(NamedTuple):
    """One message on the network. Immutable; a named tuple because it is built for every
    send (the hot path builds it with `tuple.__new__`, several times cheaper than a frozen
    dataclass)."""

    mid: int
    src: str
    dst: str
    kind: str
    body: Any


@dataclass(frozen=True)
class LinkSpec:
    latency: LatencyDist = LatencyDist("constant", 1.0)
    jitter_us: int = 0
    drop: float = 0.0
    duplicate: float = 0.0


class Link:
    """Per-link cache of the hot path: the edge's attribute dict (shared with the graph, so
    `block` and `set_link` show through), the link's random stream, the FIFO horizon, the
    constant latency of the spec last seen (None if not constant) and the JSON text of the
    link's trace events (None unless both ends are plain strings)."""

    __slots__ = ("edge", "rng", "fifo_us", "late_us", "spec", "constant_us", "send_text",
                 "dst_text", "deliver_text", "src_text", "stalled", "version", "plain",
                 "dst_actor", "reset_mid")

    def __init__(self, key: tuple[str, str], edge: dict, rng):
        self.edge = edge
        self.rng = rng
        self.fifo_us = 0  # latest delivery time scheduled in FIFO order on this link
        self.late_us = 0  # latest delivery time scheduled out of FIFO order (jitter, reorder)
        self.spec = None
        self.constant_us = None
        self.stalled: list = []  # messages held on a cut link (partition_mode "stall")
        # `plain`: not cut, and its spec has no jitter, loss or duplication, so a message only
        # needs a latency and the FIFO horizon. Valid while `version` is the network's.
        self.version = -1
        self.plain = False
        self.dst_actor = None  # the destination's actor, once known (names are never reused)
        # messages with a lower id were sent before the network last reset this connection:
        # they are lost if they have not arrived yet (`Network.reset_connections`)
        self.reset_mid = 0
        src, dst = key
        if type(src) is str and type(dst) is str:
            # the text `Trace.emit_encoded` takes for the link's two events, but for the ids:
            # send: {"seq","t","node":src,"kind":"send","mid","dst","msg"...}
            self.send_text = f'{event_head(src, "send")},"mid":'
            self.dst_text = f',"dst":{json_str(dst)},"msg":'
            # deliver: {"seq","t","node":dst,"kind":"deliver","mid","src"}
            self.deliver_text = f'{event_head(dst, "deliver")},"mid":'
            self.src_text = f',"src":{json_str(src)}}}'
        else:
            self.send_text = self.dst_text = self.deliver_text = self.src_text = None

    def refresh(self, version: int) -> None:
        """Recompute `plain` (and the constant latency of a changed spec) after a topology or
        spec change; draws nothing from the stream a constant latency does not draw."""
        edge = self.edge
        spec = edge["spec"]
        if self.spec is not spec:
            self.spec = spec
            latency = spec.latency
            self.constant_us = latency.sample(self.rng) if latency.dist == "constant" else None
        self.plain = (not edge["blocked"] and not spec.jitter_us and not spec.drop
                      and not spec.duplicate)
        self.version = version

    def take_stalled(self) -> list:
        """The messages stalled on this link, oldest first; the link keeps none of them."""
        stalled, self.stalled = self.stalled, []
        return stalled

    def due_after(self, now_us: int) -> bool:
        """Has a message been scheduled to arrive on this link after `now_us`?"""
        return max(self.fifo_us, self.late_us) > now_us
