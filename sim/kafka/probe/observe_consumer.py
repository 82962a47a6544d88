"""What a probe can check on a consumer under test (`sim.kafka.probe.observe` for the others).

Contract: `CONSUMER` maps each consumer-only check name to its `Observable`, read from the model's `Consumer`
after a step: a partition's position as Kafka's `SubscriptionState` holds it (the offset,
`offset_epoch`, the (leader, epoch) it was last fetched from or validated against, its fetch
state: `fetching`, `await_validation` or `await_reset`), the records it consumed during the
step, what waits in its buffer for the application's poll, the client's metadata cache, and the fields of the requests it sent during the step
(`SENT`: `<prefix>.<field>:<tp>`, the partition's entry in the last such request).
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import NONE, Seen
from sim.kafka.probe.observable import Observable as Obs
from sim.kafka.rules.offsets import RESET_TIMESTAMPS

RESET_STRATEGIES = {ts: name for name, ts in RESET_TIMESTAMPS.items()}

# prefix -> (the request kind, the partition fields a check may read)
SENT = {"fetch_sent": ("Fetch", ("fetch_offset", "current_leader_epoch")),
        "validation_sent": ("OffsetsForLeaderEpoch", ("current_leader_epoch", "leader_epoch")),
        "list_offsets_sent": ("ListOffsets", ("current_leader_epoch", "timestamp"))}


def fetch_state(seen: Seen, tp: str) -> str:
    """Kafka's `FetchStates` of the position: AWAIT_RESET, AWAIT_VALIDATION or FETCHING;
    INITIALIZING for a position no reset policy will give an offset (`none`), "none" for a
    partition not assigned."""
    node = seen.node
    if tp not in node.assigned:
        return NONE
    if tp in node.awaiting_reset:
        return "await_reset" if node.reset_strategy[tp] is not None else "initializing"
    return "await_validation" if tp in node.awaiting else "fetching"


def _position(seen: Seen, tp: str) -> Any:
    """The position's offset; "none" while it waits for a reset (`position(tp)` is null) or
    when the partition is not assigned."""
    node = seen.node
    return NONE if tp in node.awaiting_reset or tp not in node.assigned else node.position[tp]


def _offset_epoch(seen: Seen, tp: str) -> Any:
    epoch = seen.node.offset_epoch[tp]
    return NONE if tp in seen.node.awaiting_reset or epoch < 0 else epoch


def _position_leader(index: int) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        leader = seen.node.position_leader.get(tp)
        return NONE if leader is None or leader[index] < 0 else leader[index]
    return read


def _reset_strategy(seen: Seen, tp: str) -> Any:
    """`SubscriptionState.resetStrategy(tp)` while the position waits for a reset: "earliest" or
    "latest"; "none" when it waits for none (NONE) or does not wait."""
    node = seen.node
    if tp not in node.awaiting_reset or tp not in node.assigned:
        return NONE
    return RESET_STRATEGIES.get(node.reset_strategy[tp], NONE)


def _consumed(seen: Seen, tp: str) -> int:
    return sum(ev["count"] for ev in seen.events if ev["kind"] == "consume" and ev["tp"] == tp)


def _returned(epochs: bool) -> Callable[[Seen, str], Any]:
    """The records of tp the step's last return of records held, in order: their offsets, or
    their batches' leader epochs (`ConsumerRecord.leaderEpoch`: "none" for a batch without
    one, magic v0/v1); [] when the step returned none for tp."""
    def read(seen: Seen, tp: str) -> Any:
        if not any(ev["kind"] == "consume" and ev["tp"] == tp for ev in seen.events):
            return []
        start, end, batches = seen.node.last_returned[tp]
        return [(NONE if e[2] < 0 else e[2]) if epochs else off for e in batches if e[3].count
                for off in range(max(e[0], start), min(e[0] + e[1], end))]
    return read


def _fetch_error(seen: Seen, tp: str) -> Any:
    for ev in reversed(seen.events):
        if ev["kind"] == "fetch_error" and ev["tp"] == tp:
            return ev["error"]
    return 0


def _exception(seen: Seen, tp: str) -> Any:
    """The last exception the step surfaced for tp (`consumer_error`), by Kafka's class."""
    for ev in reversed(seen.events):
        if ev["kind"] == "consumer_error" and ev["tp"] == tp:
            return ev["exception"]
    return NONE


