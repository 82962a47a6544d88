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
from sim.kafka.faults.admin import draw_leader_move, draw_reassignment, reassignment_undo
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
    """A control-plane change and its reversal 1-10 slots later, racing: hold the control
    requests of one kind (to one broker or all) sent from the change until 1-10 slots after
    the reversal, each until a later control request of a given kind reaches its broker. The
    reversal is what sends requests of a newer epoch to the brokers the change's requests were
    for, so the hold spans it: KIP-570's StopReplica overtaken by the LeaderAndIsr of a
    reverted reassignment; KIP-359's leader that missed a leadership's move away and back.
    Every pair of kinds, and the mirror images, are drawn as often."""
    pick = Pick(draw)
    kind, release = pick.one(CONTROL_KINDS), pick.one(CONTROL_KINDS)
    dst = pick.one((None,) + space.group("brokers"))
    change = pick.one(("move_leader", "reassign", "controlled_shutdown"))
    steps = BOUNCES[change](pick, space, start)
    first, last = (min(s.at_us for s in steps) // 1000, max(s.at_us for s in steps) // 1000)
    # a controlled shutdown may start earlier than `start` (to fit its restart in)
    end = space.undo_at(last, pick.integer(1, 10) * SLOT_MS)
    params = {"rule": "hold", "kind": kind, "release_kind": release,
              "duration_ms": max(end - first, SLOT_MS)}
    if dst is not None:
        params["dst"] = dst
    return [step(first, "rule", None, params)] + steps


def _leader_bounce(pick, space, start: int) -> list:
    """A leadership moved and moved back (a preferred election) 1-10 slots later."""
    tp, move = draw_leader_move(pick, space, start)
    back = space.follow_up(start, pick.integer(1, 10))
    return [move, step(back, "preferred_election", tp)]


def _reassign_bounce(pick, space, start: int) -> list:
    """A reassignment reverted to the scenario's replicas, or cancelled, 1-10 slots later."""
    tp, move = draw_reassignment(pick, space, start)
    back = space.follow_up(start, pick.integer(1, 10))
    return [move, reassignment_undo(space, tp, pick.one(("revert", "cancel")), back)]


# a controlled shutdown's own draw already pairs it with the broker's restart
BOUNCES = {"move_leader": _leader_bounce, "reassign": _reassign_bounce,
           "controlled_shutdown": ACTION_EPISODES["controlled_shutdown"]}
COMPOSITES = {"controller_crash": _controller_crash, "control_race": _control_race}
KIND_NAMES = frozenset(ACTION_EPISODES) | frozenset(COMPOSITES)


def episode(kind: str, space, start_ms: int):
    """The strategy of one episode of `kind` (see the module contract)."""
    if kind in COMPOSITES:
        return COMPOSITES[kind](space, start_ms)
    return _EpisodeStrategy(ACTION_EPISODES[kind], (space, start_ms), {})
