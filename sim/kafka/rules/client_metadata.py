"""A client's metadata cache rules: which partition metadata it takes (ref §3.1), which leader
epochs it learns out of band, when its cached metadata is current, and which KIP-951 leader
hints it applies (ref §3.3.2).

Contract: pure functions of the protocol switches and plain values. A client keeps two maps, as
Kafka's `Metadata` does: the cache built from the last Metadata answer (`MetadataCache`), and
`lastSeenLeaderEpochs`, which outlives the cache: `last_seen` is a partition's entry there or
None, `known_topic_id` the topic id the cache holds for its topic or None when the cache does
not list the topic.
"""

from __future__ import annotations

from typing import NamedTuple


class MetadataUpdate(NamedTuple):
    """`take`: cache the answer's entry and make its epoch the last seen one; `reject`: keep
    the cached entry, if any, and record the rejection (neither: keep it silently). `news`: the
    answer brought something new (a first epoch, a newer epoch, a recreated topic), which
    resets `Metadata.equivalentResponseCount`. `forget`: the entry has no leader epoch, so the
    last seen one is forgotten rather than replaced."""
    take: bool
    reject: bool = False
    news: bool = False
    forget: bool = False


REJECT = MetadataUpdate(False, True)
NO_EPOCH = MetadataUpdate(True, news=True, forget=True)


def update_partition_metadata(proto, last_seen: int | None, known_topic_id: int | None,
                              topic_id: int, leader_epoch: int) -> MetadataUpdate:
    """`Metadata.updateLatestMetadata` (3.7; `updatePartitionInfo` before 3.0): take a
    partition's metadata when no epoch was seen for it, when its epoch is at least the last
    seen one, or when its topic id tells a recreated topic (`topic_recreated`); an older epoch
    is rejected and the cached entry, if any, kept (KAFKA-7738, 2.2,
    `client_rejects_stale_metadata`). The last seen epoch is compared, not the cached entry's:
    it survives a partition's removal from the cache and an epoch learnt out of band."""
    return take_newer_metadata(proto, last_seen, known_topic_id, topic_id, leader_epoch,
                               proto.client_rejects_stale_metadata)


def known_topic_id(proto, cached_id: int | None, last_seen_id: int | None) -> int | None:
    """The topic id a Metadata answer's id is compared with to tell a recreated topic: the
    cache's (`oldTopicId = cache.topicId(topic)`, null once an answer left the topic out), or
    with `client_keeps_unlisted_topic_id` the one its partitions' last seen epochs were seen
    under, so a topic only left out by a lagging broker is not taken for a new one."""
    if cached_id is None and proto.client_keeps_unlisted_topic_id:
        return last_seen_id
    return cached_id


def take_newer_metadata(proto, last_seen: int | None, known_topic_id: int | None,
                        topic_id: int, leader_epoch: int, reject_older: bool) -> MetadataUpdate:
    """`update_partition_metadata` with the KAFKA-7738 rejection given as `reject_older`. An
    entry without a leader epoch (-1: an answer too old to carry one, Metadata before v7 or,
    from 2.6, before v9, or a partition error) is taken as it is and the last seen epoch of the
    partition forgotten ("Handle old cluster formats as well as error responses where leader
    and epoch are missing": `lastSeenLeaderEpochs.remove(tp)` at 2.3.0-3.7.0; 2.2.0 cleared
    every partition's)."""
    if leader_epoch < 0:
        return NO_EPOCH
    if last_seen is None:
        return MetadataUpdate(True, news=True)
    recreated = topic_recreated(proto, known_topic_id, topic_id)
    if not recreated and leader_epoch < last_seen and reject_older:
        return REJECT
    return MetadataUpdate(True, news=recreated or leader_epoch > last_seen)


def topic_recreated(proto, known_topic_id: int | None, topic_id: int) -> bool:
    """Whether an answer's topic id says the topic was deleted and recreated, so its leader
    epochs start again and a lower one is taken (`client_accepts_recreated_topic`): never
    before 3.0 (`off`); with KAFKA-12257 (3.0.0, `both_ids`) only when the cache holds an id
    and it differs (`topicId != null && oldTopicId != null && !topicId.equals(oldTopicId)`);
    with KAFKA-13488 (3.1.0, 3.0.1, `new_id`) whenever it differs from the cache's, which holds
    none for a topic an answer left out while it was deleted (`!topicId.equals(oldTopicId)`)."""
    rule = proto.client_accepts_recreated_topic
    if rule == "off" or known_topic_id == topic_id:
        return False
    return rule == "new_id" or known_topic_id is not None


def update_last_seen_epoch_if_newer(proto, last_seen: int | None, leader_epoch: int) -> bool:
    """`Metadata.updateLastSeenEpochIfNewer`: whether an epoch learnt outside Metadata answers
    (a ListOffsets answer's `leaderEpoch`: `OffsetFetcherUtils.updateSubscriptionState` at
    3.7, `Fetcher.resetOffsetIfNeeded` at 2.2-3.0; a committed offset's) becomes the last seen
    one, which also asks for a metadata update (`needFullUpdate`). Only an epoch newer than a
    known one: KAFKA-9724 (2.6) stopped 2.2-2.5's taking of a first epoch, which a client in
    this model cannot meet, since it asks ListOffsets only of a leader it knows, and so an
    epoch. No such map before KAFKA-7738 (2.2, `client_rejects_stale_metadata`). Fetched
    batches do not feed it: their epoch becomes the position's `offsetEpoch` only
    (`FetchCollector.fetchRecords` at 3.7, `Fetcher.fetchRecords` at 2.4)."""
    if not proto.client_rejects_stale_metadata or last_seen is None or leader_epoch < 0:
        return False
    return leader_epoch > last_seen


def partition_metadata_if_current(proto, last_seen: int | None, cached_epoch: int) -> bool:
    """`Metadata.partitionMetadataIfCurrent` (`partitionInfoIfCurrent` before 2.5): cached
    metadata names the current leader only when its epoch is the last seen one; a newer epoch
    learnt out of band makes it stale, and `currentLeader` then knows the epoch but no leader,
    so the client waits for a Metadata answer at that epoch. Always current before KAFKA-7738
    (2.2), which had no last seen epochs."""
    if not proto.client_rejects_stale_metadata or last_seen is None:
        return True
    return cached_epoch == last_seen


def metadata_answer_usable(brokers: tuple) -> bool:
    """`NetworkClient`'s metadata updater takes an answer only if it lists brokers ("When
    talking to the startup phase of a broker, it is possible to receive an empty metadata set,
    which we should retry later": `Metadata.failedUpdate`; 1.0: "don't update the cluster if
    there are no valid nodes"), so a broker that has had no UpdateMetadata yet empties no
    client's cache."""
    return bool(brokers)


def update_partition_leadership(proto, cached_epoch: int | None, leader: int, leader_epoch: int,
                                leader_known: bool) -> bool:
    """KIP-951 `Metadata.updatePartitionLeadership` for one CurrentLeader hint: applied only to
    a cached partition (`cached_epoch` None: not cached), with both fields present, an epoch
    strictly newer than `currentLeader`'s (the last seen one), and a leader the client knows
    (from its nodes or the response's NodeEndpoints)."""
    if cached_epoch is None or leader < 0 or leader_epoch < 0:
        return False
    return leader_epoch > cached_epoch and leader_known
