"""Who can reach whom: the nodes, the directed link between every two of them, and the cuts.

Contract:
- every node pair has a directed link in each direction, each an edge of a networkx DiGraph
  whose attribute dict holds the link's `spec` (a `LinkSpec`) and whether it is `blocked`;
  the network's per-link state shares that dict, so a change here shows there at once;
- a cut blocks links (`block`: one direction; `partition`: between groups, both ways;
  `isolate`: one node from all others), and may be named. `heal(name)` unblocks the links that
  cut holds, except those another cut still holds, so overlapping faults each last their own
  time; `heal(None)` unblocks every link;
- links are visited in sorted order, never in set order.
It knows nothing of messages: what a cut does to traffic, and what a heal releases, is the
network's (`sim.core.network`).
"""

from __future__ import annotations

import networkx as nx

from sim.core.links import LinkSpec


class Topology:
    def __init__(self, default_link: LinkSpec):
        self.graph = nx.DiGraph()
        self.default_link = default_link
        # the cuts that hold each blocked link, by name ("" for a cut without one): a link
        # heals when the last cut holding it is healed (see `heal`)
        self._cut_by: dict[tuple[str, str], set[str]] = {}

    def add_node(self, name: str) -> None:
        """Add `name`, linked both ways to every node already there by the default link."""
        for other in sorted(self.graph.nodes):
            self.graph.add_edge(name, other, spec=self.default_link, blocked=False)
            self.graph.add_edge(other, name, spec=self.default_link, blocked=False)
        self.graph.add_node(name)

    def edge(self, src: str, dst: str) -> dict:
        """The attribute dict of the link src -> dst (KeyError for an unknown node)."""
        return self.graph.edges[src, dst]

    def set_link(self, src: str, dst: str, spec: LinkSpec) -> None:
        self.graph.edges[src, dst]["spec"] = spec

    def block(self, src: str, dst: str, cut: str | None = None) -> None:
        """Cut the link src -> dst; `cut` names the cut for a later `heal(cut)`."""
        self.graph.edges[src, dst]["blocked"] = True
        self._cut_by.setdefault((src, dst), set()).add(cut or "")

    def partition(self, groups: list[list[str]], cut: str | None = None) -> None:
        """Cut every link between nodes of different groups (both directions)."""
        where = {n: i for i, g in enumerate(groups) for n in g}
        for src, dst in sorted(self.graph.edges):
            if src in where and dst in where and where[src] != where[dst]:
                self.block(src, dst, cut)

    def isolate(self, node: str, cut: str | None = None) -> None:
        others = sorted(n for n in self.graph.nodes if n != node)
        self.partition([[node], others], cut)

    def heal(self, cut: str | None = None) -> int:
        """Without `cut`, unblock every link. With it, only the links that cut holds, and of
        those only the ones no other cut still holds. Returns how many links of `cut` another
        cut still holds."""
        held = 0
        if cut is None:
            for src, dst in sorted(self.graph.edges):
                self.graph.edges[src, dst]["blocked"] = False
            self._cut_by.clear()
            return held
        for key in sorted(k for k, cuts in self._cut_by.items() if cut in cuts):
            cuts = self._cut_by[key]
            cuts.discard(cut)
            if cuts:
                held += 1
            else:
                del self._cut_by[key]
                self.graph.edges[key]["blocked"] = False
        return held

    def reachable(self, src: str, dst: str) -> bool:
        return src == dst or not self.graph.edges[src, dst]["blocked"]

    def cut_links(self) -> int:
        """How many links lose every message: blocked, or with `drop = 1.0` (as cut as a
        blocked one)."""
        return sum(1 for _s, _d, e in self.graph.edges(data=True)
                   if e["blocked"] or e["spec"].drop >= 1.0)
