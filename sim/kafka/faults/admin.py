"""Kafka admin actions: what an operator asks of the active controller, and retention.

Contract: `ACTIONS` holds `move_leader`, `move_all_leaders`, `preferred_election`,
`elect_leaders` (the admin's ElectLeaders, PREFERRED or UNCLEAN, as the release takes it),
`reassign`, `cancel_reassignment`, `delete_topic`, `create_topic`, `retention` and
`upgrade_format` as `FaultAction`s (see `sim.kafka.faults.action`). A controller action finds
no controller while none is active, and says so in its outcome.
"""

from __future__ import annotations

from sim.core.faults import FaultStep
from sim.kafka.faults.action import (
    OPTIONAL,
    REQUIRED,
    FaultAction,
    integer,
    same_target,
    step,
    target_words,
)
from sim.kafka.switch_choices import elect_leaders_refused
from sim.kafka.vocab import error_name


def _with_controller(op):
    """An apply that hands `op` the active controller, or says there is none."""
    def apply(cluster, target, params):
        controller = cluster.active_controller()
        if controller is None:
            return "no active controller"
        return op(cluster, controller, target, params)
    return apply


def _replicas(value, key, checks):
    for j, broker in enumerate(checks.list(value, key)):
        checks.int(broker, f"{key}[{j}]", 1, checks.names.brokers)
    if len(set(value)) != len(value):
        checks.fail(key, f"duplicate broker id in {value}", "list each broker id once")
    return value


def _assignment(value, key, checks):
    """A manual assignment: one list of broker ids per partition, all of one length."""
    lists = checks.list(value, key)  # refuses an empty list
    for i, replicas in enumerate(lists):
        _replicas(replicas, f"{key}[{i}]", checks)
    if len({len(replicas) for replicas in lists}) != 1:
        checks.fail(key, f"partitions of different replication factors in {value}",
                    "give every partition as many replicas")
    return value


def _manual(assignment) -> list | None:
    return None if assignment is None else [list(replicas) for replicas in assignment]


def _to(value, key, checks):
    if checks.str(value, key) == "next":
        return value
    if value not in checks.names.broker_names():
        checks.fail(key, f"'{value}' is not a broker ({checks.names.summary()})",
                    'use a broker name or "next"')
    return value


def _election_type(value, key, checks):
    """PREFERRED or UNCLEAN (either case), if the controllers' release takes it by request."""
    kind = checks.str(value, key, ("preferred", "unclean", "PREFERRED", "UNCLEAN")).upper()
    why = elect_leaders_refused(checks.names.elect_leaders, kind)
    if why:
        checks.fail(key, why, "pick a later profile, or use preferred_election")
    return value


def _elect_leaders(cluster, controller, target, params):
    """The admin's ElectLeaders: the outcome is None when a partition was elected, else the
    first partition's error ("ELECTION_NOT_NEEDED: t-0")."""
    results = controller.elect_leaders([target] if target else None,
                                       params["election_type"].upper())
    if any(e == 0 for e in results.values()):
        return None
    return next((f"{error_name(e)}: {tp}" for tp, e in sorted(results.items())), "no partition")


def _upgrade_format(cluster, controller, topic, params):
    t = cluster.store.topics.get(topic)
    if t is None:
        return f"no topic {topic}"
    t.message_format = params["message_format"]
    controller.send_update_metadata(cluster.store.all_tps())
    return None


def _retention(cluster, target, params):
    """Time retention on every live replica (each broker deletes its own old segments), or,
    with `log_start_offset`, DeleteRecords: only a broker that leads the partition moves its
    log start (`ReplicaManager.deleteRecords` -> `Partition.deleteRecordsOnLeader`; any other
    answers NOT_LEADER_OR_FOLLOWER), and its followers take it from their next Fetch answer
    (`follower_log_start_from_leader`)."""
    store = cluster.store
    tps = [target] if store.partition(target) else \
        [tp for tp in store.all_tps() if tp.rpartition("-")[0] == target]
    if not tps:
        return f"no partition or topic {target}"
    offset = params.get("log_start_offset")
    for broker in cluster.brokers.values():
        if broker.alive:
            for tp in tps:
                if offset is None or _leads(broker, tp):
                    broker.apply_retention(tp, offset)
    return None


def _leads(broker, tp: str) -> bool:
    p = broker.partitions.get(tp)
    return p is not None and p.is_leader


# -- explore -------------------------------------------------------------------------------
def draw_leader_move(pick, space, start) -> tuple[str, FaultStep]:
    """A partition and the leader move of it an explore draw makes (also `control_race`'s)."""
    tp = pick.one(space.tps)
    return tp, step(start, "move_leader", tp, {"to": pick.one(("next",) + space.brokers)})


def draw_reassignment(pick, space, start) -> tuple[str, FaultStep]:
    """A partition and a reassignment of it to 1..n brokers in a drawn order."""
    tp = pick.one(space.tps)
    ids = pick.permutation([int(b[1:]) for b in space.brokers])
    return tp, step(start, "reassign", tp, {"replicas": ids[:pick.integer(1, len(ids))]})


def reassignment_undo(space, tp: str, then: str, at_ms: int) -> FaultStep:
    """The operator's second thought at `at_ms`: `cancel` the reassignment of `tp`, or
    `revert` it to the scenario's replicas."""
    if then == "cancel":
        return step(at_ms, "cancel_reassignment", tp)
    return step(at_ms, "reassign", tp, {"replicas": list(dict(space.assignment)[tp])})


