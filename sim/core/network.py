"""Simulated network over a networkx directed graph.

Contract:
- every node pair has a directed link with a latency distribution, optional jitter, drop and
  duplicate probabilities (`LinkSpec`); links are FIFO unless jitter or a reorder rule applies,
  in which case later messages may overtake earlier ones;
- `block(src, dst)` / `partition(groups)` cut links (asymmetric or symmetric) and `heal()`
  restores them (`sim.core.topology` keeps which cut holds which link). What a cut link does
  to a message depends on `partition_mode`: `drop` loses it (a datagram); `stall` holds it, as
  TCP retransmission would, and delivers the link's held messages in order once it heals,
  unless the connection closed first: either end crashed (`node_down`) or an end reset it
  (`reset`), which discards them (`drop` with reason `connection_closed`). So under `stall` a
  connection never loses one message yet delivers a later one;
- `reset_connections(node, peer)` is the network resetting connections (a middlebox's RST):
  everything in flight on them is lost (`connection_reset`) and both ends are told
  (`disconnect`); news of a close that meets a cut link is lost (`drop`) or told at the heal
  (`stall`), as `sim.core.connections` says;
- `Rule`s act on messages of one kind (and/or source, destination) while active: delay, drop,
  reorder, duplicate or hold them (`sim.core.netrules`);
- every send, deliver and drop is a trace event (`send`, `deliver`, `drop`) carrying the message
  id `mid`; a message whose destination is down at delivery time is dropped (`dst_down`), and
  one whose destination runs with its port closed (`Actor.port_closed`) too (`refused`).
The network knows message kinds only as strings; it never looks inside a body except to ask
for its `brief()` (a small JSON dict for the trace).
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

from simpy.core import NORMAL

from sim.core.connections import Connections
from sim.core.host import Host
from sim.core.links import Link, LinkSpec, Message
from sim.core.netrules import RULE_ACTIONS, Rule, rule_effects
from sim.core.topology import Topology
from sim.core.trace import json_members, json_str

# `Message`, `LinkSpec`, `Rule` and `RULE_ACTIONS` are this module's vocabulary too: users
# import them from here (`sim.core.links` and `sim.core.netrules` define them)
__all__ = ["PARTITION_MODES", "RULE_ACTIONS", "LinkSpec", "Message", "Network", "Rule"]

_tuple_new = tuple.__new__
_SEND_KEYS = ("mid", "dst", "msg")
# brief() fields that would overwrite a member of the send event (handled by the general path)
# map to "" here, which makes `json_members` decline them; the other keys' prefixes are cached
_SEND_PREFIXES = dict.fromkeys(("seq", "t", "node", "kind") + _SEND_KEYS, "")
_DELIVER_KEYS = ("mid", "src")

PARTITION_MODES = ("drop", "stall")


class Network(Connections):
    def __init__(self, default_link: LinkSpec | None = None, partition_mode: str = "drop"):
        if partition_mode not in PARTITION_MODES:
            raise ValueError(f"unknown partition mode {partition_mode!r}; use one of {PARTITION_MODES}")
        self.topology = Topology(default_link or LinkSpec())
        self.partition_mode = partition_mode
        self.rules: list[Rule] = []
        self._next_mid = 0
        self._next_rid = 0
        self._links: dict[tuple[str, str], Link] = {}
        self._kind_text: dict[str, str] = {}
        self._direct = False
        self._env = self._trace = self._emit_encoded = None
        self._version = 0  # bumped by every change to an edge (cut, heal, spec, new node)
        self._deliver_bound = self._deliver  # one bound method for every queued delivery
        self.world: Host | None = None
        self.init_connections()

    def attach(self, world: Host, direct: bool = False) -> None:
        """Run in `world`. `direct`: its `is_alive` and `deliver` are the plain ones (an actor
        of `world.actors` is alive when its `alive` is true, and takes a message by its
        `on_message`), so the network may do their work inline on its per-message path."""
        self.world = world
        self._env = world.kernel.env  # the hot path reads the clock and queue from here
        self._trace = world.trace
        self._emit_encoded = world.trace.emit_encoded  # bound once: called for every message
        self._direct = direct

    # -- topology (`sim.core.topology`; every change bumps the links' version) ------------
    def add_node(self, name: str) -> None:
        self.topology.add_node(name)
        self._version += 1

    def set_link(self, src: str, dst: str, spec: LinkSpec) -> None:
        self.topology.set_link(src, dst, spec)
        self._version += 1

    def block(self, src: str, dst: str, cut: str | None = None) -> None:
        """Cut the link src -> dst; `cut` names the cut for a later `heal(cut)`."""
        self.topology.block(src, dst, cut)
        self._version += 1

    def partition(self, groups: list[list[str]], cut: str | None = None) -> None:
        """Cut every link between nodes of different groups (both directions)."""
        self.topology.partition(groups, cut)
        self._version += 1

    def isolate(self, node: str, cut: str | None = None) -> None:
        self.topology.isolate(node, cut)
        self._version += 1

    def heal(self, cut: str | None = None) -> str | None:
        """Without `cut`, heal every link. With it, only the links that cut holds, and of
        those only the ones no other cut still holds, so overlapping faults each last their
        own time; then deliver what the healed links stalled. Returns a fault outcome naming
        the links left cut, or None."""
        held = self.topology.heal(cut)
        self._version += 1
        self._release_stalled()
        self._tell_waiting_closes()
        if held:
            return f"{held} of its links still cut by another fault"
        return None

    def reachable(self, src: str, dst: str) -> bool:
        return self.topology.reachable(src, dst)

    def _release_stalled(self) -> None:
        """Deliver, in order, what cut links held and are no longer cut (`stall` mode)."""
        waiting = sorted(k for k, link in self._links.items() if link.stalled)
        if not waiting:
            return
        now = self._env._now
        for key in waiting:
            link = self._links[key]
            edge = link.edge
            if edge["blocked"]:
                continue
            for msg in link.take_stalled():
                self._schedule(msg, edge["spec"], link.rng, 0, True, now)

    def unhealed(self, now_us: int) -> dict | None:
        """What still stands between the nodes at `now_us`, or None: cut links, and the rules
        that can keep a message from ever arriving (a `drop` or `hold` still armed, a `hold`
        still keeping messages). `delay`, `reorder` and `duplicate` only slow traffic."""
        cut = self.topology.cut_links()
        rules = [r.rid for r in self.rules if r.armed(now_us)]
        return {"cut_links": cut, "rules": rules} if cut or rules else None

    def due_after(self, now_us: int, srcs) -> list[list[str]]:
        """The links from a node of `srcs` that have a message scheduled to arrive after
        `now_us` (sent and not yet due; it may still be dropped on arrival), as sorted
        [src, dst] pairs. A message stalled on a cut link is not scheduled: see `sim.core.netquery`."""
        return [[s, d] for (s, d), link in sorted(self._links.items())
                if s in srcs and link.due_after(now_us)]

    # -- rules ---------------------------------------------------------------------------
    def add_rule(self, action: str, **kw) -> Rule:
        if action not in RULE_ACTIONS:
            raise ValueError(f"unknown network rule action {action!r}")
        rule = Rule(rid=self._next_rid, action=action, **kw)
        self._next_rid += 1
        self.rules.append(rule)
        return rule

    def clear_rules(self, kind: str | None = None) -> None:
        for rule in [r for r in self.rules if kind is None or r.kind == kind]:
            self._release(rule)
        self.rules = [r for r in self.rules if not (kind is None or r.kind == kind)]

    # -- traffic -------------------------------------------------------------------------
    def _link(self, key: tuple[str, str]) -> Link:
        link = self._links.get(key)
        if link is None:
            src, dst = key
            edge = self.topology.edge(src, dst)
            link = Link(key, edge, self.world.streams.get(f"net/{src}>{dst}"))
            self._links[key] = link
        return link

    def send(self, src: str, dst: str, kind: str, body: Any) -> int:
        """Send `body` as a message of `kind` from `src` to `dst`; returns its message id."""
        mid = self._next_mid
        self._next_mid = mid + 1
        msg = _tuple_new(Message, (mid, src, dst, kind, body))  # Message(...) without __new__
        now = self._env._now  # the kernel's clock, read without a property on the hot path
        link = self._links.get((src, dst))
        kind_text = self._kind_text.get(kind)
        brief = getattr(body, "brief", None)
        more = None if brief is None else brief()
        members = "" if brief is None else (
            json_members(more, _SEND_PREFIXES) if type(more) is dict else None)
        if link is None or kind_text is None or members is None or link.send_text is None:
            link = self._send_event(msg, now, kind_text, members, more)
        else:  # (a time that is not an int takes the trace's general path)
            self._emit_encoded(
                now, src, "send", f"{link.send_text}{mid}{link.dst_text}{kind_text}{members}}}",
                _SEND_KEYS, (mid, dst, kind), more)
        if link.version != self._version:
            link.refresh(self._version)
        if link.plain and not self.rules:
            # the common case, exactly as `_route` does it for a plain link
            delay = link.constant_us
            if delay is None:
                delay = link.spec.latency.sample(link.rng)
            at = now + delay
            if link.fifo_us > at:
                at = link.fifo_us
            link.fifo_us = at
            if type(at) is not int:  # let call_later convert it
                self.world.kernel.call_later(at - now, self._deliver, msg, link)
                return mid
            env = self._env  # kernel.call_later(delay, self._deliver, msg, link), inlined
            heappush(env._queue, (at, NORMAL, next(env._eid), self._deliver_bound, (msg, link)))
            return mid
        return self._route(msg, link, now)

    def _send_event(self, msg: Message, now: int, kind_text: str | None, members: str | None,
                    more: Any) -> Link:
        """The `send` event off the hot path (first message on a link, a kind or field names
        that need the general encoder), given what `send` found: the kind's JSON text if
        cached, the brief's members ("" without a brief) and the brief; returns the link."""
        mid, src, dst, kind = msg.mid, msg.src, msg.dst, msg.kind
        key = (src, dst)
        link = self._links.get(key)
        if kind_text is None and type(kind) is str:
            kind_text = self._kind_text[kind] = json_str(kind)
        trace = self._trace
        if link is None or kind_text is None or link.send_text is None or members is None:
            fields = {"mid": mid, "dst": dst, "msg": kind}
            if members != "":  # a brief with fields, or one the fast encoder declined
                fields.update(more)
            trace.emit(now, src, "send", fields)
        else:
            trace.emit_encoded(now, src, "send",
                               f"{link.send_text}{mid}{link.dst_text}{kind_text}{members}}}",
                               _SEND_KEYS, (mid, dst, kind), more)
        if link is None:
            link = self._link(key)  # after the send event, as an unknown node raises KeyError
        return link

    def _route(self, msg: Message, link: Link, now: int) -> int:
        """Send `msg` on a link that is cut, lossy, jittery or duplicating, or under rules."""
        world = self.world
        mid, src = msg.mid, msg.src
        edge = link.edge
        if edge["blocked"]:
            if self.partition_mode == "stall":
                link.stalled.append(msg)
                world.trace.emit(now, src, "stall", {"mid": mid})
                return mid
            return self._drop(msg, "partition")
        spec: LinkSpec = edge["spec"]
        rng = link.rng
        taker, extra_us, copies, reordered = rule_effects(self.rules, msg, now, rng)
        if taker is not None:
            if taker.action == "drop":
                return self._drop(msg, f"rule:{taker.rid}")
            taker.held.append(msg)  # a hold
            world.trace.emit(now, src, "hold", {"mid": mid, "rule": taker.rid})
            return mid
        fifo = spec.jitter_us == 0 and not reordered
        if spec.drop and rng.random() < spec.drop:
            return self._drop(msg, "loss")
        if spec.duplicate and rng.random() < spec.duplicate:
            copies = 2
        for _ in range(copies):
            self._schedule(msg, spec, rng, extra_us, fifo, now)
        return mid

    def _schedule(self, msg, spec, rng, extra_us, fifo, now) -> None:
        delay = spec.latency.sample(rng) + extra_us
        if spec.jitter_us:
            delay += rng.randrange(spec.jitter_us + 1)
        at = now + delay
        link = self._link((msg.src, msg.dst))
        if fifo:
            at = max(at, link.fifo_us)
            link.fifo_us = at
        elif at > link.late_us:
            link.late_us = at
        self.world.kernel.call_later(at - now, self._deliver, msg, link)

    def _drop(self, msg: Message, reason: str) -> int:
        w = self.world
        w.trace.emit(self._env._now, msg.src, "drop",
                     {"mid": msg.mid, "dst": msg.dst, "msg": msg.kind, "reason": reason})
        return msg.mid

    def _deliver(self, msg: Message, link: Link) -> None:
        if msg.mid < link.reset_mid:  # its connection was reset while it was on its way
            self._drop(msg, "connection_reset")
            return
        w = self.world
        if self._direct:  # w.is_alive(msg.dst), inlined (see `attach`)
            actor = link.dst_actor
            if actor is None:
                actor = link.dst_actor = w.actors.get(msg.dst)
            if actor is None or not actor.alive:
                self._refused(msg)
                return
            if actor.port_closed and actor.refuses(msg.kind):
                self._refused(msg, "refused")
                return
        elif not w.is_alive(msg.dst):
            self._refused(msg)
            return
        elif not w.accepts(msg):
            self._refused(msg, "refused")
            return
        if link.deliver_text is None:
            self._trace.emit(self._env._now, msg.dst, "deliver", {"mid": msg.mid, "src": msg.src})
        else:
            self._emit_encoded(self._env._now, msg.dst, "deliver",
                               f"{link.deliver_text}{msg.mid}{link.src_text}",
                               _DELIVER_KEYS, (msg.mid, msg.src))
        if self._direct:  # w.deliver(msg), inlined
            actor.on_message(msg)
        else:
            w.deliver(msg)
        if self.rules:
            for rule in self.rules:
                if rule.action == "hold" and rule.held and rule.release_kind == msg.kind:
                    self._release(rule, dst=msg.dst, sent_before=msg.mid)

    def _release(self, rule: Rule, dst: str | None = None, sent_before: int | None = None) -> None:
        """Let held messages go: all of them, or those to `dst` sent before message `sent_before`."""
        keep, go = [], []
        for held in rule.held:
            ok = dst is None or (held.dst == dst and held.mid < sent_before)
            (go if ok else keep).append(held)
        rule.held = keep
        now = self._env._now
        for held in go:
            edge = self.topology.edge(held.src, held.dst)
            rng = self.world.streams.get(f"net/{held.src}>{held.dst}")
            self._schedule(held, edge["spec"], rng, 0, False, now)
