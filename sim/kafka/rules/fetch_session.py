"""Incremental fetch sessions (KIP-227, Kafka 1.1+): which context a Fetch opens on the
leader, which partitions its answer must carry, and what the fetching client sends next.

Contract: pure functions of plain values. A Fetch carries `(session_id, session_epoch)`,
Kafka's `FetchMetadata`: epoch INITIAL_EPOCH (0) asks for a full fetch that opens a session,
FINAL_EPOCH (-1) for a full fetch without one (what a client without sessions sends), any
other epoch an incremental fetch in that session. Read at 1.1.0 and 3.7.0:
`kafka.server.FetchSession.scala` (`FetchManager.newContext`,
`CachedPartition.maybeUpdateResponseData`) and
`org.apache.kafka.clients.FetchSessionHandler` (`handleResponse`, `handleError`).
"""

from __future__ import annotations

from sim.kafka import errors as E

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT_MAX = 2**31 - 1
# 3.8+ (KAFKA-9401, `fetch_session_cache_sharded`): the cache's shards
# (`KafkaBroker.NumFetchSessionCacheShards`), each with an equal part of the slots
CACHE_SHARDS = 8

# the contexts `FetchManager.newContext` opens
SESSIONLESS = "sessionless"  # a full fetch that opens no session (FINAL_EPOCH, or emptied)
FULL = "full"  # a full fetch: its answer opens a session
INCREMENTAL = "incremental"
SESSION_ERROR = "error"  # FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH


