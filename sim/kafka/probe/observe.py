"""What a probe can check after a step: the node's answer, its state, and what it did next.

Contract: an expectation key is `name` or `name:arg` (`arg` is a partition such as `t-0`, a
batch id, or `t-0/<producer id>`). `BROKER` and `PRODUCER` (and the consumer's `CONSUMER`, in
`observe_consumer`, joined to the client checks here) map each name to an `Observable`
(does it take an argument, how to read it from a `Seen` — the node, the answer it sent to the
step's sender, everything it sent and every trace event it recorded during the step). `value`
reads one key; `normalise` puts an expected and an observed value in one comparable form
(error codes as Kafka's names, tuples as lists, absence as "none"). `check_key` says what is
wrong with a key for a role, or None.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.partition import NEVER_US
from sim.kafka.probe import (
    observe_consumer,
    observe_controller,
    observe_fetch_session,
    observe_session,
    observe_voter,
)
from sim.kafka.probe.observable import COMMON, NONE, Observable, Seen
from sim.kafka.probe.observe_isr import ISR
from sim.kafka.probe.observe_producer_ids import PRODUCER_IDS
from sim.kafka.vocab import error_name, outcome_name

__all__ = ["NONE", "Observable", "Seen", "check_key", "expected", "is_error", "names",
           "normalise", "observable", "split_key", "value"]


# -- the answer ---------------------------------------------------------------------------
ANSWER_NAMES = {"diverging": "diverging_epoch", "entries": "records"}


def answer_parts(body) -> dict:
    """tp -> {field: value} of an answer's per-partition data, under Kafka's field names."""
    if body is None:
        return {}
    if hasattr(body, "partition_errors"):
        return {tp: {"error": err} for tp, err in body.partition_errors}
    parts = getattr(body, "results", None) or getattr(body, "partitions", ())
    out = {}
    for p in parts:
        if isinstance(p, tuple) and hasattr(p, "_asdict"):
            data = {ANSWER_NAMES.get(k, k): v for k, v in p._asdict().items()}
            data["records"] = [[e[0], e[1], e[2]] for e in data.get("records", ())]
            out[p.tp] = data
        else:  # MetadataResponse: (tp, topic_id, leader, leader_epoch)
            out[p[0]] = {"topic_id": p[1], "leader": p[2], "leader_epoch": p[3]}
    return out


def _answer_field(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        return answer_parts(seen.answer).get(tp, {}).get(name, NONE)
    return read


def _answer_error(seen: Seen, arg: str) -> Any:
    return getattr(seen.answer, "error", 0) if seen.answer is not None else NONE


# -- broker state -------------------------------------------------------------------------
def _part(attr: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        p = seen.node.partitions.get(tp)
        return getattr(p, attr) if p is not None else NONE
    return read


def _proposed_isr(seen: Seen, tp: str) -> Any:
    p = seen.node.partitions.get(tp)
    return p.pending_isr if p is not None and p.pending_isr is not None else NONE


def _proposed_isr_epochs(seen: Seen, tp: str) -> Any:
    """The broker epochs the in-flight AlterPartition carries for its ISR, -1 for each when
    its version carries none (as Kafka's `isrWithBrokerEpoch` then is)."""
    p = seen.node.partitions.get(tp)
    req = p.alter_request if p is not None else None
    if req is None:
        return NONE
    return list(req.isr_epochs) if req.isr_epochs else [-1] * len(req.isr)


def _maximal_isr(seen: Seen, tp: str) -> Any:
    p = seen.node.partitions.get(tp)
    return seen.node.rules.maximal_isr(p.isr, p.pending_isr) if p is not None else NONE


def _log(read_log: Callable) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        held = seen.node.logs.get(tp)
        return read_log(held[1]) if held is not None else NONE
    return read


def _fetching_from(seen: Seen, tp: str) -> int:
    for leader, parts in sorted(seen.node.fetchers.items()):
        if tp in parts:
            return leader
    return -1


def _fetcher_added(seen: Seen, tp: str) -> int:
    """The leader the step last (re)started tp's fetcher toward, -1 if it did not."""
    leaders = [leader for added, leader in seen.fetcher_added if added == tp]
    return leaders[-1] if leaders else -1


def _producer(attr: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, arg: str) -> Any:
        tp, _, pid = arg.rpartition("/")
        held = seen.node.logs.get(tp)
        entry = getattr(held[1], "producers", {}).get(int(pid)) if held and pid.isdigit() else None
        if entry is None:
            return NONE
        return entry.epoch if attr == "epoch" else (entry.batches[-1][1] if entry.batches else NONE)
    return read


def _follower(seen: Seen, arg: str):
    """The leader's `Replica` for one follower (arg tp/broker id), or None."""
    tp, _, broker = arg.rpartition("/")
    p = seen.node.partitions.get(tp)
    return p.followers.get(int(broker)) if p is not None and broker.isdigit() else None


def _follower_leo(seen: Seen, arg: str) -> Any:
    """A leader's view of one follower's log end (arg tp/broker id): -1 until it fetches."""
    replica = _follower(seen, arg)
    return replica.leo if replica is not None else NONE


def _follower_caught_up(seen: Seen, arg: str) -> Any:
    """A leader's `lastCaughtUpTimeMs` for one follower (arg tp/broker id): "never" (Kafka's
    0), or "step N", the step during which it was last caught up (Kafka's tests assert it
    against a mock clock that stands still, where a step is an instant), or the time in ms
    when that was before the first step."""
    replica = _follower(seen, arg)
    if replica is None:
        return NONE
    at = replica.caught_up_as_of()
    if at == NEVER_US:
        return "never"
    steps = [i for i, start in enumerate(seen.step_starts) if start <= at]
    return f"step {steps[-1]}" if steps else at // 1000


def _metadata(index: int) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        entry = seen.node.metadata.get(tp)
        return entry[index] if entry is not None else NONE
    return read


def _sent_error(seen: Seen, arg: str) -> Any:
    """The error for a partition in the last message of a kind the node sent during the step,
    to anyone (arg `Kind/tp`): an answer the step released, e.g. a parked Produce's."""
    kind, _, tp = arg.partition("/")
    for _dst, sent_kind, body in reversed(seen.sent):
        if sent_kind == kind:
            return answer_parts(body).get(tp, {}).get("error", NONE)
    return NONE


Obs = Observable
BROKER = {
    **COMMON,
    **observe_session.SESSION, **ISR, **PRODUCER_IDS,
    "answered": Obs(False, lambda s, a: s.answer is not None, "whether the node answered the step"),
    "error": Obs(False, _answer_error, "the answer's request-level error", True),
    "leader_epoch": Obs(True, _part("leader_epoch"), "the replica's leader epoch"),
    "partition_epoch": Obs(True, _part("partition_epoch"), "the replica's partition epoch"),
    "leader": Obs(True, _part("leader"), "the leader the replica knows"),
    "isr": Obs(True, _part("isr"), "the replica's ISR (as leader)"),
    "maximal_isr": Obs(True, _maximal_isr, "the ISR the leader counts while an AlterPartition "
                       "is in flight (Kafka's `partitionState.maximalIsr`)"),
    "proposed_isr": Obs(True, _proposed_isr, "the ISR of the leader's AlterPartition in "
                        "flight (Kafka's pending state's `sentLeaderAndIsr`), none when none is"),
    "proposed_isr_epochs": Obs(True, _proposed_isr_epochs, "the broker epoch of each member of "
                               "that ISR, in its order, as the AlterPartition carries them "
                               "(KIP-903's `NewIsrWithEpochs`; -1 not checked, and -1 each "
                               "for a version that carries none), none when none is in flight"),
    "replicas": Obs(True, _part("replicas"), "the replica's assignment"),
    "hosted": Obs(True, lambda s, tp: tp in s.node.partitions, "whether the partition is online here"),
    "log_exists": Obs(True, lambda s, tp: tp in s.node.logs, "whether the log is on disk (not deleted)"),
    "log_end_offset": Obs(True, _log(lambda log: log.leo), "the log end offset"),
    "high_watermark": Obs(True, _log(lambda log: log.hw), "the high watermark"),
    "log_start_offset": Obs(True, _log(lambda log: log.log_start_offset), "the log start offset"),
    "epoch_cache": Obs(True, _log(lambda log: [list(e) for e in log.epochs]),
                     "the leader-epoch cache as [[epoch, start offset], ...]"),
    "follower_log_end_offset": Obs(True, _follower_leo, "a leader's view of a follower's log "
                                   "end (arg tp/broker id), -1 before it fetches"),
    "follower_last_caught_up": Obs(True, _follower_caught_up, "a leader's lastCaughtUpTimeMs "
                                   "for a follower (arg tp/broker id): never, or \"step N\", "
                                   "the step it fell in"),
    "fetching_from": Obs(True, _fetching_from, "the leader whose fetcher holds the partition, or -1"),
    "fetcher_added": Obs(True, _fetcher_added, "the leader the step (re)started the partition's "
                         "fetcher toward (`addFetcherForPartitions`), -1 if it did not"),
    "controller_epoch": Obs(False, lambda s, a: s.node.controller_epoch, "the controller epoch known"),
    "metadata_leader": Obs(True, _metadata(1), "the leader in the broker's metadata cache"),
    "metadata_leader_epoch": Obs(True, _metadata(2), "the leader epoch in the metadata cache"),
    "sent_error": Obs(True, _sent_error, "the error for tp in the last `Kind` message the node "
                      "sent during the step, to anyone (arg Kind/tp, e.g. ProduceResponse/t-0)", True),
    "producer_epoch": Obs(True, _producer("epoch"), "a producer's epoch in the partition's "
                        "producer state (arg tp/producer_id)"),
    "last_sequence": Obs(True, _producer("seq"), "a producer's last sequence in the partition's "
                       "producer state (arg tp/producer_id)"),
    "producer_snapshots": Obs(True, _log(lambda log: [o for o, _ in log.snapshots]),
                              "the offsets of the log's producer-state snapshots, lowest first"),
}


# -- producer state -----------------------------------------------------------------------
def _batch(seen: Seen, bid: str):
    bid = _batch_id(seen, bid)
    for queue in seen.node.queues.values():
        for pb in queue:
            if pb.batch.bid == bid:
                return pb
    return None


def _batch_id(seen: Seen, name: str) -> str:
    """The batch a name stands for: a record the application sent (`Send`) reads the batch it
    joined; any other name is a batch's own id."""
    return getattr(seen.node, "record_batch", {}).get(name, name)


def _batch_state(seen: Seen, bid: str) -> str:
    bid = _batch_id(seen, bid)
    for ev in reversed(seen.events):
        if ev.get("bid") == bid and ev["kind"] in ("ack", "produce_failed"):
            return "acked" if ev["kind"] == "ack" else "failed"
    pb = _batch(seen, bid)
    if pb is None:
        return NONE
    return "in_flight" if pb.in_flight else ("retrying" if pb.attempts else "queued")


def _batch_error(seen: Seen, bid: str) -> Any:
    bid = _batch_id(seen, bid)
    for ev in reversed(seen.events):
        if ev.get("bid") == bid and ev["kind"] == "produce_error":
            return ev["error"]
        if ev.get("bid") == bid and ev["kind"] == "produce_failed":
            return outcome_name(ev["error"])  # a client-side outcome, or Kafka's error
    return 0


def _batch_offset(seen: Seen, bid: str) -> Any:
    """The base offset the batch's acknowledgement reported (-1: acknowledged without one, as
    after DUPLICATE_SEQUENCE_NUMBER); "none" while it is not acknowledged."""
    bid = _batch_id(seen, bid)
    for ev in reversed(seen.events):
        if ev.get("bid") == bid and ev["kind"] == "ack":
            return ev["base_offset"]
    return NONE


def _batch_attr(read_pb: Callable) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, bid: str) -> Any:
        pb = _batch(seen, bid)
        return read_pb(pb) if pb is not None else NONE
    return read


