"""A voter's word on who leads an epoch (mixin of `RaftQuorum`, `KafkaRaftClient` at
3.3.0-3.7.0): the new leader's BeginQuorumEpoch, sent until each voter answers or fetches
(`pollLeader` -> `maybeSendRequests(nonAcknowledgingVoters)`); the resigning leader's
EndQuorumEpoch, which names its preferred successors and is sent until each voter answers
(`pollResigned`); the answers to both (`handleBeginQuorumEpochRequest`,
`handleEndQuorumEpochRequest`, `maybeHandleCommonResponse`); a leader's resignation, by
check-quorum, by `resign(epoch)` or by a graceful shutdown (`shutdown(timeoutMs)`), which ends
once another voter leads or the timeout passes (`maybeCompleteShutdown`).

Contract: the host provides the quorum's state (`voters`, `quorum_epoch`, `role`, `leader`,
`voter_ends`, `election_deadline_us`, `last_contact_us`, `fetch_sent_us`), `_step_down`,
`_leave_leadership`, `_stand`, `_election_timeout_us`, `on_leadership`, `rules`, `cluster`,
`send`, `emit` and `world`. A request to a voter is in flight until answered or until
`quorum_request_timeout_ms` passes (`RequestManager.ConnectionState`), and sent again then;
an answer makes the voter ready again at once (the retry backoff, quorum.retry.backoff.ms,
20 ms by default, is below the model's tick). Only an answer to a request in flight is taken
(`isResponseExpected`); a state change forgets them (`resetConnections`).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.kraft_messages import BeginQuorumEpoch, EndQuorumEpoch, QuorumAnswer


class RaftEpochs:
    def _reset_epoch_requests(self) -> None:
        self.acked: set[str] = set()  # voters that answered this leader's BeginQuorumEpoch
        self.epoch_sent: dict[str, int] = {}  # voter -> when its request in flight went
        self.successors: tuple = ()  # a resigned leader's preferred successors
        self.shutdown_deadline_us = -1  # a graceful shutdown's end (-1: none begun)
        self.begin_epoch_due_us = 0  # a leader's next BeginQuorumEpoch heartbeat (3.9+)

    def _due(self, voter: str) -> bool:
        """Whether `voter` may be sent a request now: none in flight, or it timed out."""
        sent = self.epoch_sent.get(voter)
        return sent is None or \
            self.now_us - sent >= self.cluster.quorum_request_timeout_ms * 1000

    def _send_epoch_requests(self, kind: str, body, voters) -> None:
        for v in voters:
            if v != self.name and self._due(v):
                self.epoch_sent[v] = self.now_us
                self.send(v, kind, body)

    # -- the leader's BeginQuorumEpoch -----------------------------------------------------
    def _announce(self) -> None:
        """BeginQuorumEpoch to each voter that has neither answered one nor fetched in this
        epoch (`LeaderState.nonAcknowledgingVoters`, 3.3-3.8); from 3.9 (KAFKA-16536, switch
        `raft_begin_quorum_heartbeat`) to every other voter each time the leader's
        beginQuorumEpochTimer runs out, at once on election and then every half
        quorum.fetch.timeout.ms (`maybeSendBeginQuorumEpochRequests`), answered or not, so a
        voter that lost track of the leader (restarted, or standing in the leader's epoch)
        learns it within that time."""
        body = BeginQuorumEpoch(self.quorum_epoch, self.name)
        if not self.protocol.raft_begin_quorum_heartbeat:
            self._send_epoch_requests("BeginQuorumEpoch", body,
                                      [v for v in self.voters if v not in self.acked])
        elif self.now_us >= self.begin_epoch_due_us:
            self._send_epoch_requests("BeginQuorumEpoch", body, self.voters)
            self.begin_epoch_due_us = self.now_us + self.cluster.quorum_fetch_timeout_ms * 500

    def on_begin_quorum_epoch(self, msg) -> None:
        """`handleBeginQuorumEpochRequest`: refused by `rules.raft_voter_only_error`
        (and `raft_voter_set_error`), else the
        voter follows the named leader if the epoch is newer or it knows no leader in it
        (`maybeTransition`), and answers with the epoch and leader it then knows."""
        req = msg.body
        error = self.rules.raft_voter_only_error(req.epoch, self.quorum_epoch,
                                                 req.leader is not None) or \
            self.rules.raft_voter_set_error(self.protocol, self.name in self.voters,
                                            req.leader in self.voters)
        if error == E.NONE:
            self._maybe_transition(req.leader, req.epoch)
        self.send(msg.src, "BeginQuorumEpochResponse",
                  QuorumAnswer(self.quorum_epoch, self.leader, error))

    def on_begin_quorum_epoch_response(self, msg) -> None:
        """`handleBeginQuorumEpochResponse`: a leader counts the voter as acknowledging."""
        self._epoch_answer(msg, "leader")

    def _epoch_answer(self, msg, role: str) -> None:
        """An answer to this voter's BeginQuorumEpoch (`role` leader) or EndQuorumEpoch
        (resigned): taken only while its request is in flight (`isResponseExpected`), through
        `maybeHandleCommonResponse`; a clean one in `role` counts the voter as acknowledging."""
        resp = msg.body
        if self.epoch_sent.pop(msg.src, None) is None:
            return  # no request of this voter's is in flight: not expected
        if self._common_response(resp.epoch, resp.leader, resp.error) is None and \
                resp.error == E.NONE and self.role == role:
            self.acked.add(msg.src)

    def _maybe_transition(self, leader: str | None, epoch: int) -> None:
        """`maybeTransition`: a newer epoch is taken (with its leader if named); a leader named
        in the voter's own epoch, where it knows none, is followed. (A different leader of
        its own epoch than the one it knows makes Kafka throw; the model keeps what it has.)"""
        if epoch > self.quorum_epoch:
            self._step_down(epoch, leader, "higher epoch")
        elif epoch == self.quorum_epoch and self._learns_leader(leader):
            self._step_down(epoch, leader, "leader known")

    def _learns_leader(self, leader: str | None) -> bool:
        """A leader named in the voter's own epoch is news to a candidate or a follower that
        knows none."""
        return leader is not None and self.role in ("candidate", "follower", "prospective") \
            and self.leader is None

    def _common_response(self, epoch: int, leader: str | None, error: int) -> bool | None:
        """`maybeHandleCommonResponse`: True when the answer was dealt with here (an older
        epoch, UNKNOWN_LEADER_EPOCH; or a newer epoch, FENCED_LEADER_EPOCH or
        NOT_LEADER_OR_FOLLOWER, which move the voter on); None when its handler goes on."""
        if epoch < self.quorum_epoch or error == E.UNKNOWN_LEADER_EPOCH:
            return True
        if epoch > self.quorum_epoch or error in (E.FENCED_LEADER_EPOCH,
                                                  E.NOT_LEADER_OR_FOLLOWER):
            self._maybe_transition(leader, epoch)
            return True
        if self._learns_leader(leader):
            self._step_down(epoch, leader, "leader known")
            return True if error != E.NONE else None
        return None

    # -- resignation and EndQuorumEpoch ----------------------------------------------------
    def _resign(self, reason: str, successors: tuple | None = None) -> None:
        """`transitionToResigned(nonLeaderVotersByDescendingFetchOffset)` (3.7.0): the leader
        gives up its leadership but stays its epoch's leader in name (`ResignedState.
        election()` names itself): it takes no more writes, refuses Fetches as not the leader
        (naming itself), grants no vote in its epoch, tells the other voters (EndQuorumEpoch,
        its preferred successors the furthest fetched first), and stands as candidate once
        its election timeout passes (`pollResigned`), unless it is shutting down. (`successors`
        given: a leader restarted resigned names none, `QuorumState.initialize`.)"""
        self._leave_leadership(reason, self.name)
        self.successors = self.rules.raft_preferred_successors(
            self.voters, self.name, self.voter_ends) if successors is None else successors
        self.role = "resigned"
        self.election_deadline_us = self.now_us + self._election_timeout_us()
        self.fetch_sent_us = -1
        self.acked, self.epoch_sent = set(), {}
        self.on_leadership(False)
        self._end_epoch()

    def _end_epoch(self) -> None:
        """EndQuorumEpoch to each voter that has not answered it (`ResignedState.
        unackedVoters`)."""
        self._send_epoch_requests("EndQuorumEpoch", EndQuorumEpoch(
            self.quorum_epoch, self.name, self.successors),
            [v for v in self.voters if v not in self.acked])

    def _poll_resigned(self, now: int) -> None:
        """`pollResigned`: EndQuorumEpoch again where due; the election (with `raft_pre_vote`,
        the pre-election: `_elect`) once its timeout passed, unless shutting down (it stays resigned until the shutdown ends)."""
        self._end_epoch()
        if self.shutdown_deadline_us < 0 and now >= self.election_deadline_us:
            if self.is_observer:  # removed from the voter set (KIP-853): no candidacy, but
                # a new epoch, so no Fetch answer names it leader again (3.9.0-rc3)
                self._step_down(self.quorum_epoch + 1, None, "not a voter")
            else:
                self._elect()

    def on_end_quorum_epoch(self, msg) -> None:
        """`handleEndQuorumEpochRequest` (3.7.0): refused by `rules.raft_voter_only_error`
        (and `raft_voter_set_error`);
        else `maybeTransition` to the named leader, and a follower of that leader stands after
        `rules.raft_end_epoch_backoff_ms` by its place among the preferred successors (its
        fetch timeout is overridden, `FollowerState.overrideFetchTimeout`); a voter following
        another leader, a candidate or a leader of a newer epoch only answers."""
        req = msg.body
        error = self.rules.raft_voter_only_error(req.epoch, self.quorum_epoch,
                                                 req.leader is not None) or \
            self.rules.raft_voter_set_error(self.protocol, self.name in self.voters,
                                            req.leader in self.voters)
        if error == E.NONE:
            self._maybe_transition(req.leader, req.epoch)
            if self.role == "follower" and self.leader == req.leader:
                backoff_ms = self.rules.raft_end_epoch_backoff_ms(
                    req.preferred_successors, self.name, self.cluster.quorum_election_backoff_max_ms)
                # the follower stands once its fetch timeout (`raft_tick`) passes from here
                self.last_contact_us = self.now_us + 1000 * (
                    backoff_ms - self.cluster.quorum_fetch_timeout_ms)
        self.send(msg.src, "EndQuorumEpochResponse",
                  QuorumAnswer(self.quorum_epoch, self.leader, error))

    def on_end_quorum_epoch_response(self, msg) -> None:
        """`handleEndQuorumEpochResponse`: the voter has heard of the resignation."""
        self._epoch_answer(msg, "resigned")

    def restart_raft(self) -> None:
        """`QuorumState.initialize` (3.3.0-3.7.0): a restarted voter starts in the state its
        quorum-state file holds, the one it was in when it stopped: a leader (or resigned
        leader) of its epoch resigned in it, naming no successors (it may not vote again in
        the epoch it led, and tells the others); a candidate a candidate of its epoch, asking
        again; a follower following the leader it knew (`FollowerState`, whose stored election
        keeps no vote); a voter that voted, voted; else unattached. (A prospective, KIP-996, is
        not persisted: it restarts in the state it came from, `_vote_state`.) Its volatile state starts
        afresh (`_reset_raft_volatile`)."""
        was, leader = self._vote_state(), self.leader
        self._reset_raft_volatile()
        if was in ("leader", "resigned"):
            self.role, self.leader, self.successors = "resigned", self.name, ()
            self.emit(V.QUORUM_RESIGNED, {"epoch": self.quorum_epoch, "reason": "restarted"})
        elif was == "candidate":
            self.role, self.votes, self.retries = "candidate", {self.name}, 1
        elif was == "follower":
            self.leader = leader

    # -- the client's API: resign(epoch), shutdown(timeoutMs) ------------------------------
    def resign(self, epoch: int) -> None:
        """`KafkaRaftClient.resign(epoch)`: the leader of `epoch` resigns at once (its next
        poll, `pollLeader`: `isResignRequested`); an older epoch, or a voter that does not lead
        it, is ignored (Kafka throws for a voter not leading its current epoch)."""
        if self.role == "leader" and epoch == self.quorum_epoch:
            self._resign("resign requested")

    def begin_raft_shutdown(self, timeout_ms: int) -> None:
        """`KafkaRaftClient.shutdown(timeoutMs)`: a leader resigns at once; a voter stands for
        no election from now on (a candidate keeps asking for votes), and the shutdown ends
        once another voter leads the voter's epoch or the timeout passes."""
        self.shutdown_deadline_us = self.now_us + timeout_ms * 1000
        if self.role == "leader":
            self._resign("shutdown")
        self._maybe_complete_shutdown(self.now_us)

    def _maybe_complete_shutdown(self, now: int) -> bool:
        """`maybeCompleteShutdown`: once timed out, or once another voter is known to lead
        (or the quorum has no other voter, or the node is an observer), the node stops. True when it stopped."""
        if self.shutdown_deadline_us < 0:
            return False
        remote_leader = self.leader is not None and self.leader != self.name
        if now < self.shutdown_deadline_us and not remote_leader and len(self.voters) > 1 \
                and not self.is_observer:
            return False
        self.world.crash(self.name)
        return True
