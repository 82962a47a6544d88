"""KIP-853's dynamic voter set on a Raft node (mixin of `RaftQuorum`; `KafkaRaftClient`,
`LeaderState`, `AddVoterHandler`, `RemoveVoterHandler` and `KRaftControlRecordStateMachine`
read at 3.9.0-rc3; the answers are `sim.kafka.rules.raft_voters`'s).

Every node's voter set is its log's last VotersRecord, committed or not, else the bootstrap set
it was formatted with (`rules.raft_last_voter_set`): appending one (a leader's write, a
follower's or observer's Fetch) changes the set at once, a truncation falls back to the one
before, and a restart reads it back from the log. On kraft.version 1 (`initial_controllers`)
the first leader writes KRaftVersion and Voters records after its LeaderChange
(`appendStartOfEpochControlRecords`: no VotersRecord in the log yet). Behind the switch
`raft_dynamic_voters` (3.9+) the leader takes AddRaftVoter and RemoveRaftVoter, one at a time:
an AddRaftVoter asks the new voter's ApiVersions first and appends the VotersRecord once the
answer shows it supports kraft.version 1 and it is caught up as an observer; a RemoveRaftVoter
appends it at once. The change is answered NONE once its record commits (by the new set's
majority), REQUEST_TIMED_OUT once quorum.request.timeout.ms passes, or NOT_LEADER_OR_FOLLOWER
when the leadership is lost first; a leader that committed its own removal resigns at its next
tick (`requestResign` -> `pollLeader`), and, outside the voter set, goes unattached in the next
epoch when its election timeout passes (`pollResigned`). Without the switch the requests are
not taken (no API 80/81 before 3.9).

Contract: the host provides `voters`, `entries`, `hw`, `role`, `name`, `fetch_states`,
`append`, `drain`, `_visible_hw`, `_resign`, `rules`, `protocol`, `cluster`, `send`, `emit` and
`now_us`. A change's answer goes to its `reply(error)`: a message to the requester, or the
operator's fault action's trace event (`voter_change`).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.kraft_messages import (
    KRAFT_VERSION,
    VOTERS,
    MetadataRecord,
    QuorumApiVersions,
    QuorumApiVersionsResponse,
    RaftVoterChangeResponse,
)
from sim.kafka.quorum_describe import UNKNOWN


class VoterChange(NamedTuple):
    """The leader's pending AddRaftVoter or RemoveRaftVoter (`AddVoterHandlerState`,
    `RemoveVoterHandlerState`): its VotersRecord's offset once appended (None: an add waiting
    for the new voter's ApiVersions), the time it expires, and where its answer goes."""

    op: str  # "add" or "remove"
    voter: str
    offset: int | None
    deadline_us: int
    reply: Callable[[int], None]


def controller_order(name: str) -> int:
    """A voter set's order: by controller number (c1, c2, ..., c10)."""
    return int(name[1:]) if name[1:].isdigit() else 0