def _client_meta(index: int) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        entry = seen.node.meta.parts.get(tp)
        return entry[index] if entry is not None else NONE
    return read


def _last_seen(seen: Seen, tp: str):
    entry = seen.node.meta.last_seen.get(tp)
    return entry[0] if entry is not None else NONE


PRODUCER = {
    **COMMON,
    "producer_id": Obs(False, lambda s, a: s.node.pid, "the producer id"),
    "producer_epoch": Obs(False, lambda s, a: s.node.producer_epoch, "the producer epoch"),
    "closed": Obs(False, lambda s, a: s.node.closed, "the Sender's thread ended after a close"),
    "next_sequence": Obs(True, lambda s, tp: s.node.next_seq.get(tp, 0), "the next sequence to assign"),
    "last_acked_sequence": Obs(True, lambda s, tp: s.node.last_acked_seq.get(tp, -1),
                             "the last acknowledged sequence"),
    "batch": Obs(True, _batch_state, "a batch's state: acked, failed, in_flight, retrying, queued"),
    "batch_error": Obs(True, _batch_error, "the error the batch last met (NONE if none)", True),
    "batch_sequence": Obs(True, _batch_attr(lambda pb: pb.batch.base_seq), "a batch's base sequence"),
    "batch_epoch": Obs(True, _batch_attr(lambda pb: pb.batch.producer_epoch), "a batch's producer epoch"),
    "batch_attempts": Obs(True, _batch_attr(lambda pb: pb.attempts), "a batch's retries so far"),
    "batch_offset": Obs(True, _batch_offset, "the base offset a batch was acknowledged at in the "
                      "step (-1: without one)"),
    "last_acked_offset": Obs(True, lambda s, tp: s.node.last_acked_offset.get(tp, -1),
                           "the last acknowledged offset (-1: none)"),
    "nodes": Obs(False, lambda s, a: sorted(s.node.meta.brokers), "the broker ids the client knows"),
    "sequence_epoch": Obs(True, lambda s, tp: s.node.part_epoch.get(tp, s.node.producer_epoch),
                        "the producer epoch tp's sequences belong to "
                        "(`TransactionManager.producerIdAndEpoch(tp)`)"),
    "leader": Obs(True, _client_meta(1), "the leader in the client's metadata"),
    "leader_epoch": Obs(True, _client_meta(2), "the leader epoch in the client's metadata"),
    "last_seen_epoch": Obs(True, _last_seen, "the client's last seen leader epoch of tp "
                           "(`Metadata.lastSeenLeaderEpoch`), which outlives the cache"),
    "known": Obs(True, lambda s, tp: tp in s.node.meta.parts, "whether the client's metadata has tp"),
    "metadata_update_requested": Obs(False, lambda s, a: bool(s.node.need_update),
                                   "whether the client wants a metadata update"),
}
# the client metadata checks a consumer shares with the producer
CLIENT = ("leader", "leader_epoch", "last_seen_epoch", "known", "nodes",
          "metadata_update_requested")
