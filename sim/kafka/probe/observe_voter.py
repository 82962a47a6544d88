"""What a probe can check on a voter under test (`sim.kafka.probe.observe` for the others).

Contract: `VOTER` maps each check of a Raft voter (`KafkaRaftClient`, KIP-595) to its
`Observable`: its quorum state as Kafka's `QuorumState` names it (`quorum_state`, with
`prospective` from 4.0, KIP-996; the
model's own `RaftQuorum.quorum_state`), `quorum_epoch`, `quorum_leader` and `voted_for` (voter names,
`"none"`), `quorum_voters` (its voter set, KIP-853) and `api_versions_sent_to`, its log (`log_records`, the record types), (`log_end_offset`, `log_epochs` as `[[epoch, count], ...]`), its
`high_watermark` (a leader's is "none" until a record of its epoch commits, Kafka's empty
`highWatermark()`), and the fields of its answer to the step's sender (`answered`,
`answer.<field>`): a VoteResponse's `granted` and `epoch`, a QuorumFetchResponse's `error`,
`epoch`, `leader`, `high_watermark`, `diverging_epoch` (`[epoch, end_offset]`) and `records`
(`[[epoch, count], ...]`), a DescribeQuorum answer's `error`, `leader`, `epoch`,
`high_watermark` (-1: none) and `voters` and `observers` (`[[replica, log_end_offset,
last_fetch_timestamp_ms, last_caught_up_timestamp_ms], ...]`, -1 where unknown). A field the model's answer does not carry reads `"none"`, except
`error`, which reads NONE on an answer that carries no error. What it asked during the step: `fetch_sent.<field>` (`epoch`, `fetch_offset`,
`last_fetched_epoch` and, from 4.1 (KIP-1166, Fetch v18), `high_watermark` of the last
QuorumFetch it sent: "none" where Kafka's is empty, a high watermark the voter does not know
or a Fetch without the field), `vote_sent.<field>` (`epoch`,
`last_epoch`, `last_offset`, `pre_vote` of the last Vote it sent) and `end_epoch_sent.<field>` (`epoch`,
`leader`, `preferred_successors` of the last EndQuorumEpoch it sent), `"none"` when it sent
none. The answer's `epoch`, `leader` and `error` read a BeginQuorumEpochResponse's and an
EndQuorumEpochResponse's too.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import NONE, Seen
from sim.kafka.probe.observable import Observable as Obs


def runs(epochs) -> list[list[int]]:
    """Epochs, one per record, as `[[epoch, count], ...]`."""
    out: list[list[int]] = []
    for epoch in epochs:
        if out and out[-1][0] == epoch:
            out[-1][1] += 1
        else:
            out.append([epoch, 1])
    return out


def _high_watermark(seen: Seen, _arg: str) -> Any:
    node = seen.node
    if node.role == "leader":
        hw = node._visible_hw()
        return hw if hw >= 0 else NONE
    return node.hw if node.hw_known else NONE


ANSWER_ATTRS = {"granted": "granted", "error": "error", "epoch": "epoch", "leader": "leader",
                "high_watermark": "high_watermark", "diverging_epoch": "diverging",
                "voters": "voters", "observers": "observers"}


def _answer(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, _arg: str) -> Any:
        if seen.answer is None:
            return NONE
        if name == "records":
            entries = getattr(seen.answer, "entries", None)
            return NONE if entries is None else runs(e[1] for e in entries)
        value = getattr(seen.answer, ANSWER_ATTRS[name], 0 if name == "error" else NONE)
        if name in ("voters", "observers") and value is not NONE:
            return [list(state) for state in value]
        return list(value) if isinstance(value, tuple) else value
    return read


SENT = {"fetch_sent": ("QuorumFetch", ("epoch", "fetch_offset", "last_fetched_epoch",
                                        "high_watermark")),
        "vote_sent": ("Vote", ("epoch", "last_epoch", "last_offset", "pre_vote")),
        "end_epoch_sent": ("EndQuorumEpoch", ("epoch", "leader", "preferred_successors"))}


def _sent_field(kind: str, name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, _arg: str) -> Any:
        for _dst, sent_kind, body in reversed(seen.sent):
            if sent_kind == kind:
                value = getattr(body, name)
                if name == "high_watermark" and (value is None or value < 0):
                    return NONE  # Kafka's OptionalLong.empty(): unknown, or not sent (pre-4.1)
                return list(value) if isinstance(value, tuple) else value
        return NONE
    return read


def _api_versions_dst(seen: Seen, _arg: str) -> Any:
    return next((dst for dst, kind, _b in reversed(seen.sent) if kind == "QuorumApiVersions"),
                NONE)


VOTER = {
    "answered": Obs(False, lambda s, a: s.answer is not None, "whether the node answered the step"),
    "quorum_state": Obs(False, lambda s, a: s.node.quorum_state(), "unattached, voted, follower, "
                        "prospective (KIP-996, 4.0+), candidate, leader or resigned (Kafka's "
                        "QuorumState)"),
    "quorum_epoch": Obs(False, lambda s, a: s.node.quorum_epoch, "the quorum epoch"),
    "quorum_leader": Obs(False, lambda s, a: s.node.leader, "the leader the voter knows"),
    "voted_for": Obs(False, lambda s, a: s.node.voted_for, "the candidate it voted for in its "
                     "epoch"),
    "quorum_voters": Obs(False, lambda s, a: list(s.node.voters), "its voter set (KIP-853: "
                         "the log's last VotersRecord, committed or not)"),
    "api_versions_sent_to": Obs(False, _api_versions_dst, "where the last ApiVersions it sent "
                                "during the step went (KIP-853's AddRaftVoter)"),
    "log_records": Obs(False, lambda s, a: [r.kind for _e, r in s.node.entries],
                       "its log's record types, in order (a probe's placeholders are NoOpRecord)"),
    "log_end_offset": Obs(False, lambda s, a: s.node.end_offset, "its metadata log's end offset"),
    "log_epochs": Obs(False, lambda s, a: runs(e for e, _r in s.node.entries),
                      "its log's epochs as [[epoch, count], ...]"),
    "high_watermark": Obs(False, _high_watermark, "its high watermark (a leader's: none until "
                          "a record of its epoch commits)"),
    **{f"answer.{name}": Obs(False, _answer(name), f"the answer's {name}", name == "error")
       for name in (*ANSWER_ATTRS, "records")},
    **{f"{prefix}.{name}": Obs(False, _sent_field(kind, name), f"the {name} of the last {kind} "
                               "the node sent during the step")
       for prefix, (kind, names) in SENT.items() for name in names},
}