class RaftVoterChanges:
    def init_voter_set(self, bootstrap: list[str], kraft_version: int) -> None:
        """The set the node was formatted with (durable), and its kraft.version."""
        self.bootstrap_voters = tuple(bootstrap)
        self.kraft_version = kraft_version
        self.voter_records: list[tuple[int, tuple]] = []  # (offset, voters) in the log
        self.voters = list(bootstrap)

    def _reset_voter_change(self) -> None:
        self.voter_change: VoterChange | None = None
        self.resign_requested = False  # `LeaderState.requestResign`

    # -- the voter set from the log --------------------------------------------------------
    def _rebuild_voter_records(self) -> None:
        """The VotersRecords of the log as it now stands (after a probe set it). A log that
        holds none keeps the set the node was given."""
        self.voter_records = [(o, tuple(r.get("voters"))) for o, (_e, r) in
                              enumerate(self.entries) if r.kind == VOTERS]
        if self.voter_records:
            self._use_last_voter_set()

    def _voters_appended(self, offset: int, record: MetadataRecord) -> None:
        """A record reached the log at `offset`: a VotersRecord changes the set now."""
        if record.kind == VOTERS:
            self.voter_records.append((offset, tuple(record.get("voters"))))
            self._use_last_voter_set()

    def _voters_truncated(self, end: int) -> None:
        """The log was truncated to `end`: the VotersRecords past it are gone."""
        if self.voter_records and self.voter_records[-1][0] >= end:
            self.voter_records = [(o, v) for o, v in self.voter_records if o < end]
            self._use_last_voter_set()  # back to the one before, or the bootstrap set

    def _use_last_voter_set(self) -> None:
        """The voter set from the log's last VotersRecord, else the bootstrap set."""
        offset, voters = self._last_voter_set()
        if list(voters) != self.voters:
            self.voters = list(voters)
            self.emit(V.VOTERS_CHANGED, {"voters": list(voters), "offset": offset})

    def _last_voter_set(self) -> tuple[int, tuple]:
        return self.rules.raft_last_voter_set(self.bootstrap_voters, self.voter_records)

    def _start_of_epoch_voters(self) -> None:
        """`appendStartOfEpochControlRecords`: on kraft.version 1, a leader whose voter set is
        still the bootstrap one (no VotersRecord in its log) writes it after its LeaderChange."""
        if self.kraft_version >= 1 and not self.voter_records:
            self.append(MetadataRecord.of(KRAFT_VERSION, kraft_version=self.kraft_version))
            self.append(MetadataRecord.of(VOTERS, voters=tuple(self.voters)))

    # -- the leader's AddRaftVoter and RemoveRaftVoter -------------------------------------
    def _leader_hw(self) -> int | None:
        hw = self._visible_hw() if self.role == "leader" else -1
        return hw if hw >= 0 else None

    def _change_inputs(self) -> tuple:
        self._expire_voter_change()  # `isOperationPending` expires first
        return (self.role == "leader", self.voter_change is not None, self._leader_hw(),
                self.kraft_version, self._last_voter_set()[0], tuple(self.voters))

    def add_voter(self, voter: str, reply: Callable[[int], None]) -> None:
        """AddRaftVoter of `voter` (`handleAddVoterRequest`): refused at once, or pending
        while the new voter is asked its ApiVersions."""
        if not self.protocol.raft_dynamic_voters:
            return
        error = self.rules.raft_add_voter_error(*self._change_inputs(), voter)
        if error:
            reply(error)
            return
        self.voter_change = VoterChange("add", voter, None, self._change_deadline_us(), reply)
        self.send(voter, "QuorumApiVersions", QuorumApiVersions())

    def remove_voter(self, voter: str, reply: Callable[[int], None]) -> None:
        """RemoveRaftVoter of `voter` (`handleRemoveVoterRequest`): refused at once, or its
        VotersRecord appended."""
        if not self.protocol.raft_dynamic_voters:
            return
        error = self.rules.raft_remove_voter_error(*self._change_inputs(), voter)
        if error:
            reply(error)
            return
        offset = self._append_voters(tuple(v for v in self.voters if v != voter))
        self.voter_change = VoterChange("remove", voter, offset, self._change_deadline_us(),
                                        reply)

    def _change_deadline_us(self) -> int:
        return self.now_us + self.cluster.quorum_request_timeout_ms * 1000

    def _append_voters(self, voters: tuple) -> int:
        """`appendVotersRecord`: a control record, drained to the log at once."""
        offset = self.append(MetadataRecord.of(VOTERS, voters=tuple(
            sorted(voters, key=controller_order))))
        self.drain()
        return offset

    def on_quorum_api_versions(self, msg) -> None:
        """Any Raft node answers ApiVersions with the kraft.version range it supports."""
        top = 1 if self.protocol.raft_dynamic_voters else 0
        self.send(msg.src, "QuorumApiVersionsResponse", QuorumApiVersionsResponse(E.NONE,
                                                                                  (0, top)))

    def on_quorum_api_versions_response(self, msg) -> None:
        """`handleApiVersionsResponse`: taken by a leader adding the sender and waiting for
        it (`expectingApiResponse`); the rule says whether the VotersRecord is appended."""
        change, resp = self.voter_change, msg.body
        if self.role != "leader" or change is None or change.op != "add" or \
                change.offset is not None or change.voter != msg.src:
            return
        caught_up = self.rules.raft_replica_caught_up(
            self.fetch_states.get(change.voter, UNKNOWN), self.now_us // 1000)
        error = self.rules.raft_pending_add_outcome(resp.error, resp.kraft_versions,
                                                    self.kraft_version, caught_up)
        if error:
            self._answer_voter_change(error)
            return
        offset = self._append_voters((*self.voters, change.voter))
        self.voter_change = change._replace(offset=offset)

    def _answer_voter_change(self, error: int) -> None:
        """`resetAddVoterHandlerState` / `resetRemoveVoterHandlerState`: the pending change is
        answered `error` and forgotten."""
        change, self.voter_change = self.voter_change, None
        if change is not None:
            change.reply(error)

    def _expire_voter_change(self) -> None:
        """`maybeExpirePendingOperation`: REQUEST_TIMED_OUT once its time passed."""
        if self.voter_change is not None and self.now_us >= self.voter_change.deadline_us:
            self._answer_voter_change(E.REQUEST_TIMED_OUT)

    def _voter_change_committed(self) -> None:
        """`highWatermarkUpdated`: a change whose record committed is answered NONE; a leader
        that committed its own removal asks to resign."""
        change = self.voter_change
        if change is None or not self.rules.raft_change_committed(self._leader_hw(),
                                                                  change.offset):
            return
        self._answer_voter_change(E.NONE)
        if change.op == "remove" and self.rules.raft_resigns_after_removal(
                tuple(self._last_voter_set()[1]), self.name):
            self.resign_requested = True

    def _close_voter_change(self) -> None:
        """`LeaderState.close`: a lost leadership answers its pending change."""
        self._answer_voter_change(E.NOT_LEADER_OR_FOLLOWER)
        self.resign_requested = False

    def _voter_answer(self, src: str, kind: str, voter: str) -> Callable[[int], None]:
        """The reply of a request from `src`: its `kind` answer."""
        return lambda error: self.send(src, kind, RaftVoterChangeResponse(voter, error))

    def on_add_raft_voter(self, msg) -> None:
        self.add_voter(msg.body.voter, self._voter_answer(msg.src, "AddRaftVoterResponse",
                                                          msg.body.voter))

    def on_remove_raft_voter(self, msg) -> None:
        self.remove_voter(msg.body.voter, self._voter_answer(msg.src, "RemoveRaftVoterResponse",
                                                             msg.body.voter))