CONSUMER = {**COMMON, **{name: PRODUCER[name] for name in CLIENT}, **observe_consumer.CONSUMER}
CONTROLLER = {**COMMON, **observe_controller.CONTROLLER}
ZK_CONTROLLER = {**COMMON, **observe_controller.ZK_CONTROLLER}
VOTER = {**COMMON, **observe_voter.VOTER}
ROLES = {"broker": BROKER, "producer": PRODUCER, "consumer": CONSUMER, "controller": CONTROLLER,
         "zk_controller": ZK_CONTROLLER, "voter": VOTER}
ANSWER_FIELDS = ("error", "high_watermark", "log_start_offset", "records", "diverging_epoch",
                 "current_leader", "leader_epoch", "end_offset",
                 "base_offset", "topic_id", "leader", "offset", "low_watermark", "timestamp")


def observable(role: str, name: str) -> Observable | None:
    if role in ("broker", "consumer") and name in observe_fetch_session.FETCH_SESSION:
        return observe_fetch_session.FETCH_SESSION[name]
    if role == "broker" and name.startswith("answer."):
        fld = name[len("answer."):]
        if fld in ANSWER_FIELDS:
            return Obs(True, _answer_field(fld), f"the answer's {fld} for the partition", fld == "error")
        return None
    if role == "broker" and name.startswith("session."):
        return observe_session.session_observable(name)
    if role == "broker" and name.startswith(("fetch_sent.", "list_offsets_sent.")):
        return observe_session.fetch_sent_observable(name)
    if role == "consumer" and "." in name:
        return observe_consumer.sent_observable(name)
    return ROLES[role].get(name)


