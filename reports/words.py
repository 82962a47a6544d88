"""Trace events in plain words: one short sentence per event, Kafka's own names.

Contract: `describe(ev)` returns a sentence without the time ("b3 applied LeaderAndIsr t-0
leader epoch 3 (follower of b1)"); `describe_fault(ev)` the nemesis' action ("hold StopReplica
to b3 until a later LeaderAndIsr"); `describe_send(ev)` a message ("StopReplica(delete) t-0").
Unknown kinds fall back to "<node> <kind> key=value ...", so a new event kind never breaks a
report. Pure functions of the event dicts; nothing here reads files.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.faults import ACTIONS

error_name, outcome_name = V.error_name, V.outcome_name


def broker(broker_id) -> str:
    return "no leader" if broker_id is None or broker_id < 0 else f"b{broker_id}"


def _client_epoch(ev: dict) -> str:
    """A client's current leader changed: learnt, dropped from its cache, or made stale."""
    answered = ev.get("from", ev.get("source"))
    if ev["leader"] >= 0:
        return (f"{ev['node']} learned {ev['tp']} leader {broker(ev['leader'])} "
                f"epoch {ev['leader_epoch']} (from {answered})")
    why = "dropped it from its metadata" if ev.get("dropped") else "has only stale metadata"
    return (f"{ev['node']} knows no leader of {ev['tp']} (last seen epoch {ev['leader_epoch']}): "
            f"{why} (from {answered})")


def _epoch(epoch) -> str:
    return "none" if epoch is None or epoch < 0 else str(epoch)


# -- faults -------------------------------------------------------------------------------

def fault_sentence(action: str, target: str | None, params: dict) -> str:
    """One sentence for a fault step (no time), in the words of its action
    (`sim.kafka.faults`, `FaultAction.sentence`). Role targets read as roles ("the leader of
    t-0"); a step with a missing parameter or an unknown action reads literally."""
    known = ACTIONS.get(action)
    if known is not None:
        try:
            return known.sentence(target, params)
        except KeyError:
            pass  # a param is missing: fall through to the literal form
    extra = " ".join(f"{k}={v}" for k, v in params.items())
    return " ".join(x for x in (action, target or "", extra) if x)


def describe_fault(ev: dict) -> str:
    """The action of a `fault` event, with its resolved target ("crash c1 (controller)")."""
    role, resolved = ev.get("target"), ev.get("resolved")
    text = fault_sentence(ev.get("action", "?"), resolved or role, ev.get("params") or {})
    return f"{text} ({role})" if role and resolved and role != resolved else text


# -- messages -----------------------------------------------------------------------------

def describe_send(ev: dict) -> str:
    """A sent message by its kind and brief fields: 'LeaderAndIsr t-0 leader b1 epoch 3'."""
    msg = ev.get("msg", "?")
    parts = ev.get("parts")
    if msg == "LeaderAndIsr" and parts:
        return f"{msg} " + ", ".join(f"{tp} leader {broker(ld)} epoch {e}" for tp, ld, e in parts)
    if msg == "StopReplica" and parts:
        return ", ".join(f"{msg}({'delete' if d else 'no delete'}) {tp}" +
                         (f" epoch {e}" if e is not None and e >= 0 else "") for tp, e, d in parts)
    if msg == "Produce" and parts:
        return f"{msg} " + ", ".join(f"{bid} to {tp}" for tp, bid, _ in parts)
    if msg in ("ProduceResponse", "FetchResponse") and ev.get("errs"):
        return f"{msg} " + ", ".join(f"{tp} {error_name(e)}" for tp, e in ev["errs"])
    if ev.get("error"):
        return f"{msg} {error_name(ev['error'])}"
    if msg == "AlterPartition":
        return f"{msg} {ev.get('tp')} isr {ev.get('isr')}"
    return msg


# -- events -------------------------------------------------------------------------------

def _replica_state(ev):
    role = "leader" if ev["role"] == "leader" else f"follower of {broker(ev.get('leader'))}"
    return (f"{ev['node']} applied LeaderAndIsr {ev['tp']} leader epoch {ev['leader_epoch']} "
            f"({role})")


