"""The KRaft quorum's own messages a probe can deliver to a voter under test (KIP-595).

Contract: `RAFT_KINDS` maps `Vote`, `VoteResponse`, `BeginQuorumEpoch`,
`BeginQuorumEpochResponse`, `EndQuorumEpoch`, `EndQuorumEpochResponse`, `QuorumFetch` and
`QuorumFetchResponse` to their `Kind` (joined to `sim.kafka.probe.wire.KINDS`); each body is
the model's own message (`sim.kafka.kraft_messages`), so a probe passes through the handlers
of `sim.kafka.quorum.RaftQuorum` that a run does. Each comes from a controller of the quorum
(`c<n>`: a voter, or an observer when the probe's `voters` leave it out), a QuorumFetch also
from a broker (an observer). The sender is the candidate of a
Vote (or the prospective of a pre-vote, `pre_vote = true`: KIP-996, 4.0+; an earlier
profile's Vote carries no PreVote and refuses it, `sim.kafka.probe.gates`), the leader of a
BeginQuorumEpoch or an EndQuorumEpoch unless `leader` says otherwise (`"none"`: LeaderId -1),
and the replica of a QuorumFetch (a voter by its name, `c<n>`), whose
`max_wait_ms` is its MaxWaitMs (default the fetchers' `metadata_fetch_wait_ms`). Also the
client's own calls, acts of the operator on the voter: `Resign` (`resign(epoch)`) and
`RaftShutdown` (`shutdown(timeoutMs)`); and KIP-853's (`sim.kafka.probe.wire_voters`). A QuorumFetchResponse's `records` are the log's
epochs as `[[epoch, count], ...]`, records being NoOp placeholders at offsets from the
node's last QuorumFetch to the sender (0 if it sent none), all committed unless
`high_watermark` says less; its `leader` is the sender unless given (`"none"`: no leader).
A VoteResponse names no leader unless given, and carries `error` (default NONE).
`check_raft_body(kind, fields, key, voters)` refuses what a voter could not be sent: a leader
or a preferred successor that is not a voter, and records out of epoch order or above the
answer's epoch. (A malformed Fetch, a negative offset, last fetched epoch or MaxWaitMs, is
delivered: the voter answers it INVALID_REQUEST, as Kafka's does.)
"""

from __future__ import annotations

from sim.kafka.kraft_messages import (
    NO_OP,
    BeginQuorumEpoch,
    EndQuorumEpoch,
    MetadataRecord,
    QuorumAnswer,
    QuorumFetch,
    QuorumFetchResponse,
    Vote,
    VoteResponse,
)
from sim.kafka.probe.fields import Field, FieldProblem, suggest
from sim.kafka.probe.kind import NO, Kind
from sim.kafka.probe.wire_voters import VOTER_CHANGE_KINDS

VOTER = ("voter",)
NO_LEADER = "none"  # a leader field's "no leader known" (Kafka's leader id -1)


def _leader(given: str, ctx) -> str | None:
    if given == NO_LEADER:
        return None
    return given or ctx.src


def _vote(f: dict, ctx) -> Vote:
    return Vote(f["epoch"], ctx.src, f["last_epoch"], f["last_offset"], f["pre_vote"])


def _vote_response(f: dict, ctx) -> VoteResponse:
    """A voter's answer to the node's Vote or pre-vote; it names no leader unless told."""
    return VoteResponse(f["epoch"], f["granted"], f["error"], _leader(f["leader"] or NO_LEADER,
                                                                      ctx))


def _begin_quorum_epoch(f: dict, ctx) -> BeginQuorumEpoch:
    return BeginQuorumEpoch(f["epoch"], _leader(f["leader"], ctx))


def _end_quorum_epoch(f: dict, ctx) -> EndQuorumEpoch:
    return EndQuorumEpoch(f["epoch"], _leader(f["leader"], ctx), tuple(f["preferred_successors"]))


def _quorum_answer(f: dict, ctx) -> QuorumAnswer:
    """A voter's answer to the node's BeginQuorumEpoch or EndQuorumEpoch."""
    return QuorumAnswer(f["epoch"], _leader(f["leader"], ctx), f["error"])


def _quorum_fetch(f: dict, ctx) -> QuorumFetch:
    """A voter's or an observer's (a broker `b<n>`, or a controller outside the probe's
    `voters`) Fetch of the metadata log."""
    return QuorumFetch(f["epoch"], ctx.src, f["fetch_offset"], f["last_fetched_epoch"],
                       ctx.src in ctx.quorum_voters(), f["corr"] or ctx.corr("QuorumFetch"),
                       f["high_watermark"], f["max_wait_ms"])


def epochs_of(runs: tuple) -> list[int]:
    """`[[epoch, count], ...]` as one epoch per record."""
    return [epoch for epoch, count in runs for _ in range(count)]