def _divergent(seen: Seen, tp: str) -> Any:
    """The divergent offset of the last LogTruncationException the step surfaced for tp
    (`LogTruncationException.divergentOffsets`), "none" without one."""
    for ev in reversed(seen.events):
        if ev["kind"] == "consumer_error" and ev["tp"] == tp:
            return ev["divergent"][0] if ev["divergent"] else NONE
    return NONE


def sent_field(kind: str, name: str) -> Callable[[Seen, str], Any]:
    """The `name` field of `tp` in the last `kind` request the node sent during the step."""
    def read(seen: Seen, tp: str) -> Any:
        for _dst, sent_kind, body in reversed(seen.sent):
            if sent_kind == kind:
                for part in body.partitions:
                    if part.tp == tp:
                        return getattr(part, name)
        return NONE
    return read


def sent_observable(name: str) -> Obs | None:
    prefix, _, field = name.partition(".")
    kind, fields = SENT.get(prefix, ("", ()))
    if field not in fields:
        return None
    return Obs(True, sent_field(kind, field), f"the {field} of the partition in the last {kind} "
               "the consumer sent during the step")


# the consumer's own checks (`observe.CONSUMER` adds the common and client-metadata ones)
CONSUMER = {
    "position": Obs(True, _position, "the position's offset (none while it waits for a reset)"),
    "offset_epoch": Obs(True, _offset_epoch, "the leader epoch of the record before the position "
                        "(`FetchPosition.offsetEpoch`; none if unknown)"),
    "position_leader": Obs(True, _position_leader(0), "the leader the position was last fetched "
                           "from or validated against (`FetchPosition.currentLeader`)"),
    "position_leader_epoch": Obs(True, _position_leader(1), "that leader's epoch"),
    "fetch_state": Obs(True, fetch_state, "fetching, await_validation or await_reset"),
    "awaiting_validation": Obs(True, lambda s, tp: fetch_state(s, tp) == "await_validation",
                               "whether the position waits for validation (KIP-320)"),
    "offset_reset_needed": Obs(True, lambda s, tp: fetch_state(s, tp) == "await_reset",
                               "whether the position waits for a reset (`isOffsetResetNeeded`)"),
    "reset_strategy": Obs(True, _reset_strategy, "the strategy the position waits for a reset "
                          "by (`resetStrategy`): earliest or latest; none if it waits for none"),
    "assigned": Obs(True, lambda s, tp: tp in s.node.assigned,
                    "whether tp is assigned to the consumer (`isAssigned`)"),
    "paused": Obs(True, lambda s, tp: tp in s.node.paused, "whether tp is paused (`isPaused`)"),
    "exception": Obs(True, _exception, "the exception the application's poll raises for tp "
                     "for what the step brought: with no reset policy NoOffsetForPartitionException, "
                     "OffsetOutOfRangeException or LogTruncationException; a reset's "
                     "TopicAuthorizationException; none if none"),
    "divergent_offset": Obs(True, _divergent, "the divergent offset of that "
                            "LogTruncationException (`divergentOffsets`), none without one"),
    "buffered": Obs(True, lambda s, tp: s.node.buffered(tp), "whether an answer for tp waits "
                    "in the buffer for a poll, or is being read (`bufferedPartitions`: not "
                    "fetched again meanwhile)"),
    "has_completed_fetches": Obs(False, lambda s, _a: bool(s.node.completed), "whether "
                                 "completed fetches wait in the buffer (`hasCompletedFetches`)"),
    "has_available_fetches": Obs(False, lambda s, _a: any(
        s.node.is_fetchable(cf.data.tp) for cf in s.node.completed), "whether one of them is for "
        "a fetchable partition (`hasAvailableFetches`)"),
    "consumed": Obs(True, _consumed, "the records of tp the consumer took during the step"),
    "consumed_offsets": Obs(True, _returned(False), "the offsets of the records of tp the "
                            "step's last return of records (a poll, or an answer taken as it "
                            "came) held, in order; [] if none"),
    "consumed_epochs": Obs(True, _returned(True), "their leader epochs "
                           "(`ConsumerRecord.leaderEpoch`; none for a batch without one)"),
    "fetch_error": Obs(True, _fetch_error, "the error tp's last Fetch answer of the step carried "
                       "(NONE if none)", True),
}