def _stop_replica(ev):
    what = "StopReplica(delete)" if ev.get("delete") else "StopReplica"
    head = f"{ev['node']} {{}} {what} for {ev['tp']} issued at leader epoch {ev['issued_epoch']}"
    local = f" (own leader epoch {_epoch(ev.get('local_epoch'))})"
    if ev.get("result") == "fenced":
        return head.format("fenced") + local + f": {error_name(ev.get('error'))}"
    if ev.get("result") == "not_hosted":
        return head.format("received") + " for a partition it does not host"
    return head.format("applied") + local


def _partition_state(ev):
    return (f"{ev['node']} (controller) set {ev['tp']}: leader {broker(ev['leader'])}, "
            f"leader epoch {ev['leader_epoch']}, isr {ev['isr']}, replicas {ev['replicas']} "
            f"({ev.get('reason', '')})")


def _metadata(ev):
    changes = ", ".join(f"{tp} leader {broker(ld)} epoch {_epoch(e)}"
                        for tp, ld, e in ev.get("changes", [])[:4])
    if not changes:  # only the live-broker list changed
        alive = ", ".join(broker(b) for b in ev.get("alive", [])) or "none"
        return f"{ev['node']} updated its metadata: live brokers {alive}"
    more = len(ev.get("changes", [])) - 4
    return f"{ev['node']} updated its metadata: {changes}" + (f" (+{more} more)" if more > 0 else "")


def _metadata_fenced(ev):
    parts = ", ".join(ev.get("tps", [])[:4]) + (" and" if ev.get("tps") and ev.get("alive") else "")
    alive = " the live-broker list" if ev.get("alive") else ""
    return (f"{ev['node']} kept newer metadata: ignored{(' ' + parts) if parts else ''}{alive} of a "
            "late UpdateMetadata")


def _append(ev):
    batches = ev.get("batches") or [ev]
    b = batches[0]
    text = (f"{ev['node']} appended {b.get('bid')} to {b.get('tp')} at leader epoch "
            f"{b.get('leader_epoch')}")
    if b.get("sender_epoch") is not None:
        text += f" (producer knew epoch {b['sender_epoch']})"
    return text + (f" (+{len(batches) - 1} batches)" if len(batches) > 1 else "")


