"""Questions the harness asks the network at the end of a run (what still stands between
nodes), kept apart from the network's own traffic handling.

Contract: pure reads of a `sim.core.network.Network`; nothing here changes it.
"""

from __future__ import annotations


def kept_from(network, srcs) -> list[list[str]]:
    """The links from a node of `srcs` with a message sent and kept from arriving: stalled on
    a cut link, or kept by a `hold` rule (which lets it go only when a later message of its
    release kind arrives, however long that takes), as sorted [src, dst] pairs."""
    pairs = {(s, d) for (s, d), link in network._links.items() if s in srcs and link.stalled}
    pairs.update((m.src, m.dst) for rule in network.rules for m in rule.held if m.src in srcs)
    return [list(p) for p in sorted(pairs)]


def open_both_ways(network, a: str, b: str) -> bool:
    """Can messages pass between `a` and `b` both ways: neither link cut (blocked, or dropping
    every message)?"""
    topology = network.topology
    return all(topology.reachable(s, d) and topology.edge(s, d)["spec"].drop < 1.0
               for s, d in ((a, b), (b, a)))


def slowed(network, now_us: int) -> bool:
    """Is a `delay` or `reorder` rule still in force at `now_us`?"""
    return any(r.action in ("delay", "reorder") and r.in_force(now_us) for r in network.rules)
