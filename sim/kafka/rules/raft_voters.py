"""KIP-853's dynamic controller quorum (kraft.version 1, Kafka 3.9): what a quorum leader
answers AddRaftVoter (API 80) and RemoveRaftVoter (API 81), and which voter set a Raft node
uses. Read at the 3.9.0-rc3 tag: `KafkaRaftClient.handleAddVoterRequest` /
`handleRemoveVoterRequest` / `validateLeaderOnlyRequest`, `internals.AddVoterHandler`,
`internals.RemoveVoterHandler`, `LeaderState` (`isOperationPending`,
`maybeExpirePendingOperation`, `isReplicaCaughtUp`, `close`), `VoterSet.removeVoter` and
`internals.KRaftControlRecordStateMachine` (`lastVoterSet`, `truncateNewEntries`).

The decision rules, in Kafka's order:

- AddRaftVoter: a wrong cluster id is INCONSISTENT_CLUSTER_ID; a node that does not lead its
  epoch answers NOT_LEADER_OR_FOLLOWER (`validateLeaderOnlyRequest` at the node's own epoch; a
  leader shutting down, BROKER_NOT_AVAILABLE); a voter without a directory id, or listeners
  without the default listener, INVALID_REQUEST. Then `AddVoterHandler`: another change
  pending (an AddRaftVoter or RemoveRaftVoter taken and not yet answered) is
  REQUEST_TIMED_OUT; so is a leader with no high watermark yet (it has not committed a record
  of its epoch, so it has not fenced the previous leaders' changes); kraft.version 0 (static
  voters, `controller.quorum.voters`) is UNSUPPORTED_VERSION; the last VotersRecord not yet
  committed (its offset at or above the high watermark) REQUEST_TIMED_OUT; a node already in
  the voter set DUPLICATE_VOTER. Otherwise the leader sends ApiVersions to the new voter and
  answers once it hears back (`pending_add_outcome`): an error is REQUEST_TIMED_OUT; a
  kraft.version range without the finalized version INVALID_REQUEST; a new voter that is not
  caught up (`replica_caught_up`) REQUEST_TIMED_OUT; else it appends the VotersRecord with the
  new voter and answers NONE once that record commits.
- RemoveRaftVoter: the same checks to the uncommitted VotersRecord; then a node outside the
  voter set, or the only voter, is VOTER_NOT_FOUND; else the leader appends the VotersRecord
  without it, answers NONE once it commits, and resigns then if it removed itself.
- A pending change not answered within quorum.request.timeout.ms is answered
  REQUEST_TIMED_OUT (the appended VotersRecord stays); a leader that loses its leadership
  answers it NOT_LEADER_OR_FOLLOWER (`LeaderState.close`).
- A Raft node's voter set is the last VotersRecord in its log, committed or not (the leader
  counts the new set from the append: its high watermark, check-quorum, BeginQuorumEpoch,
  elections), else the bootstrap set; a truncation falls back to the one before
  (`last_voter_set`).

Contract: pure functions of plain values; they change nothing. Not modelled: cluster ids,
directory ids and listeners (every node has one id and one endpoint), UpdateRaftVoter
(API 82), KRaftVersionRecord upgrades (kraft.version is fixed when the cluster is formatted).
"""

from __future__ import annotations

from sim.kafka import errors as E

RECONFIG_KRAFT_VERSION = 1  # `KRaftVersion.isReconfigSupported`: kraft.version 1 and above
CAUGHT_UP_WINDOW_MS = 3_600_000  # `isReplicaCaughtUp`: fetched caught up within the last hour


