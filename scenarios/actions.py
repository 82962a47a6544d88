"""Fault actions, targets and random mixes of a scenario file.

Contract:
- values are read with `scenarios.tables` (`Table`, the `check_*` helpers) and errors raised as
  its `Bad`; nothing here knows the file;
- `ACTIONS` maps each fault action to the kind of target it takes and its params;
- `check_faults(items, names, run)` returns the scripted steps as `FaultStep`s sorted by time
  (stable); `check_mixes(items, names, run)` returns the random mixes as resolved dicts in file
  order, in the shape `sim.core.faults.materialise_mix` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scenarios.tables import (
    NAME_RE,
    Bad,
    Names,
    Table,
    check_int,
    check_list,
    check_number,
    check_str,
    describe,
    suggest,
    unknown_key,
)
from sim.core.faults import DEFAULT_UNDO, FaultStep, sorted_schedule
from sim.core.network import RULE_ACTIONS
from sim.kafka.options import RunOptions

MESSAGE_KINDS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica", "Produce", "ProduceResponse",
                 "Fetch", "FetchResponse", "Metadata", "MetadataResponse", "AlterPartition",
                 "AlterPartitionResponse", "LeaderAndIsrResponse", "StopReplicaResponse",
                 "UpdateMetadataResponse", "OffsetsForLeaderEpoch",
                 "OffsetsForLeaderEpochResponse")
# How a power loss decides what a log had on disk (`power_loss`'s flush).
FLUSH_MODES = ("age", "writeback")
# Recovery actions: the only ones allowed in the quiet settle window at the end of a run.
SETTLE_SAFE = ("heal", "clear_rules", "restart")
MAX_TOPIC_NAME = 249  # Topic.MAX_NAME_LENGTH
ROLE_HINT = "or a role: leader:<topic>-<p>, follower:<topic>-<p>"


def check_node(value: Any, key: str, names: Names, also: tuple = ()) -> str:
    """`value` as the name of an existing node (broker, controller or client), or one of
    `also`."""
    check_str(value, key)
    if value not in names.nodes() and value not in also:
        more = "".join(f", or {a}" for a in also)
        raise Bad(key, f"no node '{value}' ({names.summary()}{more})", "name an existing node")
    return value


def check_link_end(value: Any, key: str, names: Names) -> str:
    """`value` as an end of a network link: a node, or "zk", the metadata store's place on
    the network (a node cut from it cannot renew its session, as with ZooKeeper)."""
    return check_node(value, key, names, also=("zk",))


def check_partition(value: Any, key: str, names: Names) -> str:
    """`value` as an existing partition "<topic>-<p>"."""
    check_str(value, key)
    topic, _, index = value.rpartition("-")
    if not topic or not (index.isascii() and index.isdigit()) or index != str(int(index)):
        raise Bad(key, f"'{value}' is not a partition", 'write "<topic>-<p>" with no leading '
                  'zeros, e.g. "t-0"')
    if topic not in names.topics:
        raise Bad(key, f"unknown topic '{topic}'", suggest(topic, sorted(names.topics)))
    if int(index) >= names.topics[topic]:
        raise Bad(key, f"topic '{topic}' has {names.topics[topic]} partition(s), no {index}",
                  f"use a partition 0..{names.topics[topic] - 1}")
    return value


def check_topic(value: Any, key: str, names: Names) -> str:
    """`value` as an existing topic name."""
    check_str(value, key)
    if value not in names.topics:
        raise Bad(key, f"unknown topic '{value}'", suggest(value, sorted(names.topics)))
    return value


def _check_role_or_node(value: Any, key: str, names: Names, brokers_only: bool) -> str:
    """A node name or role; with `brokers_only`, the node must be (or resolve to) a broker."""
    check_str(value, key)
    role, sep, rest = value.partition(":")
    if sep and role in ("leader", "follower"):
        check_partition(rest, key, names)
        return value
    if value == "controller" and not brokers_only:
        return value
    valid = names.broker_names() if brokers_only else names.nodes()
    if value not in valid:
        known = value in names.nodes() or value == "controller"
        what = "is not a broker" if known else "does not exist"
        raise Bad(key, f"'{value}' {what} ({names.summary()})",
                  f"name an existing broker {ROLE_HINT}" if brokers_only
                  else f"name an existing node {ROLE_HINT.replace(': ', ': controller, ')}")
    return value


def _check_any_target(value: Any, key: str, names: Names) -> str:
    """Anything a target may name; used where the action ignores its target."""
    for check in (check_partition, check_topic):
        try:
            return check(value, key, names)
        except Bad:
            pass
    return _check_role_or_node(value, key, names, brokers_only=False)


TARGETS: dict[str, tuple[Callable | None, bool]] = {
    # kind -> (checker, target required)
    "node": (lambda v, k, n: _check_role_or_node(v, k, n, False), True),
    "broker": (lambda v, k, n: _check_role_or_node(v, k, n, True), True),
    "partition": (check_partition, True),
    "partition?": (check_partition, False),
    "topic": (check_topic, True),
    "partition|topic": (lambda v, k, n: check_topic(v, k, n) if check_str(v, k) in n.topics
                        else check_partition(v, k, n), True),
    "node?": (lambda v, k, n: _check_role_or_node(v, k, n, False), False),
    "ignored": (_check_any_target, False),  # heal/clear_rules: mix undo steps carry a target
    "none": (None, False),
}


def check_target(action: str, value: Any, key: str, names: Names) -> str | None:
    """`value` as the target of `action` (None when absent and allowed)."""
    checker, required = TARGETS[ACTIONS[action].target]
    if value is None:
        if required:
            raise Bad(key, f"'{action}' needs a target ({ACTIONS[action].target})",
                      f"add {key.rpartition('.')[2]} = ... ({names.summary()})")
        return None
    if checker is None:
        raise Bad(key, f"'{action}' takes no target", "remove target")
    return checker(value, key, names)


# -- params ------------------------------------------------------------------------------
REQUIRED, OPTIONAL = object(), object()


def _groups(value, key, names):
    groups = check_list(value, key)
    if len(groups) < 2:
        raise Bad(key, "a partition needs at least two groups", 'write [["b1"], ["b2", "b3"]]')
    seen: set[str] = set()
    for i, group in enumerate(groups):
        for j, node in enumerate(check_list(group, f"{key}[{i}]")):
            check_link_end(node, f"{key}[{i}][{j}]", names)
            if node in seen:
                raise Bad(f"{key}[{i}][{j}]", f"'{node}' is in two groups", "list each node once")
            seen.add(node)
    return groups


def _replicas(value, key, names):
    for j, broker in enumerate(check_list(value, key)):
        check_int(broker, f"{key}[{j}]", 1, names.brokers)
    if len(set(value)) != len(value):
        raise Bad(key, f"duplicate broker id in {value}", "list each broker id once")
    return value


def _to(value, key, names):
    if check_str(value, key) == "next":
        return value
    if value not in names.broker_names():
        raise Bad(key, f"'{value}' is not a broker ({names.summary()})",
                  'use a broker name or "next"')
    return value


def check_topic_name(value, key: str) -> str:
    """A topic name Kafka would accept (`org.apache.kafka.common.internals.Topic.validate`):
    1-249 of letters, digits, '.', '_' and '-', and neither "." nor ".."; raises Bad."""
    if (not NAME_RE.fullmatch(check_str(value, key)) or value in (".", "..")
            or len(value) > MAX_TOPIC_NAME):
        raise Bad(key, f"invalid topic name {value!r}", "use 1-249 letters, digits, '.', '_' "
                  "or '-' (not \".\" or \"..\"), as Kafka does")
    return value


def _topic_name(value, key, names):
    return check_topic_name(value, key)


def _rule(params, key, names):
    """Cross-param checks of a network rule: each rule kind's own required params."""
    kind = params["rule"]
    if kind in ("delay", "reorder") and "delay_ms" not in params:
        raise Bad(f"{key}.delay_ms", f"missing: rule '{kind}' needs delay_ms", "add delay_ms = 100")
    if kind not in ("delay", "reorder") and "delay_ms" in params:
        raise Bad(f"{key}.delay_ms", f"rule '{kind}' does not delay", "remove delay_ms")
    if (kind == "hold") != ("release_kind" in params):
        raise Bad(f"{key}.release_kind", "release_kind is required for hold and only for hold",
                  f"{'add' if kind == 'hold' else 'remove'} release_kind")
    if "src" in params and params.get("dst") == params["src"]:
        raise Bad(f"{key}.dst", f"a rule from {params['src']!r} to itself: a node sends itself "
                  "no message, so it would match nothing", "name another node as dst")