def _draw_move_leader(pick, space, start):
    """Move a leadership; maybe move it back (preferred election) a little later, the bounce
    that races LeaderAndIsr against clients' metadata (KIP-359)."""
    tp, move = draw_leader_move(pick, space, start)
    steps = [move]
    back = pick.maybe_integer(0, 20)
    if back is not None:
        steps.append(step(space.follow_up(start, back), "preferred_election", tp))
    return steps


def _draw_preferred_election(pick, space, start):
    return [step(start, "preferred_election", pick.one((None,) + space.tps))]


def _draw_reassign(pick, space, start):
    """Reassign a partition; maybe cancel it, or revert it to the scenario's replicas, a
    little later (the operator's second thoughts behind KIP-570 and KAFKA-13972)."""
    tp, move = draw_reassignment(pick, space, start)
    steps = [move]
    then = pick.one((None, "cancel", "revert"))
    if then is not None:
        steps.append(reassignment_undo(space, tp, then, space.follow_up(start, pick.integer(0, 20))))
    return steps


def _draw_elect_leaders(pick, space, start):
    """The admin's ElectLeaders for one partition or all, of a type the controllers' release
    takes by request (`space.election_types`). UNCLEAN elects only where no live leader is
    (KIP-460), so it meets a crash drawn before it; PREFERRED is as often drawn."""
    if not space.election_types:
        return []
    return [step(start, "elect_leaders", pick.one((None,) + space.tps),
                 {"election_type": pick.one(space.election_types)})]


def _draw_move_all_leaders(pick, space, start):
    return [step(start, "move_all_leaders", pick.one(space.brokers + space.roles()))]


def _draw_retention(pick, space, start):
    target = pick.one(space.tps + space.topics)
    offset = pick.maybe_integer(0, 100, scale=5)
    return [step(start, "retention", target, {} if offset is None else {"log_start_offset": offset})]


# -- words ---------------------------------------------------------------------------------
def _move_leader_words(target, params) -> str:
    to = params.get("to", "next")
    dest = "the next in-sync replica" if to == "next" else to
    return f"move the leadership of {target} to {dest}"


def _retention_words(target, params) -> str:
    if "log_start_offset" in params:
        return f"delete records of {target} below offset {params['log_start_offset']}"
    return f"run time-based retention on {target}"


def _topic_name(value, key, checks):
    return checks.topic_name(value, key)


ACTIONS = {a.name: a for a in (
    FaultAction(
        "move_leader", "partition", params={"to": (_to, "next")},
        apply=_with_controller(lambda cl, c, t, p: c.move_leader(t, p.get("to", "next"))),
        sentence=_move_leader_words, mark_colour="tab:orange",
        draws={"move_leader": _draw_move_leader}),
    FaultAction(
        "move_all_leaders", "broker",
        apply=_with_controller(lambda cl, c, t, p: c.move_all_leaders(int(t[1:]))),
        sentence=lambda t, p: f"move every leadership off {target_words(t)}",
        mark_colour="tab:orange", draws={"move_all_leaders": _draw_move_all_leaders}),
    FaultAction(
        "preferred_election", "partition?",
        apply=_with_controller(lambda cl, c, t, p: c.preferred_election(
            [t] if t else cl.store.all_tps())),
        sentence=lambda t, p: f"run a preferred leader election for {target_words(t)}",
        mark_colour="tab:orange", draws={"preferred_election": _draw_preferred_election}),
    FaultAction(
        "elect_leaders", "partition?", params={"election_type": (_election_type, REQUIRED)},
        apply=_with_controller(_elect_leaders),
        sentence=lambda t, p: f"send the controller an ElectLeaders "
        f"({p['election_type'].lower()}) for {target_words(t)}", mark_colour="tab:orange",
        draws={"elect_leaders": _draw_elect_leaders}),
    FaultAction(
        "reassign", "partition", params={"replicas": (_replicas, REQUIRED)},
        apply=_with_controller(lambda cl, c, t, p: c.reassign(t, list(p["replicas"]))),
        sentence=lambda t, p: f"reassign {t} to replicas {list(p['replicas'])}",
        draws={"reassign": _draw_reassign}),
    FaultAction(
        "cancel_reassignment", "partition",
        apply=_with_controller(lambda cl, c, t, p: c.cancel_reassignment(t)),
        sentence=lambda t, p: f"cancel the reassignment of {t}",
        undoes=("reassign",), pairs=same_target),
    FaultAction(
        "delete_topic", "topic",
        apply=_with_controller(lambda cl, c, t, p: c.delete_topic(t)),
        sentence=lambda t, p: f"delete topic {t}"),
    FaultAction(
        "create_topic", "none",
        params={"name": (_topic_name, REQUIRED), "partitions": (integer(1, 1000), 1),
                "replication_factor": (lambda v, k, c: c.int(v, k, 1, c.names.brokers),
                                       lambda names: min(3, names.brokers)),
                "message_format": (integer(0, 2), lambda names: names.message_format),
                "assignment": (_assignment, OPTIONAL)},
        apply=_with_controller(lambda cl, c, t, p: c.create_topic(
            p["name"], p.get("partitions", 1), p.get("replication_factor", 1),
            p.get("message_format", 2), _manual(p.get("assignment")))),
        sentence=lambda t, p: f"create topic {p['name']}"),
    FaultAction(
        "retention", "partition|topic", params={"log_start_offset": (integer(lo=0), OPTIONAL)},
        apply=_retention, sentence=_retention_words, draws={"retention": _draw_retention}),
    FaultAction(
        "upgrade_format", "topic", params={"message_format": (integer(0, 2), REQUIRED)},
        apply=_with_controller(_upgrade_format),
        sentence=lambda t, p: f"change the message format of {t} to v{p['message_format']}"),
)}
