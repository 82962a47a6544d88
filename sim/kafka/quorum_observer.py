"""A Raft node outside the voter set: an observer of the quorum (mixin of `RaftQuorum`;
`KafkaRaftClient` read at 3.7.0 and 3.9.0-rc3, and in the 4.0 line through a stored copy,
where `pollFollowerAsObserver` reads as at 3.9).

An observer (`QuorumState.isObserver`: its id is not among the voters) never stands: it is
unattached, or a follower of the leader it learned from a Fetch answer (`maybeTransition`), and
it only fetches. Unattached (`pollUnattachedAsObserver`), or a follower whose fetch timeout
passed (`pollFollowerAsObserver`: `hasFetchTimeoutExpired` keeps it a follower, it does not go
back to unattached), it sends its Fetch to any voter (`maybeSendAnyVoterFetch`); a follower
otherwise fetches from its leader, and from another voter once a Fetch to the leader timed out
or was answered with an error that names no leader (`BROKER_NOT_AVAILABLE`: the leader's
connection backs off). Kafka's `RequestManager.findReadyVoter` picks a ready voter at random
(3.9: `findReadyBootstrapServer`, the voters' endpoints when no bootstrap servers are set); the
model takes the voters in turn, the one after the last asked (skipping one to avoid), so a run
is the same at every seed: a probe names where each Fetch goes. It keeps one Fetch in flight at
a time (Kafka may have one in flight to each voter it finds ready). How an observer answers a
Vote, BeginQuorumEpoch or EndQuorumEpoch is the voters' rule with `rules.raft_voter_set_error`
(INCONSISTENT_VOTER_SET up to 3.7, its state's answer from 3.8).

Contract: the host provides `voters`, `name`, `leader`, `fetch_sent_us`, `fetch_dst`,
`last_contact_us`, `_fetch(dst)`, `_fetch_patience_us`, `_common_response`, `_apply_fetched`,
`cluster` and `now_us`.
"""

from __future__ import annotations

from sim.kafka import errors as E


class RaftObserver:
    @property
    def is_observer(self) -> bool:
        """`QuorumState.isObserver`: this node is not one of the voters."""
        return self.name not in self.voters

    def _poll_observer(self, now: int) -> None:
        """`pollFollowerAsObserver` / `pollUnattachedAsObserver`: a Fetch in flight is waited
        for until it times out; then, or with none in flight, the next goes to the leader, or
        to any voter (see the module docstring)."""
        in_flight = self.fetch_sent_us >= 0
        if in_flight and now - self.fetch_sent_us <= self._fetch_patience_us():
            return
        fetch_timed_out = now - self.last_contact_us > self.cluster.quorum_fetch_timeout_ms * 1000
        if self.leader is None or fetch_timed_out:
            self._fetch_any_voter(avoid=self.fetch_dst if in_flight else None)
        elif in_flight and self.fetch_dst == self.leader:
            self._fetch_any_voter(avoid=self.leader)  # `hasRequestTimedOut`: ask another
        else:
            self._fetch()

    def _fetch_any_voter(self, avoid: str | None) -> None:
        """`maybeSendAnyVoterFetch`: the voter after the last one asked, other than `avoid`
        (a voter backing off) unless it is the only one."""
        n = len(self.voters)
        start = self.voters.index(self.fetch_dst) + 1 if self.fetch_dst in self.voters else 0
        turn = [self.voters[(start + i) % n] for i in range(n)]
        self._fetch(next((v for v in turn if v != avoid), turn[0]))

    def _on_observer_fetch_response(self, msg) -> None:
        """`handleFetchResponse` on an observer, for the Fetch it has in flight to the sender:
        `maybeHandleCommonResponse` first (an older epoch or UNKNOWN_LEADER_EPOCH ignored; a
        newer epoch, FENCED_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER taken with the leader it
        names; a leader named in its epoch, when it knows none, followed); a clean answer of
        its leader appends, as a voter's; any other error makes the sender back off, and the
        next Fetch goes to another voter at once. Having learned a leader, it fetches from it
        at once; knowing none, it asks a voter at its next poll."""
        resp = msg.body
        if msg.src != self.fetch_dst or self.fetch_sent_us < 0:
            return
        self.fetch_sent_us = -1
        handled = self._common_response(resp.epoch, resp.leader, resp.error)
        if handled is None and resp.error == E.NONE:
            if self.leader is not None:
                self._apply_fetched(resp)
                self._fetch()
        elif handled is None:
            self._fetch_any_voter(avoid=msg.src)
        elif self.leader is not None:
            self._fetch()