@dataclass(frozen=True)
class Action:
    target: str  # a key of TARGETS
    params: dict = field(default_factory=dict)  # name -> (checker, REQUIRED|OPTIONAL|default)
    cross: Callable | None = None  # checks across params


def _kind(v, k, n):
    return check_str(v, k, MESSAGE_KINDS)


def _cut_name(v, k, n):
    """A cut's name: ties `isolate`, `partition` or `block` steps to the `heal` that ends
    them (and only them)."""
    if not isinstance(v, str) or not NAME_RE.fullmatch(v) or len(v) > 64:
        raise Bad(k, f"{describe(v)} is no cut name",
                  "use up to 64 letters, digits, '.', '_' or '-', e.g. cut = \"a\"")
    return v


_CUT = {"cut": (_cut_name, OPTIONAL)}


def _n(lo=None, hi=None, above=None):
    return lambda v, k, n: check_number(v, k, lo, hi, above)


def _i(lo=None, hi=None):
    return lambda v, k, n: check_int(v, k, lo, hi)


ACTIONS: dict[str, Action] = {
    "crash": Action("node"),
    "restart": Action("node"),
    "isolate": Action("node", _CUT),
    "controlled_shutdown": Action("broker"),
    # a crash that also loses what the OS had not written to disk: the batches appended in
    # the last unflushed_ms (30 s: Linux writes a dirty page back once it is
    # vm.dirty_expire_centisecs = 3000 old), or with flush = "writeback" what each log got
    # since the kernel's flusher last wrote it back, unflushed_ms being that expiry
    "power_loss": Action("broker", {"unflushed_ms": (_n(lo=0), 30_000),
                                    "flush": (lambda v, k, n: check_str(v, k, FLUSH_MODES),
                                              OPTIONAL)}),
    "partition": Action("none", {"groups": (_groups, REQUIRED), **_CUT}),
    "block": Action("node", {"dst": (check_link_end, REQUIRED), **_CUT}),
    "heal": Action("ignored", _CUT),
    # the network resets connections (a middlebox's RST, a flapping interface): what is in
    # flight on them is lost and both ends are told
    "reset_connections": Action("node", {"peer": (check_node, OPTIONAL)}),
    # the optional target is the rule's destination when `dst` is not given, so a mix can
    # aim one rule at a randomly drawn node
    "rule": Action("node?", {
        "rule": (lambda v, k, n: check_str(v, k, RULE_ACTIONS), REQUIRED),
        "kind": (_kind, OPTIONAL), "src": (check_node, OPTIONAL), "dst": (check_node, OPTIONAL),
        "delay_ms": (_n(lo=0), OPTIONAL), "count": (_i(lo=1), OPTIONAL),
        "duration_ms": (_n(above=0), OPTIONAL), "release_kind": (_kind, OPTIONAL)}, _rule),
    "clear_rules": Action("ignored", {
        "kind": (_kind, OPTIONAL),
        # written by materialise_mix on undo steps: the action whose rules are cleared
        "of": (lambda v, k, n: check_str(v, k, list(ACTIONS)), OPTIONAL)}),
    "move_leader": Action("partition", {"to": (_to, "next")}),
    "move_all_leaders": Action("broker"),
    "preferred_election": Action("partition?"),
    "reassign": Action("partition", {"replicas": (_replicas, REQUIRED)}),
    "cancel_reassignment": Action("partition"),
    "delete_topic": Action("topic"),
    "create_topic": Action("none", {
        "name": (_topic_name, REQUIRED), "partitions": (_i(1, 1000), 1),
        "replication_factor": (lambda v, k, n: check_int(v, k, 1, n.brokers),
                               lambda n: min(3, n.brokers)),
        "message_format": (_i(0, 2), 2)}),
    "retention": Action("partition|topic", {"log_start_offset": (_i(lo=0), OPTIONAL)}),
    "upgrade_format": Action("topic", {"message_format": (_i(0, 2), REQUIRED)}),
}


