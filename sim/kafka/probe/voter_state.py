"""A voter probe's starting state: a KRaft controller set as one Raft node of the quorum
c1..cN, a voter or an observer, as `KafkaRaftClientTest`'s `RaftClientTestContext.Builder`
sets one (KIP-595).

Contract: `VOTER_STATE` is the fields a voter's `[probe.state]` may hold
(`sim.kafka.probe.fields`); `set_voter(controller, state, ctx)` gives the model's
`KraftController` (its `RaftQuorum`) that state, or raises `FieldProblem` naming the key:

- `quorum_state`: `unattached` (no leader, no vote), `voted` (voted for `voted_for` in
  `epoch`, no leader), `follower` (of `leader`), `candidate` (voted for itself in `epoch`:
  it stood at once, its Vote requests are on their way to the other voters as the first step
  begins), `leader` (it won `epoch`: its LeaderChange record is appended after `log`, and
  the BeginQuorumEpoch requests it sent on winning reach no step), or `resigned` (it led
  `epoch` and gave it up, as a leader restarts, `QuorumState.initialize`: no preferred
  successors, no record of its own; its EndQuorumEpoch requests are on their way to the
  other voters as the first step begins).
- `epoch`: the quorum epoch; default 0 for `unattached`, else 1 (no election is held in
  epoch 0, so only an unattached voter may be there).
- `log`: the metadata log's epochs, `[[epoch, record_count], ...]` in epoch order, each epoch
  at least 1 and at most the quorum epoch (below it for a leader, whose epoch starts with its
  LeaderChange); the records are NoOp placeholders.
- `voters`: the voter set (`Builder(localId, voters)`), controller names, default all of
  c1..cN; a node left out of it is an observer (`sim.kafka.quorum_observer`), which is
  `unattached`, `voted` or a `follower` of a voter, and sends its first Fetch at once: to its
  leader, else to the first voter. Every controller, voter or not, may send the node quorum
  messages, and a message may name any controller its leader (Kafka's tests send a
  non-voter's BeginQuorumEpoch, `testVoterOnlyRequestValidation`).
- `kraft_version`: 0 (static voters, the default) or 1 (3.9+, KIP-853: the voter set kept in
  the log; a leader writes KRaftVersion and Voters records after its LeaderChange, as
  `withBootstrapSnapshot` contexts do).
- `high_watermark`: within the log (for a leader, before its LeaderChange; it reports none
  until a majority holds a record of its epoch, as Kafka's `LeaderState`). Left out, the
  voter knows none (Kafka's empty `highWatermark()`, a test context's start): it reads none
  and its Fetch (4.1+) says -1 until an answer brings one.

The node runs no controller duties a probe would see (no NoOpRecord, no linger: Kafka's raft
tests have no controller above the client) and creates none of the scenario's topics. A
follower sends its first Fetch at once (on its way as the first step begins; a
QuorumFetchResponse answers it). Its timers run on the model's clock from the first step: an
election is held once `cluster.quorum_election_timeout_ms` (randomised up to twice that) or
`quorum_fetch_timeout_ms` passes without a leader's word, so a probe whose steps last longer
sets them higher to keep them from firing.
"""

from __future__ import annotations

from sim.kafka.kraft_messages import NO_OP, MetadataRecord
from sim.kafka.probe.fields import Field, FieldProblem, suggest
from sim.kafka.probe.kind import NO
from sim.kafka.probe.state import without_controller_timers

QUORUM_STATES = ("unattached", "voted", "follower", "candidate", "leader", "resigned")
VOTER_STATE = (Field("name", "str"), Field("quorum_state", "str", "unattached"),
               Field("epoch", "int", NO), Field("leader", "str", ""),
               Field("voted_for", "str", ""), Field("log", "pairs", ()),
               Field("high_watermark", "int", NO), Field("voters", "strs", ()),
               Field("kraft_version", "int", 0))
OBSERVER_STATES = ("unattached", "voted", "follower")


