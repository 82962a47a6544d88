"""A client's metadata cache rules: which partition metadata it takes (ref §3.1) and which
KIP-951 leader hints it applies (ref §3.3.2).

Contract: pure functions of the protocol switches and plain values; `cached` is the cached
`(topic_id, leader, leader_epoch)` of the partition or None.
"""

from __future__ import annotations

from typing import NamedTuple


class MetadataUpdate(NamedTuple):
    """`take`: replace the cached entry; `reject`: keep it and record the rejection (neither:
    keep it silently). `news`: the answer brought something new (a first sighting, a newer
    epoch, a recreated topic), which resets `Metadata.equivalentResponseCount`."""
    take: bool
    reject: bool = False
    news: bool = False


REJECT = MetadataUpdate(False, True)


def update_partition_metadata(proto, cached: tuple | None, topic_id: int,
                              leader_epoch: int) -> MetadataUpdate:
    """`Metadata.updateLatestMetadata`: take a partition's metadata when nothing is cached,
    when its epoch is at least the cached one, or when the topic id changed (the topic was
    recreated: KAFKA-12257 3.0, KAFKA-13488 3.2, `client_accepts_recreated_topic`); an older
    epoch is rejected and the cached entry kept (KAFKA-7738, 2.2,
    `client_rejects_stale_metadata`)."""
    return take_newer_metadata(proto, cached, topic_id, leader_epoch,
                               proto.client_rejects_stale_metadata)


def take_newer_metadata(proto, cached: tuple | None, topic_id: int, leader_epoch: int,
                        reject_older: bool) -> MetadataUpdate:
    """`update_partition_metadata` with the KAFKA-7738 rejection given as `reject_older`."""
    if cached is None:
        return MetadataUpdate(True, news=True)
    recreated = cached[0] != topic_id and proto.client_accepts_recreated_topic
    if not recreated and leader_epoch < cached[2] and reject_older:
        return REJECT
    return MetadataUpdate(True, news=recreated or leader_epoch > cached[2])


def update_partition_leadership(proto, cached_epoch: int | None, leader: int, leader_epoch: int,
                                leader_known: bool) -> bool:
    """KIP-951 `Metadata.updatePartitionLeadership` for one CurrentLeader hint: applied only to
    a cached partition, with both fields present, a strictly newer epoch, and a leader the
    client knows (from its nodes or the response's NodeEndpoints)."""
    if cached_epoch is None or leader < 0 or leader_epoch < 0:
        return False
    return leader_epoch > cached_epoch and leader_known