# The param that names the other end of the link a fault action cuts or resets, or that a
# rule matches (a rule's target is its dst when it names none; `_rule` checks src = dst).
_OTHER_END = {"block": "dst", "reset_connections": "peer", "rule": "src"}


def check_not_self(action: str, target: str | None, params: dict, prefix: str,
                   target_key: str, blame_target: bool = False) -> None:
    """Refuse a link fault whose two ends are one node (`block` b1 -> b1, `reset_connections`
    of b1 with b1): a node has no link to itself, so the fault would do nothing, silently, as
    [[network.links]] refuses self-links. Roles (leader:t-0) resolve only when the step
    fires. The error names the param, or with `blame_target` the target (a mix's targets
    entry)."""
    other = _OTHER_END.get(action)
    if other is None or other not in params or params[other] != target:
        return
    if action == "rule" and "dst" in params:  # the target is not the rule's destination
        return
    raise Bad(target_key if blame_target else f"{prefix}.{other}",
              f"'{action}' between {target!r} and itself: a node has no link to itself",
              f"name another node as {other if not blame_target else 'target'}")


def check_params(action: str, raw: dict, prefix: str, names: Names,
                 also_valid: tuple = ()) -> dict:
    """The params of `action` checked, defaults filled; unknown names are errors."""
    spec = ACTIONS[action].params
    for name in raw:
        if name not in spec and not (spec or also_valid):
            raise Bad(f"{prefix}.{name}", f"'{action}' takes no params", f"remove {name}")
        if name not in spec:
            raise unknown_key(f"{prefix}.{name}", name, list(spec) + list(also_valid))
    out = {}
    for name, (checker, default) in spec.items():
        if name in raw:
            out[name] = checker(raw[name], f"{prefix}.{name}", names)
        elif default is REQUIRED:
            raise Bad(f"{prefix}.{name}", f"missing: '{action}' requires {name}",
                      f"add {name} = ...")
        elif default is not OPTIONAL:
            out[name] = default(names) if callable(default) else default
    if ACTIONS[action].cross:
        ACTIONS[action].cross(out, prefix, names)
    return out


