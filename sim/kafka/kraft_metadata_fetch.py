"""A KRaft broker's fetch of the metadata log, as an observer of the controller quorum.

Contract (mixin of `KraftBroker`, which provides `voters`, `meta_*` state, `applied`,
`applied_epoch`, `applying`, `rules`, `_controller_guess`, `_learn_controller` and the
`meta_apply` timer): one Fetch in flight at a time, to the quorum leader it knows (else to a
voter in turn), carrying the quorum epoch it knows and the end of its own copy of the log
(`KafkaRaftClient`'s observer path). An answer's epoch and leader are taken unless older than
what it knows (`maybeHandleCommonResponse`); an error answer that names a leader to follow
sends the next Fetch there at once, any other after a backoff; a divergence truncates the
uncommitted tail; committed records go to the apply timer in log order.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.kraft_messages import QuorumFetch

RETRY_BACKOFF_US = V.META_RETRY_BACKOFF_US


class MetadataLogFetcher:
    def _meta_fetch_timed_out(self) -> None:
        """`KafkaRaftClient.pollFollowerAsObserver`: a Fetch that timed out sends the next one
        to another voter (`RequestManager.findReadyVoter` skips the one backing off after the
        failure). The leader is forgotten only if the Fetch went to it: one learned since (a
        heartbeat's answer names it) is still the best guess."""
        failed = self.meta_dst
        if self.meta_leader == failed:
            self.meta_leader = None
        self._meta_fetch(avoid=failed)

    def _meta_fetch(self, avoid: str | None = None) -> None:
        self.meta_token += 1
        self.awaiting = True
        if self.meta_leader is not None or avoid not in self.voters:
            dst = self._controller_guess()
        else:  # the voter after the one that failed: each is tried in turn
            dst = self.voters[(self.voters.index(avoid) + 1) % len(self.voters)]
        self.meta_dst = dst
        self.meta_corr += 1
        end, end_epoch = self._log_end()
        known_hw = self.meta_hw if self.protocol.kraft_fetch_completes_on_hw else None
        self.send(dst, "QuorumFetch", QuorumFetch(self.meta_epoch, self.name, end, end_epoch,
                                                  False, self.meta_corr, known_hw))
        wait_us = self.cluster.metadata_fetch_wait_ms * 1000 + V.FETCH_TIMEOUT_US
        self.set_timer(wait_us, "meta_fetch_timeout", self.meta_token)

    def on_quorum_fetch_response(self, msg) -> None:
        resp = msg.body
        if self.applying or not self.awaiting or resp.corr != self.meta_corr:
            return  # an answer to a Fetch this broker gave up on, or already had answered
        self.awaiting = False
        self.meta_token += 1
        learned = self._follow_answer(resp.epoch, resp.leader, msg.src)
        if resp.error and resp.leader == msg.src and self.now_us - self.meta_ok_us > \
                self.cluster.quorum_fetch_timeout_ms * 1000:
            # its leader refuses it as not the leader and names itself (it resigned): after the
            # fetch timeout the next Fetch goes to another voter (`pollFollowerAsObserver`:
            # `hasFetchTimeoutExpired` -> `maybeSendAnyVoterFetch`)
            self._meta_fetch_timed_out()
            return
        if not resp.error:
            self.meta_ok_us = self.now_us
        if resp.error or (resp.diverging is not None and not self._truncate_tail(resp.diverging)):
            # an answer that names a newer epoch's or another leader sends the next Fetch
            # there at once (`maybeHandleCommonResponse` handled it); else after a backoff
            self.set_timer(0 if learned and resp.error else RETRY_BACKOFF_US, "meta_fetch")
            return
        self._learn_controller(resp.leader)
        self.meta_hw = max(self.meta_hw, resp.high_watermark)
        # records below its log end came in an answer to an earlier Fetch, sent again
        for entry in resp.entries:
            if entry[0] == self._log_end()[0]:
                self.meta_tail.append(entry)
        done = self.rules.publishable_metadata(tuple(self.meta_tail), resp.high_watermark)
        committed, self.meta_tail = self.meta_tail[:done], self.meta_tail[done:]
        if not committed:
            self._meta_fetch()
            return
        self.applying = True
        cost = len(committed) * self.cluster.metadata_apply_us + self.metadata_delay_us
        self.set_timer(cost, "meta_apply", committed)

    def _follow_answer(self, epoch: int, leader: str | None, src: str) -> bool:
        """Take the quorum epoch and leader a metadata Fetch answer names
        (`maybeHandleCommonResponse`): an answer of an older epoch than this broker knows
        names no leader worth following. True when it named a leader other than `src`, the
        voter asked, in a newer epoch or this one. A newer epoch makes the observer a follower
        anew (`transitionToFollower`: a new `FollowerState`, whose fetch timer starts then),
        so a leader that answers FENCED_LEADER_EPOCH to an older epoch and names itself is
        fetched from, not taken for one that resigned."""
        if epoch < self.meta_epoch:
            return False
        if epoch > self.meta_epoch:
            self.meta_ok_us = self.now_us
        self.meta_epoch, self.meta_leader = epoch, leader
        return leader is not None and leader != src

    def _truncate_tail(self, diverging: tuple) -> bool:
        """Cut the local metadata log back to where it agrees with the leader's
        (`KafkaRaftClient.handleFetchResponse`'s `truncateToEndOffset`: the end of its last
        epoch at or below the diverging one, at most the diverging end offset). False, and
        nothing cut, if that is below what the broker applied: Kafka's raft client refuses
        to truncate below its high watermark (a `KafkaException`), so the broker is stuck."""
        epoch, end = diverging
        own = [e[0] + 1 for e in self.meta_tail if e[1] <= epoch]
        to = min(end, own[-1] if own else self.applied)
        if to < self.applied or (not own and self.applied_epoch > epoch):
            return False
        log_end = self._log_end()[0]
        if to < log_end:
            self.emit(V.METADATA_TRUNCATE, {"to_offset": to, "end_offset": log_end})
            del self.meta_tail[to - self.applied:]
        return True

    def _log_end(self) -> tuple[int, int]:
        """The end offset of this broker's metadata log and the epoch of its last record:
        after the fetched records it holds unapplied, else after what it applied. (Read only
        between applies: while one runs, the records it applies are in neither.)"""
        if self.meta_tail:
            offset, epoch, _record = self.meta_tail[-1]
            return offset + 1, epoch
        return self.applied, self.applied_epoch