def pending_change_error(pending: bool, hw: int | None, kraft_version: int,
                         last_voters_offset: int) -> int:
    """The checks `AddVoterHandler` and `RemoveVoterHandler` share, in their order: a change
    still pending, no high watermark yet (`hw` None), kraft.version 0, the last VotersRecord
    (`last_voters_offset`, -1 for the bootstrap set) not yet committed; NONE when none holds."""
    if pending or hw is None:
        return E.REQUEST_TIMED_OUT
    if kraft_version < RECONFIG_KRAFT_VERSION:
        return E.UNSUPPORTED_VERSION
    if last_voters_offset >= hw:
        return E.REQUEST_TIMED_OUT
    return E.NONE


def add_voter_error(is_leader: bool, pending: bool, hw: int | None, kraft_version: int,
                    last_voters_offset: int, voters: tuple, voter: str) -> int:
    """What a node answers AddRaftVoter of `voter` at once (NONE: it goes on to ask the new
    voter's ApiVersions); see the module docstring."""
    if not is_leader:
        return E.NOT_LEADER_OR_FOLLOWER
    error = pending_change_error(pending, hw, kraft_version, last_voters_offset)
    if error:
        return error
    return E.DUPLICATE_VOTER if voter in voters else E.NONE


def remove_voter_error(is_leader: bool, pending: bool, hw: int | None, kraft_version: int,
                       last_voters_offset: int, voters: tuple, voter: str) -> int:
    """What a node answers RemoveRaftVoter of `voter` at once (NONE: it appends the new voter
    set); `VoterSet.removeVoter` finds no voter set without `voter` when it is not a voter or
    the only one."""
    if not is_leader:
        return E.NOT_LEADER_OR_FOLLOWER
    error = pending_change_error(pending, hw, kraft_version, last_voters_offset)
    if error:
        return error
    return E.VOTER_NOT_FOUND if voter not in voters or len(voters) == 1 else E.NONE


def replica_caught_up(fetch_state: tuple, now_ms: int) -> bool:
    """`LeaderState.isReplicaCaughtUp` (of an observer): it was caught up once and fetched
    within the last hour. `fetch_state` is `raft_requests.replica_fetch_state`'s
    `(log_end_offset, last_fetch_ms, last_caught_up_ms, last_fetch_leader_end_offset)`."""
    _end, last_fetch, caught_up, _leader_end = fetch_state
    return caught_up > 0 and last_fetch > 0 and last_fetch > now_ms - CAUGHT_UP_WINDOW_MS


def pending_add_outcome(error: int, kraft_versions: tuple | None, kraft_version: int,
                        caught_up: bool) -> int:
    """`AddVoterHandler.handleApiVersionsResponse` for the new voter's answer: REQUEST_TIMED_OUT
    for an error; INVALID_REQUEST when its supported kraft.version range (`(min, max)`, None:
    none given) leaves out the finalized `kraft_version`; REQUEST_TIMED_OUT when it is not
    caught up; NONE: append the VotersRecord."""
    if error:
        return E.REQUEST_TIMED_OUT
    if kraft_versions is None or not kraft_versions[0] <= kraft_version <= kraft_versions[1]:
        return E.INVALID_REQUEST
    return E.NONE if caught_up else E.REQUEST_TIMED_OUT


def change_committed(hw: int | None, offset: int | None) -> bool:
    """`highWatermarkUpdated`: the change's VotersRecord (at `offset`) is committed."""
    return hw is not None and offset is not None and hw > offset


def last_voter_set(bootstrap: tuple, voter_records: list) -> tuple[int, tuple]:
    """`KRaftControlRecordStateMachine.lastVoterSetEntry`: `(offset, voters)` of the last
    VotersRecord in the log, committed or not (`voter_records`: `(offset, voters)` in log
    order), else the bootstrap set at offset -1: the set takes effect as the record is
    appended, whatever the high watermark."""
    return voter_records[-1] if voter_records else (-1, bootstrap)


def resigns_after_removal(voters: tuple, local: str) -> bool:
    """`RemoveVoterHandler.highWatermarkUpdated`: the leader resigns once the voter set it
    committed leaves it out (`leaderState.requestResign()`)."""
    return local not in voters
