"""A voter's side of the quorum's elections (mixin of `RaftQuorum`, `KafkaRaftClient` at
3.3.0-3.7.0): standing as candidate (`transitionToCandidate`), asking for votes and asking
again (`maybeSendVoteRequests`), backing off after a lost election (`pollCandidate`,
`binaryExponentialElectionBackoffMs`), granting votes by its `QuorumState`
(`handleVoteRequest`, `rules.raft_grants_vote`) and counting the answers
(`handleVoteResponse`). The host provides the quorum's state (`voters`, `quorum_epoch`,
`voted_for`, `role`, `leader`, `votes`, `rejected`, `retries`, `backoff_until_us`,
`vote_sent`, `election_deadline_us`), `_step_down`, `_maybe_win`, `_last_epoch`,
`end_offset`, `_majority`, `_election_timeout_us`, `rules`, `cluster`, `rng`, `send` and
`emit`.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.kraft_messages import VoteResponse


class RaftElections:
    def _stand(self) -> None:
        """`transitionToCandidate`: a new epoch, a vote for itself, Vote to the others."""
        if self.role == "leader":
            return
        self.retries = self.retries + 1 if self.role in ("candidate", "prospective") else 1
        self.quorum_epoch += 1
        self.voted_for = self.name
        self.role, self.leader, self.votes = "candidate", None, {self.name}
        self.rejected, self.backoff_until_us, self.vote_sent = set(), -1, {}
        self.acked, self.epoch_sent = set(), {}  # `resetConnections`
        self.election_deadline_us = self.now_us + self._election_timeout_us()
        self.emit(V.QUORUM_ELECTION, {"epoch": self.quorum_epoch,
                                      "end_offset": self.end_offset})
        self._send_votes()
        self._maybe_win()

    def _send_votes(self, pre_vote: bool = False) -> None:
        """Vote to each voter that has not answered this candidacy (or pre-election) and was
        not asked within quorum.request.timeout.ms (`maybeSendVoteRequests`: RequestManager
        sends again once a request timed out)."""
        body = self._vote_body(pre_vote)
        limit = self.cluster.quorum_request_timeout_ms * 1000
        for v in self.voters:
            if v != self.name and v not in self.votes and v not in self.rejected and \
                    self.now_us - self.vote_sent.get(v, -limit) >= limit:
                self.vote_sent[v] = self.now_us
                self.send(v, "Vote", body)

    def _poll_candidate(self, now: int) -> None:
        """`pollCandidate` (3.3.0-3.7.0): a candidate backing off stands again once its
        backoff is over (with `raft_pre_vote`, 4.0+, it becomes prospective: `_elect`); one
        whose election timeout passed backs off first, or with `raft_pre_vote` becomes
        prospective at once (4.0's `CandidateState`: "If election times out, it will transition
        immediately to prospective"; `KafkaRaftClientPreVoteTest.testPreVoteNotSupportedByRemote`);
        else it asks the voters that have not answered again, while it can still win. A
        candidate shutting down only asks, until it wins (to resign) or another leads."""
        if self.shutdown_deadline_us >= 0:
            if not self._vote_rejected():
                self._send_votes()
        elif self.backoff_until_us >= 0:
            if now >= self.backoff_until_us:
                self._elect()
        elif now >= self.election_deadline_us:
            if self.protocol.raft_pre_vote:
                self._elect()
            else:
                self._back_off()
        elif not self._vote_rejected():
            self._send_votes()

    def _vote_rejected(self) -> bool:
        return self.rules.raft_vote_rejected(len(self.votes), len(self.voters) - len(
            self.votes) - len(self.rejected), self._majority())

    def _back_off(self) -> None:
        """`CandidateState.startBackingOff` for `binaryExponentialElectionBackoffMs`."""
        draw = self.rng("election_backoff").randrange
        self.backoff_until_us = self.now_us + 1000 * self.rules.raft_election_backoff_ms(
            self.retries, draw, self.cluster.quorum_election_backoff_max_ms)

    def quorum_state(self) -> str:
        """The voter's state as Kafka's `QuorumState` names it: leader, resigned (a leader that
        gave up its epoch's leadership, still naming itself), candidate, follower (it knows this
        epoch's leader), voted (it voted in this epoch and knows no leader), or unattached."""
        if self.role != "follower":
            return self.role
        if self.leader is not None:
            return "follower"
        return "voted" if self.voted_for is not None else "unattached"

    def on_vote(self, msg) -> None:
        """`handleVoteRequest` (3.7.0): a malformed Vote or one of an older epoch is refused
        (`rules.raft_vote_request_error`); one of a newer epoch makes the voter unattached in it
        first; it then grants as its state allows (`rules.raft_grants_vote`), and an
        unattached voter that grants has voted."""
        req = msg.body
        if req.pre_vote:
            self._answer_pre_vote(msg)
            return
        up_to_date = self._vote_checked(msg, self.rules.raft_vote_request_error(
            req.epoch, req.last_epoch, req.last_offset, self.quorum_epoch))
        if up_to_date is None:
            return
        state = self._vote_state()
        granted = self.rules.raft_grants_vote(state, self.voted_for, req.candidate, up_to_date)
        # `transitionToVoted`: a new election timeout. A prospective records the vote in a new
        # ProspectiveState (`prospectiveAddVotedState`, 4.0), whose EpochElection holds only
        # its own pre-vote: the pre-votes it had gathered count no more
        if granted and state == "unattached":
            self.voted_for = req.candidate
            self.election_deadline_us = self.now_us + self._election_timeout_us()
            if self.role == "prospective":
                self.votes, self.rejected = {self.name}, set()
        self.send(msg.src, "VoteResponse", VoteResponse(self.quorum_epoch, granted,
                                                        leader=self.leader))

    def _vote_checked(self, msg, error: int) -> bool | None:
        """A Vote (or pre-vote) past its checks: refused with `error`, or by the voter set
        (`rules.raft_voter_set_error`: up to 3.7 an observer, or a voter asked by a non-voter,
        refuses it) (None returned), else,
        once an epoch above the voter's has made it unattached in it, whether the requester's
        log is at least as up to date as its own (`rules.raft_log_up_to_date`)."""
        req = msg.body
        error = error or self.rules.raft_voter_set_error(
            self.protocol, self.name in self.voters, req.candidate in self.voters)
        if error != E.NONE:
            self.send(msg.src, "VoteResponse", VoteResponse(self.quorum_epoch, False, error,
                                                            self.leader))
            return None
        if req.epoch > self.quorum_epoch:
            self._step_down(req.epoch, None, "higher epoch")
        return self.rules.raft_log_up_to_date(req.last_epoch, req.last_offset,
                                              self._last_epoch(), self.end_offset)

    def on_vote_response(self, msg) -> None:
        """`handleVoteResponse`: first `maybeHandleCommonResponse` (3.7.0 and 4.0 alike): an
        answer of a higher epoch makes the voter follow the leader it names, else unattached
        in it; one naming its epoch's leader, when it knows none (a candidate, an unattached
        or a prospective voter), makes it follow that leader. Then a prospective counts a
        pre-vote, a candidate a vote."""
        resp = msg.body
        leader = resp.leader if resp.leader != self.name else None
        if resp.epoch > self.quorum_epoch:
            self._step_down(resp.epoch, leader, "higher epoch")
            return
        if resp.epoch == self.quorum_epoch and leader is not None and self.leader is None \
                and self.role not in ("leader", "resigned"):
            self._step_down(resp.epoch, leader, "leader known")
            return
        if self.role == "prospective":
            self._on_pre_vote_response(msg)
            return
        if self.role != "candidate" or resp.epoch != self.quorum_epoch:
            return
        if resp.granted:
            self.votes.add(msg.src)
            self._maybe_win()
            return
        # a rejection that leaves no way to a majority backs off at once, rather than waiting
        # out the election timeout (`handleVoteResponse`: "the vote has become gridlocked");
        # from 4.1 it waits out the election timeout (KAFKA-18345: "the election timeout
        # already provides a natural throttle and it is randomized")
        self.rejected.add(msg.src)
        if self._vote_rejected() and self.backoff_until_us < 0 and \
                not self.protocol.raft_candidate_waits_election_timeout:
            self._back_off()