def next_epoch(epoch: int) -> int:
    """`FetchMetadata.nextEpoch`: FINAL stays FINAL, the epoch after Integer.MAX_VALUE is 1."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == INT_MAX:
        return 1
    return epoch + 1


def is_full(session_epoch: int) -> bool:
    """`FetchMetadata.isFull`: a request that names every partition it wants."""
    return session_epoch in (INITIAL_EPOCH, FINAL_EPOCH)


def fetch_context(session_epoch: int, cached_epoch: int | None) -> tuple[str, int]:
    """`FetchManager.newContext`: the context a Fetch opens and its error. `cached_epoch` is
    the epoch the leader holds for the request's session (None: no such session). A full
    request opens a session (FINAL_EPOCH: none), and closes the one it names (the caller does
    that); an incremental one needs the session at its current epoch, else
    FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH. (A session the incremental
    request leaves empty is then closed and the request answered without one, the caller's
    part too.)"""
    if is_full(session_epoch):
        return (SESSIONLESS if session_epoch == FINAL_EPOCH else FULL), E.NONE
    if cached_epoch is None:
        return SESSION_ERROR, E.FETCH_SESSION_ID_NOT_FOUND
    if cached_epoch != session_epoch:
        return SESSION_ERROR, E.INVALID_FETCH_SESSION_EPOCH
    return INCREMENTAL, E.NONE


def must_respond(cached_hw: int, cached_log_start: int, has_records: bool, error: int,
                 diverging: bool, high_watermark: int,
                 log_start_offset: int) -> tuple[bool, int, int]:
    """`CachedPartition.maybeUpdateResponseData` (1.1.0 `updateResponseData`): whether an
    incremental answer must carry a partition, and the HW and log start the session caches for
    it after this answer. Records, an error or a DivergingEpoch (3.7) are always carried, and
    so is a HW or log start the fetcher was not told yet; an error caches HW -1, so the
    partition is carried again once the error is gone."""
    respond = has_records or error != E.NONE or diverging
    if cached_hw != high_watermark:
        respond, cached_hw = True, high_watermark
    if cached_log_start != log_start_offset:
        respond, cached_log_start = True, log_start_offset
    if error != E.NONE:
        cached_hw = -1
    return respond, cached_hw, cached_log_start


def moves_to_end(rotation: str, has_records: bool) -> bool:
    """`FetchSession.PartitionIterator`: whether a partition an incremental answer carries
    moves to the end of its session's order, so that the partitions behind it are read and
    answered first next time. `responded` (1.1-2.8): every one carried; `records` (3.0+,
    KAFKA-12330, `FetchResponse.recordsSize(respData) > 0`): only one carrying records, since
    moving those without (an error, a new HW) could starve the rest when answers are full."""
    return has_records or rotation == "responded"


def session_after_response(session_id: int, session_epoch: int, error: int,
                           response_session_id: int) -> tuple[int, int]:
    """`FetchSessionHandler.handleResponse`: the (session id, epoch) of the client's next
    Fetch. FETCH_SESSION_ID_NOT_FOUND starts over with a new session; another top-level error
    closes this one and opens a new one (`nextCloseExistingAttemptNew`); an answer with no
    session id means none was opened or the leader closed it; otherwise the session goes on
    at the next epoch (opened by a full answer at epoch 1)."""
    if error == E.FETCH_SESSION_ID_NOT_FOUND:
        return INVALID_SESSION_ID, INITIAL_EPOCH
    if error != E.NONE:
        return session_id, INITIAL_EPOCH
    if response_session_id == INVALID_SESSION_ID:
        return INVALID_SESSION_ID, INITIAL_EPOCH
    if is_full(session_epoch):
        return response_session_id, next_epoch(INITIAL_EPOCH)
    return session_id, next_epoch(session_epoch)


def response_problem(full: bool, session_tps, answered_tps) -> str | None:
    """`verifyFullFetchResponsePartitions` / `verifyIncrementalFetchResponsePartitions` (the
    same from 1.1.0 to 3.7.0): what is wrong with an error-free answer's partitions, or None.
    A full answer must carry exactly the session's partitions ("omitted" one, or carried an
    "extra" one); an incremental one may leave any out but carry none outside the session.
    `session_tps` is read for membership and size only (the handler passes its partitions'
    dict as it is, so no copy is made on every answer)."""
    if any(tp not in session_tps for tp in answered_tps):
        return "extra"
    if full and len(session_tps) != len(set(answered_tps)):
        return "omitted"
    return None


def session_after_invalid(session_id: int, session_epoch: int) -> tuple[int, int]:
    """`handleResponse` on an answer `response_problem` refuses (the caller then drops the
    whole answer, as `handleResponse` returning false makes Kafka's fetchers do): after a full
    Fetch the client starts over without a session (`FetchMetadata.INITIAL`), after an
    incremental one it closes this session and asks for a new one
    (`nextCloseExisting`, 1.1-2.x; `nextCloseExistingAttemptNew`, 3.x: both INITIAL_EPOCH)."""
    if is_full(session_epoch):
        return INVALID_SESSION_ID, INITIAL_EPOCH
    return session_id, INITIAL_EPOCH


def session_after_error(session_id: int) -> tuple[int, int]:
    """`FetchSessionHandler.handleError`: a Fetch lost to a closed connection or a timeout;
    the next Fetch is full, closing this session and asking for a new one."""
    return session_id, INITIAL_EPOCH


# -- the leader's cache (`FetchSessionCache`, the same from 1.1.0 to 3.7.0; per shard from 3.8)


def evictable(privileged: bool, now_ms: int, creation_ms: int,
              eviction_ms: int) -> tuple[bool, bool]:
    """`FetchSessionCache.touch`: whether a session touched at `now_ms` may be evicted (by a
    privileged new session, by any). A consumer's (unprivileged) session may be evicted by a
    follower's at once; any session by any other once it is older than `eviction_ms` at a
    touch (`min.incremental.fetch.session.eviction.ms`)."""
    aged = now_ms - creation_ms > eviction_ms
    return (not privileged) or aged, aged


def is_stale(now_ms: int, last_used_ms: int, eviction_ms: int) -> bool:
    """`tryEvict`: a session unused for more than `eviction_ms` is evicted first."""
    return now_ms - last_used_ms > eviction_ms


def evictable_key(privileged: bool, size: int, session_id: int) -> tuple[bool, int, int]:
    """`EvictableKey`: sessions are valued by privilege, then size, then id."""
    return privileged, size, session_id


def may_evict(new_key: tuple, least_key: tuple) -> bool:
    """`tryEvict`: the new session (its id counted as 0) evicts the least valuable evictable
    one unless it is worth less: a follower's outranks a consumer's, a bigger one a smaller
    one, and one of the same privilege and size never evicts."""
    return not new_key < least_key
