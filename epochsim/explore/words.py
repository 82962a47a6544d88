"""A fault schedule in plain words, one line a step.

Contract: `describe(step)` returns one English sentence for a `FaultStep` (no time), and
`story(steps)` returns `t=<seconds>s <sentence>` lines in schedule order, e.g.
"t=3.000s hold StopReplica to b3 until a later LeaderAndIsr". Role targets read as roles
("the leader of t-0"). Unknown actions fall back to "<action> <target> <params>".
"""

from __future__ import annotations


def target_words(target: str | None) -> str:
    if target is None:
        return "every partition"
    if target == "controller":
        return "the active controller"
    role, _, tp = target.partition(":")
    if role == "leader" and tp:
        return f"the leader of {tp}"
    if role == "follower" and tp:
        return f"a follower of {tp}"
    return target


def _messages(p: dict) -> str:
    """`StopReplica from c1 to b3`, `every message to b1`..."""
    text = p.get("kind", "every message")
    if "src" in p:
        text += f" from {p['src']}"
    if "dst" in p:
        text += f" to {p['dst']}"
    return text


def _ms(value) -> str:
    return f"{value:g} ms"


def _rule(p: dict) -> str:
    rule = p["rule"]
    what = _messages(p)
    if rule == "hold":
        text = f"hold {what} until a later {p['release_kind']}"
    elif rule == "delay":
        text = f"delay {what} by {_ms(p['delay_ms'])}"
    elif rule == "reorder":
        text = f"reorder {what} (up to {_ms(p['delay_ms'])} extra each, no FIFO)"
    elif rule == "drop":
        text = f"drop {what}"
    else:
        text = f"{rule} {what}"
    limits = []
    if "count" in p:
        limits.append(f"{p['count']} message{'s' if p['count'] != 1 else ''}")
    if "duration_ms" in p:
        limits.append(f"for {p['duration_ms'] / 1000:g} s")
    return text + (f" ({', '.join(limits)})" if limits else "")


def _reassign(target, p) -> str:
    return f"reassign {target} to replicas {list(p['replicas'])}"


def _move_leader(target, p) -> str:
    to = p.get("to", "next")
    dest = "the next in-sync replica" if to == "next" else to
    return f"move the leadership of {target} to {dest}"


def _retention(target, p) -> str:
    if "log_start_offset" in p:
        return f"delete records of {target} below offset {p['log_start_offset']}"
    return f"run time-based retention on {target}"


_SENTENCES = {
    "crash": lambda t, p: f"crash {target_words(t)}",
    "restart": lambda t, p: f"restart {target_words(t)}",
    "isolate": lambda t, p: f"isolate {target_words(t)} from every other node",
    "block": lambda t, p: f"cut the link {target_words(t)} -> {p['dst']}",
    "partition": lambda t, p: "partition the network into "
                              + " | ".join(", ".join(g) for g in p["groups"]),
    "heal": lambda t, p: "heal every cut link",
    "rule": lambda t, p: _rule(p),
    "clear_rules": lambda t, p: (f"clear the network rules for {p['kind']}" if "kind" in p
                                 else "clear every network rule (release held messages)"),
    "move_leader": _move_leader,
    "move_all_leaders": lambda t, p: f"move every leadership off {target_words(t)}",
    "preferred_election": lambda t, p: f"run a preferred leader election for {target_words(t)}",
    "reassign": _reassign,
    "cancel_reassignment": lambda t, p: f"cancel the reassignment of {t}",
    "controlled_shutdown": lambda t, p: f"controlled shutdown of {target_words(t)} "
                                        "(it stops 0.5 s later)",
    "delete_topic": lambda t, p: f"delete topic {t}",
    "create_topic": lambda t, p: f"create topic {p['name']}",
    "retention": _retention,
    "upgrade_format": lambda t, p: f"change the message format of {t} to v{p['message_format']}",
}


def describe(step) -> str:
    """One sentence for `step` (a FaultStep)."""
    sentence = _SENTENCES.get(step.action)
    if sentence is not None:
        try:
            return sentence(step.target, step.params)
        except KeyError:
            pass  # a param is missing: fall through to the literal form
    extra = " ".join(f"{k}={v}" for k, v in step.params.items())
    return " ".join(x for x in (step.action, step.target or "", extra) if x)


def story(steps) -> list[str]:
    """`t=<s>s <sentence>` for each step, in order."""
    return [f"t={s.at_us / 1e6:.3f}s {describe(s)}" for s in steps]
