"""Explore's fault kinds: the episodes a schedule is made of, as hypothesis strategies.

Contract: `episode(kind, space, start_ms)` is the strategy of one episode of fault kind
`kind` starting at `start_ms`: a list of `FaultStep`s. A kind is either one fault action's
own draw (`sim.kafka.faults.EPISODES`: crash, isolate, rule:delay...), run with a `Pick`, or
one of the composite kinds here, which join several actions (`controller_crash`,
`control_race`). Each draw function is its own hypothesis composite, labelled by the
function as `@st.composite` labels it, so the search's choices (and its cases, run for run)
depend only on what each draw picks.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.strategies._internal.core import CompositeStrategy

from epochsim.explore.picks import SLOT_MS, Pick
from sim.kafka.faults import EPISODES as ACTION_EPISODES
from sim.kafka.faults.action import pair, step
from sim.kafka.faults.rules import CONTROL_KINDS


class _EpisodeStrategy(CompositeStrategy):
    """A catalogue draw `draw(pick, space, start_ms)` as a composite strategy: the draw gets
    a `Pick` where a composite's function gets hypothesis' `draw`."""

    def do_draw(self, data):
        return self.definition(Pick(data.draw), *self.args, **self.kwargs)


@st.composite
def _controller_crash(draw, space, start: int):
    pick = Pick(draw)
    action, undo = pick.one((("crash", "restart"), ("isolate", "heal")))
    return pair(start, action, "controller", space.undo_at(start, pick.duration_ms()), undo)


@st.composite
def _control_race(draw, space, start: int):
    """A control-plane change whose requests race the ones that follow: hold one kind of
    control request the change sends (to one broker or all) until a later control request of
    a given kind reaches the same broker. KIP-570's reorder is StopReplica held behind
    LeaderAndIsr; its mirror image, and every other pair, are drawn as often."""
    pick = Pick(draw)
    kind, release = pick.one(CONTROL_KINDS), pick.one(CONTROL_KINDS)
    params = {"rule": "hold", "kind": kind, "release_kind": release, "duration_ms": SLOT_MS}
    dst = pick.one((None,) + space.group("brokers"))
    if dst is not None:
        params["dst"] = dst
    change = pick.one(("move_leader", "reassign", "controlled_shutdown"))
    return [step(start, "rule", None, params)] + draw(episode(change, space, start))


COMPOSITES = {"controller_crash": _controller_crash, "control_race": _control_race}
KIND_NAMES = frozenset(ACTION_EPISODES) | frozenset(COMPOSITES)


def episode(kind: str, space, start_ms: int):
    """The strategy of one episode of `kind` (see the module contract)."""
    if kind in COMPOSITES:
        return COMPOSITES[kind](space, start_ms)
    return _EpisodeStrategy(ACTION_EPISODES[kind], (space, start_ms), {})
