"""A broker's fetch-session cache (`FetchSessionCache`, 1.1.0-3.7.0; sharded from 3.8.0):
its slot limit, the eviction order of `tryEvict`, and `touch` on every incremental Fetch."""

from sim.kafka.fetch_session import SessionCache
from sim.kafka.profiles import PROFILES
from sim.kafka.rules import fetch_session as rule
from tests.conftest import ROOT
from tests.probe.helpers import probe_checks


def _cache(slots: int, eviction_ms: int, shards: int = 1) -> SessionCache:
    return SessionCache(slots, eviction_ms, shards)


def _open(cache: SessionCache, sid: int, replica_id: int, size: int, now_ms: int,
          shard: int = 0):
    s = cache.open(sid, replica_id, 1, 0, shard)
    s.creation_ms = now_ms
    for i in range(size):
        s.parts[f"t-{i}"] = None
    cache.touch(s, now_ms)
    return s


def test_a_cache_with_room_evicts_nothing():
    cache = _cache(2, 100)
    _open(cache, 1, -1, 3, 0)
    assert cache.victim(0, False, 1, 0) is None


def test_the_stale_least_recently_used_session_goes_first():
    """`tryEvict` looks at `lastUsed.firstEntry` first: unused for longer than evictionMs."""
    cache = _cache(2, 100)
    _open(cache, 1, -1, 50, 0)
    _open(cache, 2, -1, 1, 50)
    assert cache.victim(0, False, 1, 101) == 1
    assert cache.victim(0, False, 1, 100) == -1  # exactly evictionMs is not stale


def test_a_follower_s_session_evicts_a_young_consumer_s_one_of_any_size():
    cache = _cache(1, 1000)
    _open(cache, 1, -1, 10, 0)
    assert cache.victim(0, False, 20, 5) == -1  # a consumer's: only aged sessions
    assert cache.victim(0, True, 1, 5) == 1  # a follower's outranks any consumer's


def test_an_aged_session_is_evicted_by_a_bigger_one_only():
    """`EvictableKey(privileged, size, id)`: the new session counts as id 0, so one of the
    same privilege and size never evicts."""
    cache = _cache(1, 100)
    s = _open(cache, 1, 2, 10, 0)
    cache.touch(s, 150)  # aged at this touch: evictable by any session
    assert cache.victim(0, True, 10, 160) == -1
    assert cache.victim(0, False, 11, 160) == -1  # privilege first
    assert cache.victim(0, True, 11, 160) == 1
    assert not rule.may_evict(rule.evictable_key(True, 10, 0), rule.evictable_key(True, 10, 1))


def test_evictability_is_taken_at_the_last_touch():
    """Kafka files a session in `evictableByAll` only when touched past evictionMs."""
    cache = _cache(1, 100)
    _open(cache, 1, -1, 1, 0)
    assert cache.victim(0, False, 50, 99) == -1  # not stale, not aged at its touch


def test_total_partitions_follow_touches_and_removal():
    cache = _cache(3, 100)
    s = _open(cache, 1, -1, 2, 0)
    _open(cache, 2, -1, 4, 0)
    assert cache.total_partitions == 6
    del s.parts["t-0"]
    assert cache.total_partitions == 6  # `cachedSize` until the next touch
    cache.touch(s, 1)
    assert cache.total_partitions == 5
    cache.close(2)
    assert cache.total_partitions == 1


def test_a_sharded_cache_fills_and_evicts_per_shard():
    """3.8 (KAFKA-9401): 8 shards of slots / 8, sessions handed to them in turn."""
    cache = _cache(16, 100, shards=8)
    assert cache.max_entries == 2
    assert [cache.take_shard() for _ in range(9)] == [0, 1, 2, 3, 4, 5, 6, 7, 0]
    _open(cache, 1, -1, 1, 0, shard=0)
    _open(cache, 2, -1, 1, 0, shard=0)
    assert cache.victim(0, False, 1, 200) == 1  # shard 0 is full: its stale LRU goes
    assert cache.victim(1, False, 1, 200) is None
    assert _cache(2, 100, shards=8).victim(0, True, 1, 0) == -1  # 0 slots per shard
    assert not PROFILES["3.7"].fetch_session_cache_sharded
    assert PROFILES["3.8"].fetch_session_cache_sharded


def test_an_incremental_fetch_touches_its_session():
    """`FetchManager.newContext` touches the session of an incremental Fetch: without it,
    session 1 would be the stale one evicted in FetchSessionTest.testFetchSessionExpiration."""
    text = open(f"{ROOT}/scenarios/conformance/fetch-session-expiration-3.7.toml").read()
    checks = probe_checks(text, by_step=True)
    assert checks["3:session_ids"] == ([1, 3], [1, 3])


def test_a_full_cache_answers_without_a_session():
    """`maybeCreateSession` finds no room: the answer carries session id 0."""
    text = open(f"{ROOT}/scenarios/conformance/fetch-session-cache-3.7.toml").read()
    checks = probe_checks(text, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks
    assert checks["3:session_id"] == (0, 0)
