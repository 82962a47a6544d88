"""The controller quorum's Raft: leader election by epoch, log replication to the voters, and
the high watermark that commits records (KIP-595, `KafkaRaftClient`).

Contract (mixin of `KraftController`): each voter (c1..cN) keeps a durable log of
(epoch, `MetadataRecord`) entries, its quorum epoch and its vote. A follower Fetches from the
leader it knows; silent for `quorum_fetch_timeout_ms` (or knowing no leader for a randomised
`quorum_election_timeout_ms`) it stands as candidate for the next epoch (from 4.0, only once a
majority granted it a pre-vote: `RaftPreVote`, switch `raft_pre_vote`) and asks the others
for votes (`rules.raft_grants_vote`), again after `quorum_request_timeout_ms` unanswered; a
candidate that can no longer win, or whose election timed out, backs off
(`rules.raft_election_backoff_ms`) and stands again. A candidate with a majority leads: it
writes a LeaderChange record first, tells the others (BeginQuorumEpoch), and commits (moves the
high watermark) when a majority of voters has an offset in its own epoch. A Fetch off the leader's log is
answered with the divergence to truncate to (`rules.raft_diverging_end_offset`). A leader that
hears from no majority for 1.5 x `quorum_fetch_timeout_ms` resigns (KAFKA-15489's check-quorum,
3.7+: switch `kraft_check_quorum`; before it, it stays leader of its epoch). Brokers fetch as
observers: a node outside the voter set is one too (`RaftObserver`), and a leader counts
only the voters' Fetches for its high watermark and check-quorum. The leader's records linger `quorum_append_linger_ms` before they reach its log, in
one batch (`BatchAccumulator`; its offsets are given when written), and a parked Fetch is
answered when the log's end grows or its wait ends, never on a high watermark move alone
(`updateLeaderEndOffsetAndTimestamp` completes `fetchPurgatory` with the log end offset,
3.3.0-3.9.0). Records reach the controller layer through `on_committed(entries)` and
`on_leadership(claimed)`; nothing here knows record kinds beyond LeaderChange.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.kraft_messages import (
    LEADER_CHANGE,
    MetadataRecord,
    QuorumFetch,
    QuorumFetchResponse,
)
from sim.kafka.quorum_describe import RaftDescribe
from sim.kafka.quorum_elections import RaftElections
from sim.kafka.quorum_epochs import RaftEpochs
from sim.kafka.quorum_observer import RaftObserver
from sim.kafka.quorum_prevote import RaftPreVote
from sim.kafka.quorum_voters import RaftVoterChanges

RAFT_TICK_US = 50_000


class RaftQuorum(RaftEpochs, RaftElections, RaftPreVote, RaftObserver, RaftDescribe,
                 RaftVoterChanges):
    def init_raft(self, voters: list[str], kraft_version: int = 0) -> None:
        self.init_voter_set(voters, kraft_version)  # `voters`: the log's last voter set
        self.entries: list[tuple[int, MetadataRecord]] = []  # durable
        self.quorum_epoch = 0  # durable
        self.voted_for: str | None = None  # durable
        self.linger_gen = 0  # names the linger timer that may drain `pending`
        self._reset_raft_volatile()

    def _reset_raft_volatile(self) -> None:
        self.role = "follower"
        self.leader: str | None = None
        self.hw = 0
        # whether it has learned a high watermark (a Fetch answer's, or its own as leader):
        # Kafka's `QuorumState.highWatermark()` is empty until then, and its Fetch says -1
        self.hw_known = False
        self.epoch_start = 0
        self.votes: set[str] = set()
        self.rejected: set[str] = set()  # voters that refused this candidacy
        self.retries = 0  # `CandidateState.retries`: this candidacy's number in a row
        self.backoff_until_us = -1  # a candidate backing off before it stands again (-1: not)
        self.vote_sent: dict[str, int] = {}  # voter -> when this candidacy's Vote went to it
        self.voter_ends: dict[str, int] = {}
        self.voter_contact: dict[str, int] = {}
        self._reset_fetch_states()
        self.parked: dict[str, tuple] = {}  # fetcher -> (src, request, deadline_us)
        self.pending: list[MetadataRecord] = []  # written, lingering before the log takes them
        self.last_contact_us = self.now_us
        self.fetch_sent_us = -1
        self.fetch_dst: str | None = None  # where the last Fetch went
        self.fetched_from_leader = False  # `FollowerState.hasFetchedFromLeader` (KIP-996)
        self.election_deadline_us = self.now_us + self._election_timeout_us()
        self._reset_epoch_requests()
        self._reset_voter_change()

    def _election_timeout_us(self) -> int:
        base = self.cluster.quorum_election_timeout_ms * 1000
        return base + self.rng("election").randrange(base)

    @property
    def end_offset(self) -> int:
        """The log's end offset (records still lingering are not in the log)."""
        return len(self.entries)

    @property
    def next_offset(self) -> int:
        """The offset the next record written gets: after the log and what lingers."""
        return len(self.entries) + len(self.pending)

    def _last_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else 0

    def _majority(self) -> int:
        return len(self.voters) // 2 + 1

    # -- ticks -----------------------------------------------------------------------------
    def raft_tick(self) -> None:
        now = self.now_us
        if self._maybe_complete_shutdown(now):
            return
        shutting_down = self.shutdown_deadline_us >= 0  # it stands for no election
        if self.role == "leader":  # a leader outside its voter set (KIP-853) still leads
            self._poll_leader(now)
        elif self.role == "resigned":
            self._poll_resigned(now)
        elif self.is_observer:
            self._poll_observer(now)
        elif self.role == "candidate":
            self._poll_candidate(now)
        elif self.role == "prospective":
            self._poll_prospective(now)
        elif shutting_down:
            return
        elif self.leader is None:
            if now >= self.election_deadline_us:
                self._elect()
        elif now - self.last_contact_us > self.cluster.quorum_fetch_timeout_ms * 1000:
            self._elect()
        elif self.fetch_sent_us < 0 or now - self.fetch_sent_us > self._fetch_patience_us():
            self._fetch()

    def _poll_leader(self, now: int) -> None:
        """`pollLeader`: a resignation asked for (its own removal committed, KIP-853) first,
        then parked Fetches that timed out, check-quorum, an expired voter change, and
        BeginQuorumEpoch."""
        if self.resign_requested:
            self._resign("removed from the voter set")
            return
        self._answer_parked(expired_only=True)
        self._check_quorum(now)
        if self.role == "leader":
            self._expire_voter_change()
            self._announce()

    def _fetch_patience_us(self) -> int:
        return self.cluster.metadata_fetch_wait_ms * 1000 + V.FETCH_TIMEOUT_US

    def _check_quorum(self, now: int) -> None:
        """KAFKA-15489 (3.7): a leader that heard no Fetch from a majority of the voters for
        1.5 x quorum.fetch.timeout.ms resigns (`LeaderState.timeUntilCheckQuorumExpires`)."""
        limit = self.cluster.quorum_fetch_timeout_ms * 1500  # µs: CHECK_QUORUM_TIMEOUT_FACTOR 1.5
        if len(self.voters) == 1:  # "if there's only 1 voter, it should never get expired"
            return
        # the leader counts itself only while it is a voter (`updateCheckQuorumForFollowingVoter`)
        heard = (self.name in self.voters) + sum(1 for v in self.voters if v != self.name
                        and now - self.voter_contact.get(v, -limit - 1) <= limit)
        if self.rules.raft_resigns(self.protocol, heard, self._majority()):
            self._resign("lost quorum")

    # -- elections (and `RaftElections`) ---------------------------------------------------
    def _maybe_win(self) -> None:
        if self.role != "candidate" or len(self.votes) < self._majority():
            return
        self.role, self.leader = "leader", self.name
        self.voter_ends = {}  # voter -> its end offset, once it fetched in this epoch
        self._reset_fetch_states()  # a new `LeaderState`
        self.voter_contact = {v: self.now_us for v in self.voters if v != self.name}
        self.parked = {}
        self.epoch_start = self.end_offset
        self.emit(V.QUORUM_LEADER, {"epoch": self.quorum_epoch, "end_offset": self.end_offset,
                                    "high_watermark": self.hw})
        self.acked, self.epoch_sent = set(), {}  # `resetConnections`
        self.begin_epoch_due_us = 0  # `LeaderState`: beginQuorumEpochTimer starts expired
        self._announce()  # BeginQuorumEpoch: the voters learn who won
        # a control record drains the accumulator at once (`appendControlMessage`)
        self.append(MetadataRecord.of(LEADER_CHANGE, leader=self.name))
        self._start_of_epoch_voters()
        self.drain()

    def _leave_leadership(self, reason: str, named: str | None) -> None:
        """What a leader gives up with its leadership, resigned or stepped down: its parked
        Fetches are refused naming `named`, and its lingering records go with the accumulator."""
        self.emit(V.QUORUM_RESIGNED, {"epoch": self.quorum_epoch, "reason": reason})
        self._refuse_parked(named)
        self.pending = []
        self._close_voter_change()

    def _step_down(self, epoch: int, leader: str | None, reason: str) -> None:
        """Follow `leader` (None: unknown yet) at `epoch`; a leader resigns first. A voter made
        unattached in a higher epoch keeps the election time it had left if it was a candidate
        or knew no leader (`QuorumState.transitionToUnattached`, 3.3.0-3.7.0), so a stale
        candidate standing again and again does not hold off the others' elections."""
        keeps_timer = leader is None and epoch > self.quorum_epoch and (
            self.role in ("candidate", "prospective") or
            (self.role == "follower" and self.leader is None))
        was_leader = self.role == "leader"  # only a higher epoch steps a leader down
        if epoch > self.quorum_epoch:
            self.quorum_epoch, self.voted_for = epoch, None
        if was_leader:
            self._leave_leadership(reason, leader)
        self.role, self.leader = "follower", leader
        self.acked, self.epoch_sent = set(), {}  # `resetConnections`
        self.last_contact_us = self.now_us
        if not keeps_timer:
            self.election_deadline_us = self.now_us + self._election_timeout_us()
        self.fetch_sent_us, self.fetched_from_leader = -1, False
        if was_leader:
            self.on_leadership(False)

    # -- the leader's log ------------------------------------------------------------------
    def append(self, record: MetadataRecord) -> int:
        """Write `record` in this leader's epoch; returns its offset. It lingers with the
        records written after it until `quorum_append_linger_ms` after the first (0: it
        reaches the log at once), as `BatchAccumulator` holds a controller's writes."""
        offset = self.next_offset
        self.pending.append(record)
        linger_us = self.cluster.quorum_append_linger_ms * 1000
        if not linger_us:
            self.drain()
        elif len(self.pending) == 1:
            self.linger_gen += 1
            self.set_timer(linger_us, "linger", self.linger_gen)
        return offset

    def on_linger_end(self, gen: int) -> None:
        """The linger timer `gen` ran out: the records it held reach the log, unless a
        forced drain or a lost leadership took them first."""
        if gen == self.linger_gen and self.role == "leader":
            self.drain()

    def drain(self) -> None:
        """Move the lingering records into the log as one batch (`maybeAppendBatches`); the
        log's end grew, so the parked Fetches are answered (`fetchPurgatory.maybeComplete`)."""
        if not self.pending:
            return
        records, self.pending = self.pending, []
        self.linger_gen += 1
        for record in records:
            self.emit(V.METADATA_APPEND, {"offset": self.end_offset, "epoch": self.quorum_epoch,
                                          "record": record.to_json()})
            self.entries.append((self.quorum_epoch, record))
            self._voters_appended(self.end_offset - 1, record)
        self._advance_hw()
        self._answer_parked(expired_only=False)

    def _advance_hw(self) -> None:
        # the voter set's (KIP-853: the last appended), the leader's own end (first) only
        # while it is a voter
        ends = [self.end_offset] * (self.name in self.voters) + [
            self.voter_ends.get(v, 0) for v in self.voters if v != self.name]
        hw = self.rules.raft_high_watermark(ends, self.hw, self.epoch_start)
        if hw <= self.hw:
            return
        start, self.hw, self.hw_known = self.hw, hw, True
        fresh = [(o, *self.entries[o]) for o in range(start, hw)]
        self.emit(V.METADATA_COMMIT, {"epoch": self.quorum_epoch, "high_watermark": hw,
                                      "records": [[o, e, r.to_json()] for o, e, r in fresh]})
        if self.rules.raft_hw_move_answers_parked(self.protocol):
            self._answer_parked(expired_only=False)
        self.on_committed(fresh)
        self._voter_change_committed()
        if start <= self.epoch_start < hw:
            self.on_leadership(True)

    # -- Fetch -----------------------------------------------------------------------------
    def on_quorum_fetch(self, msg) -> None:
        """`handleFetchRequest` (3.7.0): a malformed Fetch is INVALID_REQUEST before its epoch
        is looked at (`rules.raft_fetch_request_error`), then `validateLeaderOnlyRequest`; a
        valid one from a voter counts as its acknowledgement of this leader and its fetch
        (`updateReplicaState`); one that finds nothing new waits up to its MaxWaitMs (0:
        answered at once)."""
        req = msg.body
        error = self.rules.raft_fetch_request_error(
            self._max_wait_ms(req), req.fetch_offset, req.last_fetched_epoch, req.epoch) or \
            self.rules.raft_fetch_error(req.epoch, self.quorum_epoch, self.role == "leader")
        if error:  # with this voter's epoch and the leader it knows, for the fetcher to follow
            self.send(msg.src, "QuorumFetchResponse", QuorumFetchResponse(
                self.quorum_epoch, self.leader, error, (), -1, None, req.corr))
            return
        diverging = self.rules.raft_diverging_end_offset(
            [e for e, _ in self.entries], req.last_fetched_epoch, req.fetch_offset)
        if diverging is None:
            self._track_fetch(req.replica, req.fetch_offset)
            # an observer's end too, which counts once it is added (`updateVoterAndObserverStates`)
            self.voter_ends[req.replica] = req.fetch_offset
        if req.replica in self.voters and diverging is None:  # an observer's is not counted
            self.voter_contact[req.replica] = self.now_us
            self.acked.add(req.replica)
            self._advance_hw()
        if diverging is None and req.fetch_offset >= self.end_offset and \
                self._max_wait_ms(req) > 0 and \
                not self.rules.raft_fetch_answered_now(self.protocol, req.high_watermark,
                                                       self._visible_hw()):
            deadline = self.now_us + self._max_wait_ms(req) * 1000
            self.parked[msg.src] = (msg.src, req, deadline)
            return
        self._answer(msg.src, req, diverging)

    def _max_wait_ms(self, req) -> int:
        """The Fetch's MaxWaitMs: its own, else the fetchers' (`metadata_fetch_wait_ms`)."""
        return self.cluster.metadata_fetch_wait_ms if req.max_wait_ms is None else req.max_wait_ms

    def _answer(self, dst: str, req, diverging=None) -> None:
        """Answer a Fetch with the entries after its offset and the high watermark, which a new
        leader does not know (-1) until a majority holds its epoch's first record: the one it
        had as a follower may be behind what the old leader committed (`LeaderState.
        highWatermark` is empty until `maybeUpdateHighWatermark` passes the epoch start)."""
        start = min(req.fetch_offset, self.end_offset)
        entries = () if diverging else tuple(
            (o, *self.entries[o]) for o in range(start, self.end_offset))
        hw = self._visible_hw()
        self.send(dst, "QuorumFetchResponse", QuorumFetchResponse(
            self.quorum_epoch, self.name, E.NONE, entries, hw, diverging, req.corr))

    def _visible_hw(self) -> int:
        """The high watermark this leader reports: -1 until its epoch's first record commits."""
        return self.hw if self.hw > self.epoch_start else -1

    def on_disconnect(self, peer: str) -> None:
        """`peer`'s connection closed: a Fetch it had parked here goes with it. Kafka answers a
        parked Fetch on the connection it came on, and the socket server drops an answer for a
        closed connection; `peer`, restarted, must not apply records it asked for before."""
        self.parked.pop(peer, None)

    def _refuse_parked(self, leader: str | None) -> None:
        """A leader stepping down answers its parked Fetches NOT_LEADER_OR_FOLLOWER with the
        epoch and `leader` its state names as the answer is built (`transitionToResigned`,
        `onBecomeFollower`: `fetchPurgatory.completeAllExceptionally`, 3.7.0)."""
        for src in sorted(self.parked):
            req = self.parked[src][1]
            self.send(src, "QuorumFetchResponse", QuorumFetchResponse(
                self.quorum_epoch, leader, E.NOT_LEADER_OR_FOLLOWER, (), -1, None, req.corr))
        self.parked = {}

    def _answer_parked(self, expired_only: bool) -> None:
        now = self.now_us
        for src in sorted(self.parked):
            _src, req, deadline = self.parked[src]
            if expired_only and now < deadline:
                continue
            del self.parked[src]
            if self.role == "leader":
                self._answer(src, req)

    def _fetch(self, dst: str | None = None) -> None:
        """A Fetch to `dst`, by default the leader it follows."""
        self.fetch_sent_us, self.fetch_dst = self.now_us, dst or self.leader
        self.send(self.fetch_dst, "QuorumFetch", QuorumFetch(
            self.quorum_epoch, self.name, self.end_offset, self._last_epoch(),
            not self.is_observer,
            high_watermark=self.rules.raft_fetch_high_watermark(self.protocol, self.hw,
                                                                self.hw_known)))

    def on_quorum_fetch_response(self, msg) -> None:
        resp = msg.body
        if self.is_observer:
            self._on_observer_fetch_response(msg)
            return
        if resp.epoch > self.quorum_epoch or (resp.epoch == self.quorum_epoch and resp.leader and
                                              self.role in ("candidate", "prospective") and
                                              self.leader is None and resp.leader != self.name):
            self._step_down(resp.epoch, resp.leader, "higher epoch")
        if resp.epoch < self.quorum_epoch or self.role in ("leader", "resigned", "prospective"):
            return
        self.fetch_sent_us = -1
        if resp.error:
            self.leader = resp.leader
            return
        self.leader = resp.leader
        self._apply_fetched(resp)
        self._fetch()

    def _apply_fetched(self, resp) -> None:
        """A clean Fetch answer of the leader: the fetch timer starts afresh, and the entries
        are appended (or the log truncated to the divergence) and the high watermark taken."""
        self.last_contact_us, self.fetched_from_leader = self.now_us, True
        if resp.diverging is not None:
            self._truncate(resp.diverging)
        else:
            for offset, epoch, record in resp.entries:
                if offset == self.end_offset:
                    self.entries.append((epoch, record))
                    self._voters_appended(offset, record)
            self.hw = max(self.hw, min(resp.high_watermark, self.end_offset))
            self.hw_known = self.hw_known or resp.high_watermark >= 0  # `updateFollowerHighWatermark`

    def _truncate(self, diverging: tuple) -> None:
        epoch, end = diverging
        own = [i for i, (e, _) in enumerate(self.entries) if e <= epoch]
        to = min(end, own[-1] + 1 if own else 0)
        if to < self.end_offset:
            self.emit(V.METADATA_TRUNCATE, {"to_offset": to, "end_offset": self.end_offset})
            del self.entries[to:]
            self._voters_truncated(to)