# -- scripted steps and random mixes -------------------------------------------------------
def _at_us(t: Table, duration_ms: int) -> int:
    """The step time in µs from exactly one of at_ms / at_us (at_us keeps replays exact)."""
    if "at_ms" not in t.data and "at_us" not in t.data:
        raise Bad(t.path("at_ms"), "missing required key", "add at_ms = <time>")
    if "at_ms" in t.data and "at_us" in t.data:
        raise Bad(t.path("at_us"), "give only one of at_ms and at_us", "remove one")
    if "at_ms" in t.data:
        at_us = t.int("at_ms", lo=0) * 1000
    else:
        at_us = t.int("at_us", lo=0)
    t.asked += ["at_ms", "at_us"]
    if at_us >= duration_ms * 1000:
        raise Bad(t.path("at_ms" if "at_ms" in t.data else "at_us"),
                  f"at {at_us / 1000:g} ms is not before run.duration_ms = {duration_ms}",
                  "move the step earlier or raise run.duration_ms")
    return at_us


def check_step(item: Any, key: str, names: Names, run: RunOptions) -> FaultStep:
    """One [[faults]] entry as a FaultStep; its keys other than at/action/target are params."""
    t = Table(item, key)
    at_us = _at_us(t, run.duration_ms)
    action = t.str("action", choices=list(ACTIONS))
    target = check_target(action, t.raw("target", None), t.path("target"), names)
    base = ("at_ms", "at_us", "action", "target")
    raw = {k: v for k, v in t.data.items() if k not in base}
    params = check_params(action, raw, key, names, also_valid=base)
    check_not_self(action, target, params, key, t.path("target"))
    quiet_us = (run.duration_ms - run.settle_ms) * 1000
    if at_us >= quiet_us and action not in SETTLE_SAFE:
        raise Bad(t.path("at_ms" if "at_ms" in t.data else "at_us"),
                  f"'{action}' at {at_us / 1000:g} ms falls in the settle window "
                  f"(from {quiet_us // 1000} ms)",
                  f"move it earlier or lower run.settle_ms "
                  f"(only {', '.join(SETTLE_SAFE)} may run there)")
    return FaultStep(at_us, action, target, params)


