"""A broker's fetch sessions (KIP-227) and a client's half of one: the state, not the decisions.

Contract: `SessionCache` is a leader's `FetchSessionCache`: sessions by id, each holding its
partitions' cached request (`FetchPartition`) and the HW and log start it last sent
(`CachedPartition`), plus an index from partition to the sessions that hold it. Answering a
Fetch in a session costs what the session's news costs, not what its size does: each session
keeps a set of *dirty* partitions, those that may have something to say, and the broker marks a
partition dirty in every session holding it whenever anything its answer depends on changes
(`LeaderSessions.touch_sessions`). A partition that is not dirty would be answered with nothing
to carry, so reading it is skipped; the one thing such a read does change, a follower's fetch
time (`Replica.fetched` with the follower caught up), is kept per session (`last_fetch_us`) and
taken by the replicas that session tracks (`Replica.session`).

`FetchSessionHandler` is the client's side (`org.apache.kafka.clients.FetchSessionHandler`):
the session id and epoch of its next Fetch to one broker and the partitions that broker holds
for it (`sessionPartitions`); a build sends only what changed. The decisions (which context a
request opens, what an answer must carry, what the client sends next) are
`sim.kafka.rules.fetch_session`. Session ids are not reused within a run (Kafka draws them at
random). The cache holds at most `max_entries` sessions (`max.incremental.fetch.session.cache.slots`,
1000): a session it has no room for is not opened unless one can be evicted
(`victim`, `FetchSessionCache.tryEvict`). From 3.8 (`fetch_session_cache_sharded`, KAFKA-9401)
the slots are split among 8 shards (`KafkaBroker.NumFetchSessionCacheShards`), a new session
goes to the next shard in turn, and a shard evicts only its own sessions.

`CHECK_AGAINST_FULL_READS` (off; tests turn it on) makes every incremental Fetch also read each
partition it skips and raise `ModelBug` if that read had anything to say, and makes every
follower build compare its session with a full build: the proof that the dirty marking misses
nothing, at the cost the sessions save.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.rules import fetch_session as rule
from sim.kafka.rules.fetch_session import INITIAL_EPOCH, INVALID_SESSION_ID, is_full

CHECK_AGAINST_FULL_READS = False


class CachedPartition:
    """One partition of a leader's session (`CachedPartition`): the request last named for it,
    the HW and log start last sent (-1: not yet), and its place in the session (partitions
    are read and answered in the order of their places, as Kafka's `partitionMap` keeps them:
    the order they joined it, a partition an incremental answer carried moved to the end as
    `fetch_session_rotation` says)."""

    __slots__ = ("fp", "hw", "log_start", "order")

    def __init__(self, fp, hw: int = -1, log_start: int = -1):
        self.fp, self.hw, self.log_start = fp, hw, log_start
        self.order = 0


class LeaderSession:
    """A leader's `FetchSession`: `epoch` is the one the next request must carry."""

    __slots__ = ("id", "replica_id", "epoch", "parts", "dirty", "last_fetch_us", "parked",
                 "closed", "joined", "privileged", "creation_ms", "last_used_ms", "cached_size",
                 "by_privileged", "by_all", "shard")

    def __init__(self, session_id: int, replica_id: int, epoch: int, last_fetch_us: int):
        self.id = session_id
        self.replica_id = replica_id
        self.epoch = epoch
        # the cache's view (`FetchSession`): a follower's session is privileged; its size and
        # whether it may be evicted are as of its last `touch` (Kafka's `cachedSize` and its
        # place in `evictableByPrivileged` / `evictableByAll`)
        self.privileged = replica_id >= 0
        self.creation_ms = self.last_used_ms = 0
        self.cached_size = -1
        self.by_privileged = self.by_all = False
        self.shard = 0
        self.parts: dict[str, CachedPartition] = {}
        self.dirty: set[str] = set()
        # when a Fetch in this session last read (explicitly or not) every partition it holds
        self.last_fetch_us = last_fetch_us
        self.parked: list = []  # keys of its Fetches parked on the leader
        self.closed = False
        self.joined = 0  # partitions that joined it so far

    def in_order(self, tps) -> list:
        """`tps` (of this session) in the order they joined it."""
        parts = self.parts
        return sorted(tps, key=lambda tp: parts[tp].order)