def _quorum_fetch_response(f: dict, ctx) -> QuorumFetchResponse:
    start = ctx.metadata_offset()
    entries = tuple((start + i, epoch, MetadataRecord.of(NO_OP))
                    for i, epoch in enumerate(epochs_of(f["records"])))
    hw = start + len(entries) if f["high_watermark"] == NO else f["high_watermark"]
    return QuorumFetchResponse(f["epoch"], _leader(f["leader"], ctx), f["error"], entries, hw,
                               f["diverging_epoch"], f["corr"] or ctx.corr("QuorumFetch"))


# a BeginQuorumEpochResponse's or an EndQuorumEpochResponse's fields; the leader defaults to
# the sender, as for a QuorumFetchResponse
ANSWER_FIELDS = (Field("epoch", "int"), Field("leader", "str", ""), Field("error", "error", 0))

RAFT_KINDS: dict[str, Kind] = {
    "Vote": Kind(VOTER, (Field("epoch", "int"), Field("last_epoch", "int"),
                         Field("last_offset", "int"), Field("pre_vote", "bool", False)),
                 _vote, "a candidate's Vote request, or a prospective's pre-vote (`pre_vote`, "
                 "KIP-996: at its own epoch) (the sender is the candidate)", from_voter=True),
    "VoteResponse": Kind(VOTER, (Field("epoch", "int"), Field("granted", "bool"),
                                 Field("leader", "str", ""), Field("error", "error", 0)),
                         _vote_response, "a voter's answer to the node's Vote or pre-vote",
                         from_voter=True),
    "BeginQuorumEpoch": Kind(VOTER, (Field("epoch", "int"), Field("leader", "str", "")),
                             _begin_quorum_epoch, "a new leader's BeginQuorumEpoch",
                             from_voter=True),
    "BeginQuorumEpochResponse": Kind(
        VOTER, ANSWER_FIELDS, _quorum_answer, "a voter's answer to the node's BeginQuorumEpoch",
        from_voter=True),
    "EndQuorumEpoch": Kind(
        VOTER, (Field("epoch", "int"), Field("leader", "str", ""),
                Field("preferred_successors", "strs", ())),
        _end_quorum_epoch, "a resigning leader's EndQuorumEpoch", from_voter=True),
    "EndQuorumEpochResponse": Kind(
        VOTER, ANSWER_FIELDS, _quorum_answer, "a voter's answer to the node's EndQuorumEpoch",
        from_voter=True),
    "Resign": Kind(VOTER, (Field("epoch", "int"),), lambda f, ctx: None,
                   "the client's resign(epoch): no message", act=lambda n, _src, f: n.resign(f["epoch"])),
    "RaftShutdown": Kind(VOTER, (Field("timeout_ms", "int", 5000),), lambda f, ctx: None,
                         "the client's graceful shutdown(timeoutMs): no message",
                         act=lambda n, _src, f: n.begin_raft_shutdown(f["timeout_ms"])),
    "QuorumFetch": Kind(
        VOTER, (Field("corr", "int", 0), Field("epoch", "int"), Field("fetch_offset", "int"),
                Field("last_fetched_epoch", "int"), Field("high_watermark", "int", None),
                Field("max_wait_ms", "int", None)),
        _quorum_fetch, "a voter's or an observer's Fetch of the metadata log",
        from_voter=True, observer_too=True),
    "QuorumFetchResponse": Kind(
        VOTER, (Field("corr", "int", 0), Field("epoch", "int"), Field("leader", "str", ""),
                Field("error", "error", 0), Field("records", "pairs", ()),
                Field("high_watermark", "int", NO), Field("diverging_epoch", "pair", None)),
        _quorum_fetch_response, "the quorum leader's answer to this voter's last Fetch",
        from_voter=True),
}


RAFT_KINDS.update(VOTER_CHANGE_KINDS)  # KIP-853's AddRaftVoter, RemoveRaftVoter, ApiVersions


def check_raft_body(kind: str, fields: dict, key: str, voters: list[str]) -> None:
    """What the voter could not be sent (see the module contract)."""
    for i, successor in enumerate(fields.get("preferred_successors", ())):
        if successor not in voters:
            raise FieldProblem(f"{key}.preferred_successors[{i}]", f"{successor!r} is not a "
                               "voter of the quorum", suggest(str(successor), voters))
    leader = fields.get("leader", "")
    if leader not in ("", NO_LEADER) and leader not in voters:
        raise FieldProblem(f"{key}.leader", f"{leader!r} is not a voter of the quorum",
                           suggest(leader, voters + [NO_LEADER]))
    last = 0
    for i, (epoch, count) in enumerate(fields.get("records", ())):
        if count < 1 or epoch < 1 or epoch < last or epoch > fields["epoch"]:
            raise FieldProblem(f"{key}.records[{i}]", f"[{epoch}, {count}] is not a run of "
                               f"records after epoch {last}, within the answer's epoch "
                               f"{fields['epoch']}", "give [epoch, count >= 1] in epoch order")
        last = epoch