_SIMPLE = {
    V.CRASH: lambda ev: f"{ev['node']} crashed",
    V.HALT: lambda ev: (f"{ev['node']} halted: its log of {ev['tp']} ends at {ev['log_end_offset']}, "
                        f"past its leader's {ev['leader_end_offset']}, and it may not truncate"),
    V.RESTART: lambda ev: f"{ev['node']} restarted",
    V.BROKER_REGISTERED: lambda ev: (
        f"{ev['node']} registered again after ZooKeeper expired its session: broker epoch "
        f"{ev['broker_epoch']} (was {ev['previous_epoch']})"
        + (f", which it learns {ev['known_in_us'] / 1000:g} ms later" if ev.get("known_in_us")
           else "")),
    V.BROKER_START_FAILED: lambda ev: (
        f"{ev['node']} could not start: its old ZooKeeper session still holds its registration "
        f"(broker epoch {ev['registered_epoch']}, {ev['error']}) for "
        f"{ev['expires_in_us'] / 1000:g} ms more, so it shuts down"),
    V.CONTROLLER_ELECTED: lambda ev: (f"{ev['node']} became the active controller "
                                      f"(controller epoch {ev['controller_epoch']})"),
    V.CONTROLLER_RESIGNED: lambda ev: (f"{ev['node']} resigned as controller "
                                       f"({ev.get('reason', '')})"),
    V.LOG_CREATED: lambda ev: f"{ev['node']} created its log of {ev['tp']}",
    V.LOG_DELETED: lambda ev: f"{ev['node']} deleted its log of {ev['tp']}",
    V.TOPIC_DELETED: lambda ev: f"{ev['node']} deleted topic {ev['topic']}",
    V.TOPIC_DELETION_COMPLETED: lambda ev: f"{ev['node']} completed the deletion of topic {ev['topic']}",
    V.TRUNCATE: lambda ev: (f"{ev['node']} truncated {ev['tp']} to offset {ev['to_offset']} "
                            f"({ev.get('reason', '')})"),
    V.ACK: lambda ev: (f"{ev['node']} got the ack of {ev['bid']} ({ev['tp']} offset "
                       f"{ev.get('base_offset')}, {ev.get('latency_us', 0) / 1000:g} ms)"),
    V.PRODUCE_ERROR: lambda ev: (f"{ev['node']} got {error_name(ev['error'])} for {ev['bid']} "
                                 f"on {ev['tp']}; {ev.get('action')}"),
    V.PRODUCE_FAILED: lambda ev: (f"{ev['node']} failed {ev.get('bid') or 'a batch'} on "
                                  f"{ev.get('tp')}: {outcome_name(ev['error'])}"),
    V.CLIENT_EPOCH: lambda ev: _client_epoch(ev),
    V.METADATA_REJECTED: lambda ev: (f"{ev['node']} rejected stale metadata for {ev['tp']}: epoch "
                                     f"{ev['leader_epoch']} < known {ev['known_epoch']}"),
    V.LAI_REJECTED: lambda ev: f"{ev['node']} rejected LeaderAndIsr: " + ", ".join(
        f"{p[0]} epoch {p[1]} vs own {p[2]} ({error_name(p[3])})" for p in ev.get("partitions", [])),
    V.LAI_LEADER_UNAVAILABLE: lambda ev: (
        f"{ev['node']} left LeaderAndIsr unapplied, its leader not alive in its metadata: "
        + ", ".join(f"{p[0]} leader {broker(p[1])} epoch {p[2]} (own {p[3]})"
                    for p in ev.get("partitions", []))),
    V.STALE_CONTROLLER: lambda ev: (f"{ev['node']} rejected {ev['request']} from controller epoch "
                                    f"{ev['req_controller_epoch']} < {ev['local_controller_epoch']}"),
    V.ALTER_PARTITION: lambda ev: (f"{ev['node']} handled AlterPartition {ev['tp']} from "
                                   f"{broker(ev.get('from'))}: isr {ev.get('isr')}"
                                   + (f" {error_name(ev['error'])}" if ev.get("error") else "")),
    V.PRODUCE_RESULT: lambda ev: (f"{ev['node']} answered {ev['bid']} on {ev['tp']} with "
                                  f"{error_name(ev['error'])}"),
    V.DUP_APPEND: lambda ev: f"{ev['node']} detected duplicate {ev['bid']} on {ev['tp']}",
    V.SEND: lambda ev: f"{ev['node']} sent {describe_send(ev)} to {ev['dst']}",
    V.DELIVER: lambda ev: f"{ev['node']} received message #{ev['mid']} from {ev['src']}",
    V.DROP: lambda ev: f"network dropped message #{ev['mid']} ({ev.get('reason')})",
    V.HOLD: lambda ev: f"network held message #{ev['mid']} (rule {ev.get('rule')})",
    V.STALL: lambda ev: f"message #{ev['mid']} waits on a cut link until it heals",
    V.FAULT: lambda ev: f"nemesis: {describe_fault(ev)}",
    V.FAULT_OUTCOME: lambda ev: f"nemesis: step {ev.get('step')} {ev.get('outcome')}",
    V.END: lambda ev: f"run ended ({ev.get('stopped_by')})",
    V.REPLICA_STATE: _replica_state,
    V.STOP_REPLICA: _stop_replica,
    V.PARTITION_STATE: _partition_state,
    V.METADATA: _metadata,
    V.METADATA_FENCED: _metadata_fenced,
    V.APPEND: _append,
}

_BASE_KEYS = ("seq", "t", "node", "kind")


def describe(ev: dict) -> str:
    """One sentence for one event, without its time."""
    fn = _SIMPLE.get(ev.get("kind"))
    if fn is not None:
        try:
            return fn(ev)
        except (KeyError, TypeError, IndexError, ValueError):
            pass  # a field missing from an older trace: fall back to the raw fields
    fields = " ".join(f"{k}={ev[k]}" for k in ev if k not in _BASE_KEYS)
    return f"{ev.get('node')} {ev.get('kind')} {fields}".rstrip()