class SessionCache:
    """A broker's `FetchSessionCache`. Volatile: a restart loses every session. `by_tp` maps a
    partition to the sessions holding it, by id. `max_entries` and `eviction_ms` are its
    constructor's (`maxEntries`, `evictionMs`), per shard; `evictions` and `total_partitions`
    its `evictionsMeter` count and `totalPartitions` (the sessions' sizes as of their last
    touch)."""

    __slots__ = ("sessions", "by_tp", "max_entries", "eviction_ms", "shards", "next_shard",
                 "evictions", "total_partitions")

    def __init__(self, slots: int = 1000, eviction_ms: int = 120_000, shards: int = 1):
        self.sessions: dict[int, LeaderSession] = {}
        self.by_tp: dict[str, dict[int, LeaderSession]] = {}
        self.shards = shards
        self.max_entries = slots // shards  # `maxIncrementalFetchSessionCacheSlots / shards`
        self.eviction_ms = eviction_ms
        self.next_shard = 0  # `FetchSessionCache.counter`
        self.evictions = self.total_partitions = 0

    def get(self, session_id: int) -> LeaderSession | None:
        return self.sessions.get(session_id)

    def take_shard(self) -> int:
        """`getNextCacheShard`: the shard a full Fetch's answer opens its session in, in
        turn (the count moves whether a session opens or not)."""
        shard = self.next_shard % self.shards
        self.next_shard += 1
        return shard

    def victim(self, shard: int, privileged: bool, size: int, now_ms: int) -> int | None:
        """`maybeCreateSession`'s room check and `tryEvict`: None when `shard` has room for
        a new session of `size` partitions (`privileged`: a follower's); else the id of the
        session to evict for it (the least recently used if stale, else the least valuable
        one the new session outranks), or -1 when there is none: no session opens."""
        held = [s for s in self.sessions.values() if s.shard == shard]
        if len(held) < self.max_entries:
            return None
        if not held:
            return -1
        lru = min(held, key=lambda s: (s.last_used_ms, s.id))
        if rule.is_stale(now_ms, lru.last_used_ms, self.eviction_ms):
            return lru.id
        pool = [s for s in held if (s.by_privileged if privileged else s.by_all)]
        if not pool:
            return -1
        least = min(pool, key=lambda s: rule.evictable_key(s.privileged, s.cached_size, s.id))
        key = rule.evictable_key(privileged, size, INVALID_SESSION_ID)
        if not rule.may_evict(key, rule.evictable_key(least.privileged, least.cached_size,
                                                      least.id)):
            return -1
        return least.id

    def open(self, session_id: int, replica_id: int, epoch: int, now_us: int,
             shard: int = 0) -> LeaderSession:
        s = LeaderSession(session_id, replica_id, epoch, now_us)
        s.shard = shard
        self.sessions[session_id] = s
        return s

    def touch(self, s: LeaderSession, now_ms: int) -> None:
        """`FetchSessionCache.touch`: the session was used at `now_ms`; take its size now and
        whether it may be evicted, by a privileged session or by any."""
        s.last_used_ms = now_ms
        if s.cached_size != -1:
            self.total_partitions -= s.cached_size
        s.cached_size = len(s.parts)
        self.total_partitions += s.cached_size
        s.by_privileged, s.by_all = rule.evictable(s.privileged, now_ms, s.creation_ms,
                                                   self.eviction_ms)

    def put(self, s: LeaderSession, tp: str, cached: CachedPartition) -> None:
        """Add a partition to the session, after those already in it."""
        cached.order = s.joined
        s.joined += 1
        s.parts[tp] = cached
        self.by_tp.setdefault(tp, {})[s.id] = s

    def move_to_end(self, s: LeaderSession, cached: CachedPartition) -> None:
        """Put a partition of the session after all the others (`partitionMap.remove` then
        `mustAdd`)."""
        cached.order = s.joined
        s.joined += 1

    def forget(self, s: LeaderSession, tp: str) -> None:
        if s.parts.pop(tp, None) is not None:
            s.dirty.discard(tp)
            held = self.by_tp.get(tp)
            if held is not None:
                held.pop(s.id, None)
                if not held:
                    del self.by_tp[tp]

    def close(self, session_id: int) -> LeaderSession | None:
        """Remove a session (`FetchSessionCache.remove`); returns it, or None."""
        s = self.sessions.pop(session_id, None)
        if s is None:
            return None
        if s.cached_size != -1:
            self.total_partitions -= s.cached_size
        for tp in s.parts:
            held = self.by_tp.get(tp)
            if held is not None:
                held.pop(s.id, None)
                if not held:
                    del self.by_tp[tp]
        s.closed = True
        return s


