"""KRaft faults: a broker cut from the controller quorum but not from its clients and peers,
and a broker whose metadata fetch and apply run slow.

Contract: `ACTIONS` holds `cut_from_quorum`, `split_quorum`, `slow_metadata`,
`stop_controller`, `add_voter` and `remove_voter` as `FaultAction`s (see `sim.kafka.faults.action`). They act in KRaft mode
only (`cluster.mode = "kraft"`); in ZooKeeper mode their outcome says so and nothing changes. The quorum's own failures are the
generic node faults aimed at a controller (`crash`/`isolate` of `controller`, the active one).
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.faults.action import CUT, FaultAction, number, pair, step, target_words

ZK_ONLY = "not a KRaft cluster (cluster.mode = \"zk\"): nothing done"


def _cut_from_quorum(cluster, target, params):
    """Cut every link between the broker and the controllers (both ways): it keeps serving
    clients and followers from the metadata it has, stops heartbeating, and is fenced once
    its session times out; its metadata offset stops where it was."""
    if not cluster.options.kraft:
        return ZK_ONLY
    voters = [c.name for c in cluster.controllers]
    return cluster.world.network.partition([[target], voters], params.get("cut"))


def _split_quorum(cluster, target, params):
    """Cut one voter (default: the quorum leader) from the other voters, both ways, but not
    from the brokers or clients: the others elect a new leader, and the brokers that still
    fetch from the old one learn of it only if it resigns (check-quorum, KAFKA-15489)."""
    if not cluster.options.kraft:
        return ZK_ONLY
    if target is None:
        active = cluster.active_controller()
        if active is None:
            return "no quorum leader: nothing done"
        target = active.name
    voters = [c.name for c in cluster.controllers]
    if target not in voters:
        return f"{target} is not a controller: nothing done"
    return cluster.world.network.partition([[target], [v for v in voters if v != target]],
                                           params.get("cut"))


def _slow_metadata(cluster, target, params):
    """From now on every batch of metadata records the broker applies takes `delay_ms` more
    (a slow disk, a long GC, a loaded machine): its metadata offset falls behind the other
    brokers'. `delay_ms = 0` ends it. It lasts across restarts (it is the machine's)."""
    if not cluster.options.kraft:
        return ZK_ONLY
    cluster.brokers[int(target[1:])].metadata_delay_us = int(params["delay_ms"] * 1000)
    return None


# explore's draws (opt-in kinds: `epochsim explore --faults +split_quorum`); a KRaft space only
SLOW_METADATA_MS = (100, 500, 1000, 3000)  # how late a slowed broker applies each batch


def _quorum_cut(pick, space, start: int, action: str, target) -> list:
    """A quorum cut healed after a drawn duration (at most 3 s), or as often left for good:
    what these cuts break shows only while they last, longer than any drawn duration (a broker
    is fenced once its 9 s session lapses; brokers that never hear of a new quorum leader
    stall while the split lasts, KAFKA-15489), and `broker_metadata_stalled` judges a network
    still cut at the end of the run."""
    if pick.one((False, True)):
        return [step(start, action, target)]
    return pair(start, action, target, space.undo_at(start, pick.duration_ms()), "heal")


def _draw_cut_from_quorum(pick, space, start):
    """A broker cut from the quorum, healed later or left cut."""
    return _quorum_cut(pick, space, start, "cut_from_quorum", pick.one(space.brokers))


def _draw_split_quorum(pick, space, start):
    """The quorum leader, or a drawn voter, cut from the other voters, healed later or left
    cut."""
    return _quorum_cut(pick, space, start, "split_quorum", pick.one((None,) + space.controllers))


def _draw_slow_metadata(pick, space, start):
    """A broker applies each metadata batch late for a while, then keeps up again."""
    target = pick.one(space.brokers)
    delay = pick.one(SLOW_METADATA_MS)
    end = space.undo_at(start, pick.duration_ms())
    return [step(start, "slow_metadata", target, {"delay_ms": delay}),
            step(end, "slow_metadata", target, {"delay_ms": 0})]


def _draw_stop_controller(pick, space, start):
    """The active controller, or a drawn voter, stopped cleanly and restarted later: at least
    two slots later, so that the stop (once another voter leads, ~50 ms) comes first."""
    target = pick.one(("controller",) + space.controllers)
    return pair(start, "stop_controller", target,
                space.undo_at(start, pick.duration_ms(lo_slots=2)), "restart")


def _draw_voter_change(pick, space, start):
    """A drawn controller removed from the quorum's voters (RemoveRaftVoter) and, as often
    as not, added back after a drawn duration (AddRaftVoter): the single-server changes of
    KIP-853, against whatever else the case does to the quorum."""
    target = pick.one(space.controllers)
    removal = [step(start, "remove_voter", target)]
    if pick.one((False, True)):
        return removal
    # inside the fault window: an add_voter may not run in the quiet settle window
    later = space.follow_up(start, max(1, pick.duration_ms() // space.slot_ms))
    return removal + [step(later, "add_voter", target)]


RAFT_SHUTDOWN_MS = 5000  # `KafkaRaftManager.shutdown`: `client.shutdown(5000)` (3.3.0-3.7.0)


def _stop_controller(cluster, target, params):
    """A controller's process stops cleanly (`KafkaRaftManager.shutdown` ->
    `KafkaRaftClient.shutdown(timeoutMs)`): a quorum leader resigns at once and sends
    EndQuorumEpoch with its preferred successors; the voter stands for no election from then
    on, and stops once another voter leads or `timeout_ms` passes. A `restart` brings it back
    in the quorum state it stored."""
    if not cluster.options.kraft:
        return ZK_ONLY
    controller = next((c for c in cluster.controllers if c.name == target), None)
    if controller is None:
        return f"{target} is not a controller: nothing done"
    if not controller.alive:
        return "already down"
    controller.begin_raft_shutdown(params.get("timeout_ms", RAFT_SHUTDOWN_MS))
    return None


def _quorum_leader(cluster):
    """The live Raft leader of the highest epoch (committed in its epoch or not), or None."""
    leaders = [c for c in cluster.controllers if c.alive and c.role == "leader"]
    return max(leaders, key=lambda c: c.quorum_epoch, default=None)


def _voter_change(op: str):
    """An operator's AddRaftVoter / RemoveRaftVoter of the target controller (KIP-853,
    `kafka-metadata-quorum add-controller` / `remove-controller`), sent to the quorum leader
    the step finds; the leader's answer, when it comes, is the `voter_change` event (op,
    voter, error). A cluster with static voters (no `cluster.initial_controllers`) answers
    UNSUPPORTED_VERSION; before 3.9 nothing takes the request."""
    def apply(cluster, target, params):
        if not cluster.options.kraft:
            return ZK_ONLY
        if target not in [c.name for c in cluster.controllers]:
            return f"{target} is not a controller: nothing done"
        if not cluster.protocol.raft_dynamic_voters:
            return "no AddRaftVoter / RemoveRaftVoter before 3.9 (KIP-853): nothing done"
        leader = _quorum_leader(cluster)
        if leader is None:
            return "no quorum leader: nothing done"

        def reply(error):
            leader.emit(V.VOTER_CHANGE, {"op": op, "voter": target, "error": error})
        getattr(leader, f"{op}_voter")(target, reply)
        return None
    return apply


ACTIONS = {a.name: a for a in (
    FaultAction(
        "cut_from_quorum", "broker", params=CUT, apply=_cut_from_quorum,
        sentence=lambda t, p: f"cut {target_words(t)} from the controller quorum (clients "
                              "and other brokers still reach it)",
        default_undo="heal", window="cut", draws={"cut_from_quorum": _draw_cut_from_quorum}),
    FaultAction(
        "split_quorum", "node?", params=CUT, apply=_split_quorum,
        sentence=lambda t, p: (f"cut {target_words(t) if t else 'the quorum leader'} from the "
                               "other voters (brokers and clients still reach it)"),
        default_undo="heal", window="cut", draws={"split_quorum": _draw_split_quorum}),
    FaultAction(
        "slow_metadata", "broker", params={"delay_ms": (number(lo=0), 1000)},
        apply=_slow_metadata,
        sentence=lambda t, p: f"{target_words(t)} applies each metadata batch "
                              f"{p.get('delay_ms', 1000)} ms late",  # 1000: the default
        draws={"slow_metadata": _draw_slow_metadata}),
    FaultAction(
        "stop_controller", "node", params={"timeout_ms": (number(lo=0), RAFT_SHUTDOWN_MS)},
        apply=_stop_controller,
        sentence=lambda t, p: f"stop {target_words(t)} cleanly (a quorum leader resigns "
                              "first; it stops once another voter leads)",
        default_undo="restart", window="down",
        # a restart must come after it stopped, or it finds it up
        undo_after_us=RAFT_SHUTDOWN_MS * 1000 + 100_000, mark_colour="tab:red",
        draws={"stop_controller": _draw_stop_controller}),
    FaultAction(
        "add_voter", "node", apply=_voter_change("add"),
        sentence=lambda t, p: f"add {target_words(t)} to the controller quorum's voters "
                              "(AddRaftVoter to the quorum leader)", mark_colour="tab:green"),
    FaultAction(
        "remove_voter", "node", apply=_voter_change("remove"),
        sentence=lambda t, p: f"remove {target_words(t)} from the controller quorum's voters "
                              "(RemoveRaftVoter to the quorum leader)", mark_colour="tab:olive",
        draws={"voter_change": _draw_voter_change}),
)}