def check_faults(items: Any, names: Names, run: RunOptions) -> list[FaultStep]:
    """All [[faults]] entries as steps, stably sorted by time."""
    steps = [check_step(item, f"faults[{i}]", names, run)
             for i, item in enumerate(check_list(items, "faults", nonempty=False))]
    return sorted_schedule(steps)


def _mix_duration(t: Table) -> Any:
    """duration_ms of a mix: a number >= 0 or [min, max]; None when absent."""
    value = t.raw("duration_ms", None)
    if isinstance(value, list):
        if len(value) != 2:
            raise Bad(t.path("duration_ms"), f"expected [min, max], got {describe(value)}",
                      "write two numbers, e.g. [1000, 5000]")
        lo = check_number(value[0], t.path("duration_ms") + "[0]", lo=0)
        hi = check_number(value[1], t.path("duration_ms") + "[1]", lo=0)
        if lo > hi:
            raise Bad(t.path("duration_ms"), f"min {lo} exceeds max {hi}", "swap them")
        return value
    return None if value is None else check_number(value, t.path("duration_ms"), lo=0)


def _mix_undo(t: Table, action: str, targets: list, has_duration: bool, names: Names) -> Any:
    """The undo action of a mix: explicit or the default; it must work on the mix's targets."""
    undo = t.raw("undo", None)
    if undo is None:
        undo = DEFAULT_UNDO.get(action) if has_duration else None
        if has_duration and undo is None:
            raise Bad(t.path("duration_ms"), f"'{action}' has no default undo action",
                      'add undo = "<action>" or remove duration_ms')
        return undo
    # Undo steps may land in the settle window, so only recovery actions may undo.
    check_str(undo, t.path("undo"), SETTLE_SAFE)
    if not has_duration:
        raise Bad(t.path("undo"), "undo fires after duration_ms, which is missing",
                  "add duration_ms or remove undo")
    if targets == [None] and TARGETS[ACTIONS[undo].target][1]:
        # a mix without targets gives its undo steps none: no `undo = ...` fixes that
        raise Bad(t.path("undo"), f"'{undo}' needs a target, and a '{action}' mix has none to "
                  "give it", 'use undo = "heal" or "clear_rules", which need none')
    for target in targets:
        check_target(undo, target, t.path("undo"), names)
    return undo


# Steps of all mixes together, undo steps included: they are materialised up front
# (sim.core.faults.materialise_mix), before run.max_events can stop anything.
MAX_MIX_STEPS = 1_000_000