class FetchSessionHandler:
    """A client's session with one broker: the (id, epoch) of its next Fetch (Kafka's
    `nextMetadata`: while a Fetch is in flight, the one it carries), the partitions the broker
    holds for it as of the last build (`parts`, tp -> FetchPartition, in Kafka's
    `sessionPartitions` order: the order they joined, each keeping its place when altered, its
    join number in `order`), and the partitions whose wanted state may have changed since
    (`dirty`, kept by the follower)."""

    __slots__ = ("session_id", "epoch", "parts", "order", "joined", "dirty")

    def __init__(self):
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.parts: dict = {}
        self.order: dict[str, int] = {}
        self.joined = 0
        self.dirty: set[str] = set()

    @property
    def full(self) -> bool:
        return is_full(self.epoch)

    def build_full(self, wanted: list) -> tuple[tuple, tuple]:
        """A full Fetch names everything wanted, in the order given: (to send, to forget)."""
        self.parts = {fp.tp: fp for fp in wanted}
        self.order = {tp: i for i, tp in enumerate(self.parts)}
        self.joined = len(self.parts)
        self.dirty.clear()
        return tuple(self.parts.values()), ()

    def build_incremental(self, changes: dict) -> tuple[tuple, tuple]:
        """`FetchSessionHandler.Builder.build` for an incremental Fetch: `changes` maps each
        partition that may have changed to its wanted FetchPartition (None: not wanted now),
        in the order the builder was given them. Returns what the Fetch sends, the partitions
        that join the session (in that order) then those altered (in the session's order), as
        Kafka's `next` ends up; and those to forget, in the session's order."""
        added, altered, forget = [], [], []
        parts, order = self.parts, self.order
        for tp, fp in changes.items():
            old = parts.get(tp)
            if fp is None:
                if old is not None:
                    forget.append(tp)
            elif old is None:
                added.append(fp)
            elif fp != old:
                altered.append(fp)
        if len(forget) > 1:
            forget.sort(key=order.__getitem__)
        if len(altered) > 1:
            altered.sort(key=lambda fp: order[fp.tp])
        for tp in forget:
            del parts[tp], order[tp]
        for fp in altered:
            parts[fp.tp] = fp
        for fp in added:
            parts[fp.tp], order[fp.tp] = fp, self.joined
            self.joined += 1
        return tuple(added) + tuple(altered), tuple(forget)

    def handle_response(self, error: int, response_session_id: int, answered) -> bool:
        """`FetchSessionHandler.handleResponse`: take an answer's top-level error, session id
        and partitions (tps) into the next (id, epoch). False when the answer is not to be
        used: a top-level error, or partitions `response_problem` refuses."""
        if error == E.NONE and rule.response_problem(self.full, self.parts, answered):
            self.session_id, self.epoch = rule.session_after_invalid(self.session_id, self.epoch)
            return False
        self.session_id, self.epoch = rule.session_after_response(
            self.session_id, self.epoch, error, response_session_id)
        return error == E.NONE

    def handle_error(self) -> None:
        """`FetchSessionHandler.handleError`: a Fetch lost; the next is full."""
        self.session_id, self.epoch = rule.session_after_error(self.session_id)
