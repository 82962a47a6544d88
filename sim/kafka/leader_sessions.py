"""Leader side of fetch sessions (KIP-227): opening, answering and closing them.

Contract (mixin of `Broker`): a full Fetch closes the session it names, and at INITIAL_EPOCH
its answer opens one (`open_session`; at FINAL_EPOCH it opens none); an incremental Fetch opens
the context `fetch_context` decides (`FetchManager.newContext`): a session error answered at
once with no partitions, a session emptied by its forgotten partitions closed and answered
without one, or the session itself, whose epoch moves on. An incremental Fetch reads only the
session's dirty partitions, parks like a full one when none has records, an error or a
divergence, and is answered with the partitions `must_respond` keeps
(`IncrementalFetchContext.updateAndGenerateResponseData`): so its cost follows the session's
news, not its size. Everything a partition's answer depends on marks it dirty
(`touch_sessions`, called by the broker wherever that changes); a partition read without
news goes clean, and its follower's replica is tracked by the session (`Replica.session`)
until it is touched, forgotten or its session closes. Sessions are volatile (a restart loses
them); ids are not reused.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import fetch_session as session_state
from sim.kafka.fetch_session import CachedPartition, SessionCache
from sim.kafka.messages import FetchResponse
from sim.kafka.model_bug import ModelBug
from sim.kafka.rules import fetch_session as rule
from sim.kafka.rules.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch


class LeaderSessions:
    def init_fetch_sessions(self) -> None:
        self.fetch_sessions = SessionCache(
            self.cluster.max_incremental_fetch_session_cache_slots,
            self.cluster.min_incremental_fetch_session_eviction_ms,
            rule.CACHE_SHARDS if self.protocol.fetch_session_cache_sharded else 1)
        self.parked_sessions: dict = {}  # key of a parked Fetch -> its session
        # touches so far, and each partition's last: a session opened by a full Fetch's answer
        # did not exist while the Fetch read, so it asks which partitions were touched since
        self.touch_seq = 0
        self.touched_at: dict[str, int] = {}

    # -- requests ----------------------------------------------------------------------------
    def on_session_fetch(self, msg) -> None:
        req = msg.body
        if rule.is_full(req.session_epoch):
            if req.session_id != INVALID_SESSION_ID:
                self.close_session(req.session_id)  # a full Fetch closes the session it names
            self.fetch_named(msg)
            return
        s = self.fetch_sessions.get(req.session_id)
        _kind, err = rule.fetch_context(req.session_epoch, s.epoch if s is not None else None)
        if err:
            self.send(msg.src, "FetchResponse", FetchResponse(req.corr, (), (), err))
            return
        self._update_session(s, req)
        if not s.parts:
            self.close_session(s.id)  # nothing left to fetch: answered without a session
            self.fetch_named(msg)
            return
        self.fetch_sessions.touch(s, self.now_us // 1000)
        s.epoch = next_epoch(s.epoch)
        s.last_fetch_us = self.now_us  # this Fetch reads every clean partition, without news
        if self.check_against_full_reads():
            self._check_clean(s)
        todo, datas = self._read_dirty(s, req.replica_id, True, req.replica_epoch)
        self.flush_hw()
        if req.max_wait_us == 0 or any(d.entries or d.error or d.diverging for d in datas):
            self._answer_session(msg, s, todo, datas)
            return
        key = self.park_fetch(msg)
        self.parked_sessions[key] = (s, todo)  # read, not yet answered
        s.parked.append(key)

    def _update_session(self, s, req) -> None:
        """`FetchSession.update`: take the partitions the request names (new ones, or new
        request data), then drop those it forgets."""
        for fp in req.partitions:
            cached = s.parts.get(fp.tp)
            if cached is None:
                self.fetch_sessions.put(s, fp.tp, CachedPartition(fp))
            else:
                cached.fp = fp
                self._untrack(s, fp.tp)
            s.dirty.add(fp.tp)
        for tp in req.forgotten:
            self._untrack(s, tp)
            self.fetch_sessions.forget(s, tp)

    def _read_dirty(self, s, replica_id: int, record: bool,
                    replica_epoch: int = -1) -> tuple[list, list]:
        """Read the session's dirty partitions, in session order; they are clean until the
        answer or a touch says otherwise."""
        todo = s.in_order(s.dirty)
        s.dirty = set()
        parts = s.parts
        return todo, [self._read(parts[tp].fp, replica_id, record, replica_epoch=replica_epoch)
                      for tp in todo]

    def answer_session_fetch(self, msg, s, read: list) -> None:
        """A parked incremental Fetch's answer: what it read when it came (`read`) and what
        was touched since, read again now. The partitions touched since stay dirty: this read
        records no progress, so only the next Fetch's read can find them clean."""
        if s.epoch != next_epoch(msg.body.session_epoch):
            s.dirty.update(read)
            self._answer_session(msg, s, [], [])
            return
        todo = s.in_order(s.dirty.union(read))
        parts = s.parts
        datas = [self._read(parts[tp].fp, msg.body.replica_id, False) for tp in todo]
        self._answer_session(msg, s, todo, datas)

    def _answer_session(self, msg, s, todo: list, datas: list) -> None:
        """Answer with the partitions that must be carried, updating what the session cached.
        A later Fetch of the same session got here first: INVALID_FETCH_SESSION_EPOCH, as
        `updateAndGenerateResponseData` answers a possible duplicate."""
        req = msg.body
        if s.epoch != next_epoch(req.session_epoch):
            s.dirty.update(todo)
            self.send(msg.src, "FetchResponse",
                      FetchResponse(req.corr, (), (), E.INVALID_FETCH_SESSION_EPOCH, s.id))
            return
        out = [d for tp, d in zip(todo, datas) if self._settle(s, tp, d, True)]
        self.send(msg.src, "FetchResponse", FetchResponse(
            req.corr, tuple(out), self.node_endpoints(d.current_leader for d in out), E.NONE,
            s.id))

    def _settle(self, s, tp: str, d, incremental: bool = False) -> bool:
        """Cache what this answer tells of `tp`; whether the answer carries it. Records, an
        error or a divergence keep it dirty (the fetcher may not act on them: it will be told
        again); otherwise it is clean unless touched since it was read. A partition an
        incremental answer carries may move to the end of the session's order
        (`fetch_session_rotation`)."""
        cached = s.parts.get(tp)
        if cached is None:
            return False
        respond, cached.hw, cached.log_start = rule.must_respond(
            cached.hw, cached.log_start, bool(d.entries), d.error, d.diverging is not None,
            d.high_watermark, d.log_start_offset)
        if respond and incremental and rule.moves_to_end(self.protocol.fetch_session_rotation,
                                                         bool(d.entries)):
            self.fetch_sessions.move_to_end(s, cached)
        if d.entries or d.error or d.diverging is not None:
            s.dirty.add(tp)
        elif tp not in s.dirty:
            self._track(s, tp)
        return respond

    def open_session(self, msg, datas, touches_before: int | None) -> int:
        """`FullFetchContext.updateAndGenerateResponseData`: a full Fetch's answer opens a
        session holding every partition it named, at epoch 1, if the cache has room or can
        evict a session for it (`maybeCreateSession`); returns its id (0: none). A partition
        touched since the Fetch read it (its own progress may have moved the HW, say), or
        every partition of an answer read again after a wait (`touches_before` None, no
        progress recorded), starts dirty: the next Fetch's read settles it."""
        req = msg.body
        cache, now_ms = self.fetch_sessions, self.now_us // 1000
        shard = cache.take_shard()
        victim = cache.victim(shard, req.replica_id >= 0, len(req.partitions), now_ms)
        if victim == -1:
            return INVALID_SESSION_ID
        if victim is not None:
            self.close_session(victim)
            cache.evictions += 1
        self.fetch_session_ids += 1
        s = cache.open(self.fetch_session_ids, req.replica_id, next_epoch(INITIAL_EPOCH), 0,
                       shard)
        s.creation_ms = now_ms
        touched_at = self.touched_at
        for fp, d in zip(req.partitions, datas):
            self.fetch_sessions.put(s, fp.tp, CachedPartition(fp))
            if touches_before is None or touched_at.get(fp.tp, 0) > touches_before:
                s.dirty.add(fp.tp)
            self._settle(s, fp.tp, d)
        cache.touch(s, now_ms)
        return s.id

    def close_session(self, session_id: int) -> None:
        s = self.fetch_sessions.close(session_id)
        if s is not None:
            for tp in s.parts:
                self._untrack(s, tp)

    # -- what makes a partition dirty ----------------------------------------------------------
    def touch_sessions(self, tp: str) -> None:
        """Something `tp`'s answer depends on changed (its log, HW, log start, leadership,
        epochs, ISR, or the metadata cache): every session holding it reads it again."""
        self.touch_seq += 1
        self.touched_at[tp] = self.touch_seq
        sessions = self.fetch_sessions.by_tp.get(tp)
        if not sessions:
            return
        for s in sessions.values():
            s.dirty.add(tp)
        p = self.partitions.get(tp)
        if p is not None:
            for f in p.followers.values():
                if f.session is not None:
                    f.leave_session()

    def touch_all_sessions(self) -> None:
        """The live-broker list changed (KIP-841's ISR eligibility reads it)."""
        for tp in sorted(self.fetch_sessions.by_tp):
            self.touch_sessions(tp)

    # -- followers' replicas tracked by a session -------------------------------------------------
    def _session_replica(self, s, tp: str):
        if s.replica_id < 0:
            return None
        p = self.partitions.get(tp)
        return p.followers.get(s.replica_id) if p is not None else None

    def _track(self, s, tp: str) -> None:
        f = self._session_replica(s, tp)
        if f is None or s.closed:
            return
        if f.session is not s:
            f.leave_session()
            f.session = s

    def _untrack(self, s, tp: str) -> None:
        f = self._session_replica(s, tp)
        if f is not None and f.session is s:
            f.leave_session()

    # -- the proof that skipping clean partitions skips nothing -----------------------------------
    @staticmethod
    def check_against_full_reads() -> bool:
        return session_state.CHECK_AGAINST_FULL_READS

    def _check_clean(self, s) -> None:
        """Read every clean partition as Kafka's leader does and raise `ModelBug` if the read
        would have had anything to carry or to change."""
        for tp in sorted(s.parts):
            if tp in s.dirty:
                continue
            problem = self._clean_problem(s, tp, s.parts[tp])
            if problem:
                raise ModelBug(f"{self.name}: fetch session {s.id} skipped {tp}, but {problem}")

    def _clean_problem(self, s, tp: str, cached) -> str:
        d = self._read(cached.fp, s.replica_id, record=False)
        respond = rule.must_respond(cached.hw, cached.log_start, bool(d.entries), d.error,
                                    d.diverging is not None, d.high_watermark,
                                    d.log_start_offset)[0]
        if respond:
            return f"its read has news: {d}"
        f = self._session_replica(s, tp)
        if f is None:
            return ""
        p = self.partitions[tp]
        rid = s.replica_id
        if f.session is not s or f.leo != cached.fp.fetch_offset:
            return "its replica is not tracked by the session"
        if self.rules.follower_joins_isr(self.protocol, rid in p.isr, p.pending_isr is not None,
                                         cached.fp.fetch_offset, p.log.hw,
                                         p.leader_epoch_start_offset, self.isr_eligible(rid, f)):
            return "its follower would join the ISR"
        # its log end did not move, so Kafka's read would not recompute the HW either
        return ""
