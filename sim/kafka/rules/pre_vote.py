"""KIP-996 Pre-Vote in the KRaft quorum (Kafka 4.0+, switch `raft_pre_vote`): what a voter
answers a Vote with PreVote=true, and where a Prospective voter goes once its pre-election is
decided.

Read in Kafka's 4.0-line sources (`raft/src/main/java/org/apache/kafka/raft/`, not in 3.9):
`KafkaRaftClient.handleVoteRequest` (the pre-vote's epoch check), `QuorumState.
unattachedOrProspectiveCanGrantVote`, `FollowerState.canGrantVote` (`hasFetchedFromLeader`),
`CandidateState`/`LeaderState`/`ResignedState.canGrantVote` (`KafkaRaftClientPreVoteTest`), and
`ProspectiveState`'s
lifecycle ("If majority votes granted, it will transition to candidate state. If majority
votes rejected or election times out, it will transition to unattached or follower state").

Contract: pure functions of plain values; they change nothing.
"""

from __future__ import annotations

from sim.kafka import errors as E


def vote_request_error(pre_vote: bool, replica_epoch: int, last_epoch: int, last_offset: int,
                       epoch: int) -> int:
    """`handleVoteRequest`'s checks in order (4.0+): INVALID_REQUEST for a negative end offset
    or last epoch, or an illegal epoch: a candidate bumped its epoch before asking, so its last
    epoch must be below ReplicaEpoch, while a prospective asks at its own epoch, whose leader
    may have written records, so its last epoch may equal it (`isIllegalEpoch`); then
    FENCED_LEADER_EPOCH for an epoch older than the voter's (`validateVoterOnlyRequest`);
    else NONE. With `pre_vote` off this is the 3.x rule (`kraft.vote_request_error`)."""
    illegal = last_epoch > replica_epoch if pre_vote else last_epoch >= replica_epoch
    if last_offset < 0 or last_epoch < 0 or illegal:
        return E.INVALID_REQUEST
    return E.FENCED_LEADER_EPOCH if replica_epoch < epoch else E.NONE


def grants_pre_vote(state: str, fetched_from_leader: bool, log_up_to_date: bool) -> bool:
    """`canGrantVote(..., isPreVote=true)` by the voter's state (the `QuorumState` names of
    `RaftElections.quorum_state`, plus "prospective"): unattached, voted and prospective grant a
    requester whose log is up to date, whatever vote they cast (a pre-vote binds nothing:
    `unattachedOrProspectiveCanGrantVote`); so do a candidate and a resigned leader
    (`testHandlePreVoteRequestAsResigned`: it has given up its epoch); a follower only if it
    has not fetched from its leader since it began following it (`FollowerState.
    hasFetchedFromLeader`: a follower of a live leader refuses, which is what keeps a voter cut
    off from the leader from starting an election, even after an EndQuorumEpoch, KAFKA-20895);
    a leader never does (`testLeaderAcceptPreVoteFromObserver`)."""
    if state in ("unattached", "voted", "prospective", "candidate", "resigned"):
        return log_up_to_date
    if state == "follower":
        return log_up_to_date and not fetched_from_leader
    return False


def real_vote_state(leader: str | None, voted_for: str | None) -> str:
    """The state by which a prospective voter answers a standard Vote: as the unattached or
    follower state it came from (`unattachedOrProspectiveCanGrantVote` with isPreVote false):
    voted if it voted in its epoch, follower if it knows the epoch's leader, else unattached."""
    if voted_for is not None:
        return "voted"
    return "follower" if leader is not None else "unattached"


def after_pre_vote_loss(leader: str | None) -> str:
    """`prospectiveTransitionAfterElectionLoss`: a prospective whose pre-vote was rejected by
    enough voters, or whose election timeout passed, stays at its epoch: "follower" of the
    leader it knew, else "unattached". It bumps no epoch, so no observer learns one that no
    leader holds."""
    return "follower" if leader is not None else "unattached"


def unattached_keeps_timer(timed_out: bool) -> bool:
    """`QuorumState.transitionToUnattached` from Prospective (4.0 line): the unattached state
    keeps the prospective's remaining election time unless its pre-vote was rejected
    (`!epochElection().isVoteRejected()`), so a pre-election that timed out leaves none and the
    voter is prospective again at its next poll; a rejected one draws a fresh timeout."""
    return timed_out