def set_voter(node, state: dict, ctx) -> None:
    """`node` (a `KraftController` of 2+ voters) made the voter `state` describes."""
    q = state["quorum_state"]
    if q not in QUORUM_STATES:
        raise FieldProblem("node.quorum_state", f"unknown quorum state {q!r}",
                           suggest(q, QUORUM_STATES))
    epoch = state["epoch"] if state["epoch"] != NO else (0 if q == "unattached" else 1)
    if epoch < 0 or (epoch == 0 and q != "unattached"):
        raise FieldProblem("node.epoch", f"a {q} voter cannot be in epoch {epoch}",
                           "give epoch >= 1 (0: unattached only)")
    _check_voters(node, state["voters"], q, ctx.controllers())
    _check_names(node, state, q)
    entries = _log(state["log"], epoch, q)
    known = state["high_watermark"] != NO
    hw = state["high_watermark"] if known else 0
    if not 0 <= hw <= len(entries):
        raise FieldProblem("node.high_watermark", f"{hw} is outside the log [0, {len(entries)}]",
                           "give a HW within the log")
    _kraft_version(node, state["kraft_version"])
    without_controller_timers(node)
    node.entries, node.hw = list(entries), hw
    node.start()
    node.hw_known = known
    if q in ("candidate", "leader", "resigned"):
        node.quorum_epoch = epoch - 1
        send = node.send
        if q != "candidate":  # its Vote and BeginQuorumEpoch requests went before the probe
            node.send = lambda dst, kind, body: None
        node._stand()  # `transitionToCandidate`: epoch + 1, its own vote, Vote to the others
        if q != "candidate":
            node.votes = set(node.voters)
            node._maybe_win()  # `transitionToLeader`: the LeaderChange record written
            node.send = send
        if q == "resigned":  # led `epoch` before a restart: no record of this start
            node.entries, node.hw = list(entries), hw
            node._rebuild_voter_records()
            node._resign("restarted", successors=())
        return
    node.quorum_epoch = epoch
    node.leader = state["leader"] or None
    node.voted_for = state["voted_for"] or None
    if node.is_observer:
        node._poll_observer(node.now_us)  # its first poll's Fetch (`pollFollowerAsObserver`...)
    elif node.leader is not None:
        node._fetch()  # a follower's first poll sends its Fetch (`pollFollowerAsVoter`)


def _kraft_version(node, version: int) -> None:
    """kraft.version 1 (KIP-853: formatted with a bootstrap voter set, `withBootstrapSnapshot`)
    needs a 3.9+ profile; 0 is the static voters (`withStaticVoters`)."""
    if version not in (0, 1) or (version and not node.protocol.raft_dynamic_voters):
        raise FieldProblem("node.kraft_version", f"kraft.version {version} is not one this "
                           "release has", "give 0, or 1 on a 3.9+ profile (KIP-853)")
    node.kraft_version = version


def _check_voters(node, voters: tuple, q: str, controllers: tuple) -> None:
    """The voter set: controllers, each once; an observer only unattached, voted or following."""
    for i, v in enumerate(voters):
        if v not in controllers or voters.index(v) != i:
            raise FieldProblem(f"node.voters[{i}]", f"{v!r} is not a controller of the cluster "
                               "or is named twice", suggest(v, list(controllers)))
    if node.is_observer and q not in OBSERVER_STATES:
        raise FieldProblem("node.quorum_state", f"an observer (not in voters) is never {q}",
                           f"give one of {', '.join(OBSERVER_STATES)}, or add it to voters")


def _check_names(node, state: dict, q: str) -> None:
    """A follower names its leader, a voted voter its candidate: another voter each."""
    others = [v for v in node.voters if v != node.name]
    for name, needed in (("leader", q == "follower"), ("voted_for", q == "voted")):
        given = state[name]
        if needed and given not in others:
            problem = "missing" if not given else f"{given!r} is not another voter of the quorum"
            raise FieldProblem(f"node.{name}", problem, suggest(given, others))
        if given and not needed:
            own = "follower" if name == "leader" else "voted"
            raise FieldProblem(f"node.{name}", f"a {q} voter has no {name.replace('_', ' ')}",
                               f"leave it out, or set quorum_state = \"{own}\"")


def _log(runs: tuple, epoch: int, q: str) -> list:
    """The log's entries: one NoOp placeholder per record, runs in epoch order."""
    entries: list = []
    top = epoch - 1 if q == "leader" else epoch
    for i, (e, count) in enumerate(runs):
        last = entries[-1][0] if entries else 1
        if count < 1 or not last <= e <= top:
            where = "below the leader's epoch" if q == "leader" else "up to the quorum epoch"
            raise FieldProblem(f"node.log[{i}]", f"[{e}, {count}] is not a run of records from "
                               f"epoch {last}, {where} {epoch}",
                               "give [epoch, count >= 1] in epoch order")
        entries += [(e, MetadataRecord.of(NO_OP))] * count
    return entries