def split_key(key: str) -> tuple[str, str]:
    name, _, arg = key.partition(":")
    if name == "error" and arg:  # `error:<tp>` is short for the partition's answer error
        return "answer.error", arg
    return name, arg


def check_key(role: str, key: str) -> str | None:
    name, arg = split_key(key)
    obs = observable(role, name)
    if obs is None:
        return "unknown"
    if obs.takes_arg and not arg:
        return f"needs an argument: write {name}:<partition or batch>"
    if arg and not obs.takes_arg:
        return f"takes no argument: write {name}"
    return None


def is_error(role: str, key: str) -> bool:
    return observable(role, split_key(key)[0]).error


def value(role: str, key: str, seen: Seen) -> Any:
    name, arg = split_key(key)
    obs = observable(role, name)
    return normalise(obs.read(seen, arg), obs.error)


def expected(role: str, key: str, raw: Any) -> Any:
    obs = observable(role, split_key(key)[0])
    return normalise(raw, obs.error)


def normalise(v: Any, is_error: bool = False) -> Any:
    if is_error and isinstance(v, int) and not isinstance(v, bool):
        return error_name(v)
    if v is None:
        return NONE
    if isinstance(v, tuple | list):
        return [normalise(x) for x in v]
    return v


def names(role: str) -> list[str]:
    sent = [f"{prefix}.{f}" for prefix, (_k, fields) in observe_session.SENT.items() for f in fields]
    extra = ([f"answer.{f}" for f in ANSWER_FIELDS] + sent
             + [f"session.{f}" for f in observe_session.SESSION_FIELDS] if role == "broker" else [])
    if role == "consumer":
        extra = [f"{prefix}.{f}" for prefix, (_kind, fields) in observe_consumer.SENT.items()
                 for f in fields]
    if role in ("broker", "consumer"):
        extra += list(observe_fetch_session.FETCH_SESSION)
    return sorted(ROLES[role]) + extra