def check_mix(item: Any, key: str, names: Names, run: RunOptions) -> dict:
    """One [[mix]] entry resolved: window filled, targets and params checked for its action."""
    t = Table(item, key)
    action = t.str("action", choices=list(ACTIONS))
    # at least 1 ms between a mix's faults: a finer one materialises millions of steps
    out: dict[str, Any] = {"action": action, "every_ms": t.number("every_ms", lo=1)}
    targets = t.raw("targets", None)
    if targets is not None:
        check_list(targets, t.path("targets"))
        for j, target in enumerate(targets):
            check_target(action, target, f"{key}.targets[{j}]", names)
        out["targets"] = targets
    else:
        check_target(action, None, t.path("targets"), names)
    duration = _mix_duration(t)
    undo = _mix_undo(t, action, targets or [None], duration is not None, names)
    if duration is not None:
        out.update(duration_ms=duration, undo=undo)
    quiet_ms = run.duration_ms - run.settle_ms
    # faults stop settle_ms before the end, so the window must open before then: blame
    # start_ms (not an end_ms the user may not have written) when it opens too late
    start = t.int("start_ms", 0, lo=0)
    if start >= quiet_ms:
        raise Bad(t.path("start_ms"), f"{start} is not before the settle period, which starts "
                  f"at {quiet_ms} (run.duration_ms - run.settle_ms)",
                  f"use a start_ms below {quiet_ms}, or raise run.duration_ms")
    out["start_ms"] = start
    out["end_ms"] = t.int("end_ms", quiet_ms, lo=start + 1, hi=quiet_ms)
    raw = t.raw("params", {})
    out["params"] = check_params(action, Table(raw, t.path("params")).data, t.path("params"), names)
    for j, target in enumerate(targets or [None]):
        check_not_self(action, target, out["params"], t.path("params"), f"{key}.targets[{j}]",
                       blame_target=True)
    t.done()
    return out


def check_mixes(items: Any, names: Names, run: RunOptions) -> list[dict]:
    """All [[mix]] entries, resolved, in file order; together they may materialise about
    MAX_MIX_STEPS steps at most (each mix under the cap, many mixes could exhaust memory)."""
    mixes, total = [], 0.0
    for i, item in enumerate(check_list(items, "mix", nonempty=False)):
        mix = check_mix(item, f"mix[{i}]", names, run)
        steps = mix_steps(mix)
        total += steps
        if total > MAX_MIX_STEPS:
            alone = f"fires about {steps:.3g} steps" if i == 0 else (
                f"brings the mixes' steps to about {total:.3g}")
            raise Bad(f"mix[{i}].every_ms", f"{alone} between start_ms and end_ms (undo steps "
                      f"included), more than the {MAX_MIX_STEPS:,} steps a schedule may hold",
                      "raise every_ms, narrow the windows or drop a mix")
        mixes.append(mix)
    return mixes


def mix_steps(mix: dict) -> float:
    """About how many steps a resolved mix materialises: one per mean gap in its window, and
    an undo step after each when it has a duration_ms."""
    fired = (mix["end_ms"] - mix["start_ms"]) / mix["every_ms"]
    return fired * (2 if "duration_ms" in mix else 1)


def created_topics(*lists: Any) -> dict[str, int]:
    """Topics that create_topic steps/mixes make (name -> partitions), so targets may name them.

    Best effort over unchecked input: the entries themselves are checked later.
    """
    out: dict[str, int] = {}
    for items in lists:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or item.get("action") != "create_topic":
                continue
            params = item.get("params", item)  # mixes nest params, steps do not
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                continue
            parts = params.get("partitions", 1)
            parts = parts if isinstance(parts, int) and not isinstance(parts, bool) else 1
            out[params["name"]] = max(out.get(params["name"], 0), parts)
    return out
