"""A voter's Pre-Vote (KIP-996, Kafka 4.0+, switch `raft_pre_vote`; mixin of `RaftQuorum`):
a voter whose fetch or election timeout passes, a resigned leader whose election timeout
passes, a candidate whose election timed out (at once) and one that lost (once its backoff
ends, or from 4.1 its election timeout) become Prospective at their current epoch instead of
standing (`transitionToProspective`: no epoch bump, no new election state) and ask the other
voters with Vote PreVote=true at that epoch (`buildVoteRequest(..., preVote)`); a majority
granted makes it a candidate (`transitionToCandidate`, epoch + 1), a lost pre-election or its
timeout leaves it at its epoch, following the leader it knew or unattached (`pollProspective`).
A voter answers a pre-vote without changing its vote (`rules.pre_vote`). Off (up to 3.9) a
voter stands at once (`RaftElections._stand`). Read in the 4.0 line (docs/profiles.md).

Contract: the host provides what `RaftElections` uses, and `fetched_from_leader` (set by a
successful Fetch answer since it began to follow, reset by `_step_down`).
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.kraft_messages import Vote, VoteResponse
from sim.kafka.rules import pre_vote as P


class RaftPreVote:
    def _elect(self) -> None:
        """An election timer ran out: Prospective with Pre-Vote, else a candidate at once."""
        if self.protocol.raft_pre_vote:
            self._prospect()
        else:
            self._stand()

    def _prospect(self) -> None:
        """`transitionToProspective`: at its epoch, a vote for itself, pre-votes to the others.
        It keeps the leader it followed (a resigned leader names none) and its vote; a
        candidate's retries carry on into the candidacy a won pre-election starts."""
        self.retries = self.retries if self.role == "candidate" else 0
        if self.role == "resigned":
            self.leader = None
        self.role, self.votes = "prospective", {self.name}
        self.rejected, self.backoff_until_us, self.vote_sent = set(), -1, {}
        self.acked, self.epoch_sent = set(), {}  # `resetConnections`
        self.election_deadline_us = self.now_us + self._election_timeout_us()
        self.emit(V.QUORUM_PROSPECTIVE, {"epoch": self.quorum_epoch,
                                         "end_offset": self.end_offset})
        self._send_votes(pre_vote=True)
        self._maybe_prospect_won()

    def _poll_prospective(self, now: int) -> None:
        """`pollProspective`: shutting down it only asks; once its election timeout passed it
        lost; else it asks the voters that have not answered, while it can still win."""
        if self.shutdown_deadline_us >= 0:
            self._send_votes(pre_vote=True)
        elif now >= self.election_deadline_us:
            self._lose_pre_vote(timed_out=True)
        elif not self._vote_rejected():
            self._send_votes(pre_vote=True)

    def _maybe_prospect_won(self) -> None:
        """`maybeTransitionForward`: a majority of pre-votes makes it a candidate."""
        if self.role == "prospective" and len(self.votes) >= self._majority():
            self._stand()

    def _lose_pre_vote(self, timed_out: bool = False) -> None:
        """`pollProspective`'s election loss: back to its epoch's follower or unattached state
        (`rules.pre_vote.after_pre_vote_loss`). A follower's fetch timer starts afresh; an
        unattached voter's election timer too after a rejection, but after a timeout it keeps
        the prospective's, which has run out (`rules.pre_vote.unattached_keeps_timer`), so the
        voter is prospective again at its next poll."""
        deadline = self.election_deadline_us
        leader = self.leader if P.after_pre_vote_loss(self.leader) == "follower" else None
        self._step_down(self.quorum_epoch, leader, "pre-vote lost")
        if leader is None and P.unattached_keeps_timer(timed_out):
            self.election_deadline_us = deadline

    def _answer_pre_vote(self, msg) -> None:
        """`handleVoteRequest` for a pre-vote (4.0+): checked (`rules.pre_vote.
        vote_request_error`); an epoch above the voter's makes it unattached in it, as any Vote
        does; then granted by its state (`rules.pre_vote.grants_pre_vote`). Nothing else
        changes: no vote is recorded and no timer reset."""
        req = msg.body
        up_to_date = self._vote_checked(msg, P.vote_request_error(
            True, req.epoch, req.last_epoch, req.last_offset, self.quorum_epoch))
        if up_to_date is None:
            return
        granted = P.grants_pre_vote(self.quorum_state(), self.fetched_from_leader, up_to_date)
        self.send(msg.src, "VoteResponse", VoteResponse(self.quorum_epoch, granted,
                                                        leader=self.leader))

    def _on_pre_vote_response(self, msg) -> None:
        """`handleVoteResponse` in the Prospective state, for a pre-vote it sent in this state,
        once `on_vote_response` has handled an answer naming a leader (a resigned leader's
        epoch names itself, which `transitionToFollower` refuses): an error is ignored, a grant
        counts, and a rejection that leaves no way to a majority loses the pre-election."""
        resp = msg.body
        if resp.epoch != self.quorum_epoch or msg.src not in self.vote_sent:
            return
        if resp.error:
            return
        elif resp.granted:
            self.votes.add(msg.src)
            self._maybe_prospect_won()
        else:
            self.rejected.add(msg.src)
            if self._vote_rejected():
                self._lose_pre_vote()

    def _vote_state(self) -> str:
        """The state by which this voter answers a standard Vote and restarts: a prospective's
        is that of the follower or unattached state it came from (`rules.pre_vote.
        real_vote_state`; Prospective is not persisted, `QuorumState.initialize`)."""
        if self.role == "prospective":
            return P.real_vote_state(self.leader, self.voted_for)
        return self.quorum_state()

    def _vote_body(self, pre_vote: bool) -> Vote:
        return Vote(self.quorum_epoch, self.name, self._last_epoch(), self.end_offset, pre_vote)
