"""The KRaft quorum's request checks and its resignation's order, as `KafkaRaftClient` and
`LeaderState` take them (read at 3.3.0-3.7.0): what a voter refuses before it looks at a
request's epoch, what it refuses by the epoch of a request only a voter sends, and whom a
resigning leader names as its successors and how long each of them waits, and the high
watermark a voter's Fetch carries (4.1+).

Contract: pure functions of plain values; they change nothing.
"""

from __future__ import annotations

from sim.kafka import errors as E


def fetch_request_error(max_wait_ms: int, fetch_offset: int, last_fetched_epoch: int,
                        current_leader_epoch: int) -> int:
    """`handleFetchRequest` (3.3.0-3.7.0), before any epoch check: INVALID_REQUEST for a
    negative MaxWaitMs, fetch offset or last fetched epoch, or a last fetched epoch above the
    request's own epoch (no fetcher can have fetched from a later epoch than it knows);
    NONE otherwise (the epoch is `validateLeaderOnlyRequest`'s, `leader_only_error`)."""
    if max_wait_ms < 0 or fetch_offset < 0 or last_fetched_epoch < 0 \
            or last_fetched_epoch > current_leader_epoch:
        return E.INVALID_REQUEST
    return E.NONE


def voter_only_error(request_epoch: int, epoch: int, leader_known: bool) -> int:
    """`validateVoterOnlyRequest` (3.3.0-3.7.0), what a voter answers a BeginQuorumEpoch or an
    EndQuorumEpoch before acting on it: FENCED_LEADER_EPOCH for an epoch older than its own,
    then INVALID_REQUEST for a request naming no leader (a negative LeaderId); NONE
    otherwise; then `voter_set_error`."""
    if request_epoch < epoch:
        return E.FENCED_LEADER_EPOCH
    return E.NONE if leader_known else E.INVALID_REQUEST


def voter_set_error(protocol, local_is_voter: bool, remote_is_voter: bool) -> int:
    """The last check of `validateVoterOnlyRequest`, after the epoch and the sender id:
    at 3.3.0-3.7.0 INCONSISTENT_VOTER_SET when the receiver is an observer or the sender
    (a Vote's candidate, a BeginQuorumEpoch's or an EndQuorumEpoch's leader) is not a voter
    (`quorum.isObserver() || !quorum.isVoter(remoteNodeId)`), so an observer never votes and
    a voter answers no observer's Vote; from 3.8.0 (KAFKA-16526, switch
    `raft_observer_votes`, read at 3.8.0 and 3.9.0-rc3) the check is gone: the voter set may
    change (KIP-853), so any node is answered by its state; NONE otherwise."""
    if protocol.raft_observer_votes or (local_is_voter and remote_is_voter):
        return E.NONE
    return E.INCONSISTENT_VOTER_SET


def replica_fetch_state(state: tuple, fetch_offset: int, leader_end_offset: int,
                        now_ms: int) -> tuple:
    """`LeaderState.ReplicaState.updateFollowerState` (3.7.0, 3.9.0-rc3): a replica's state as
    the leader keeps it, `(log_end_offset, last_fetch_ms, last_caught_up_ms,
    last_fetch_leader_end_offset)` (-1 each before its first Fetch), after a valid Fetch from
    `fetch_offset` now: caught up now if it fetched from the leader's end; else caught up at
    its previous Fetch if it reached the leader's end as that Fetch found it (the leader's
    end then was above 0); the fetch time never moves back, the end offset may."""
    _end, last_fetch, caught_up, last_leader_end = state
    if fetch_offset >= leader_end_offset:
        caught_up = max(caught_up, now_ms)
    elif last_leader_end > 0 and fetch_offset >= last_leader_end:
        caught_up = max(caught_up, last_fetch)
    return fetch_offset, max(last_fetch, now_ms), caught_up, leader_end_offset


def preferred_successors(voters: list[str], leader: str, ends: dict) -> tuple:
    """`LeaderState.nonLeaderVotersByDescendingFetchOffset` (3.3.0-3.7.0): the other voters in
    the order a resigning leader names them in its EndQuorumEpoch, the furthest fetched first
    (`ReplicaState.compareTo`): by end offset, descending; a voter that has not fetched in the
    epoch (`ends` has none) after those that have; equal ones by node id."""
    def key(v: str):
        return (v not in ends, -ends.get(v, 0), int(v[1:]))
    return tuple(sorted((v for v in voters if v != leader), key=key))


def end_epoch_election_backoff_ms(successors: tuple, local: str, backoff_max_ms: int) -> int:
    """`endEpochElectionBackoff` (3.3.0-3.7.0): how long a follower told by its leader's
    EndQuorumEpoch that the leader resigns waits before standing (the follower's fetch timeout
    is overridden to it): 0, at once, for the first preferred successor and for a voter the
    list leaves out (`indexOf` -1); else `strictExponentialElectionBackoffMs`: the
    quorum.election.backoff.max.ms shifted right by (successors - 1) and left by
    (position - 1), at most that maximum, so the better placed a voter, the sooner it stands."""
    position = successors.index(local) if local in successors else -1
    if position <= 0:
        return 0
    base = backoff_max_ms >> (len(successors) - 1)
    return min(backoff_max_ms, base << (position - 1))


def fetch_high_watermark(proto, hw: int, known: bool) -> int | None:
    """The HighWatermark a voter's Fetch carries (KIP-1166, Fetch v18, from 4.1,
    `kraft_fetch_completes_on_hw`): the one it knows, -1 while it knows none (Kafka's empty
    `highWatermark()`: `KafkaRaftClientFetchTest.testHighWatermarkSentInFetchRequest`); None,
    no field, before (Kafka's default there, Long.MAX_VALUE, never completes a Fetch early)."""
    if not proto.kraft_fetch_completes_on_hw:
        return None
    return hw if known else -1
