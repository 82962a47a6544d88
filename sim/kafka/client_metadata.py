"""A client's metadata cache with Kafka's leader-epoch rules (ref §3.1) and KIP-951 hints (§3.3).

Contract: `apply_response` accepts a partition's metadata when no epoch is known, when the topic
id changed (topic recreated, KAFKA-12257/KAFKA-13488, 3.0+; `client_accepts_recreated_topic`),
or when its epoch is >= the last seen one (equal is accepted); an older epoch is rejected and
the cached entry kept (KAFKA-7738). `apply_hint` accepts a CurrentLeader hint only when both
fields are present, the epoch is strictly newer, the node is known (from the cluster nodes or
the response's NodeEndpoints, which all join the nodes once a hint applies), and the partition
is cached; other partitions are kept (KAFKA-16012). Every accepted change records a `client_epoch` event; every
rejection a `metadata_rejected` event.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.rules import rules_for

NOT_CACHED = (-1, -1, -1)


class ClientMetadata:
    def __init__(self, owner, protocol):
        self.owner = owner  # the client actor, for trace events
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.parts: dict[str, tuple] = {}  # tp -> (topic_id, leader, leader_epoch)
        self.brokers: tuple = ()
        self.formats: dict[str, int] = {}

    def leader(self, tp: str) -> tuple[int, int]:
        entry = self.parts.get(tp)
        return (entry[1], entry[2]) if entry else (-1, -1)

    def entry(self, tp: str) -> tuple[int, int, int]:
        """(topic id, leader, leader epoch) of `tp`, all -1 when it is not cached."""
        return self.parts.get(tp, NOT_CACHED)

    def epoch(self, tp: str) -> int:
        entry = self.parts.get(tp)
        return entry[2] if entry else -1

    def apply_response(self, resp, source: str) -> bool:
        """Merge a MetadataResponse; returns whether it brought news: a partition seen for the
        first time, a newer leader epoch, or a recreated topic (what resets
        `Metadata.equivalentResponseCount` in `updateLatestMetadata`, ref §3.1)."""
        self.brokers = resp.brokers
        self.formats.update(dict(resp.formats))
        decide = self.rules.update_partition_metadata
        news = False
        for tp, topic_id, leader, epoch in resp.partitions:
            old = self.parts.get(tp)
            update = decide(self.protocol, old, topic_id, epoch)
            if update.reject:
                self.owner.emit(V.METADATA_REJECTED, {"tp": tp, "leader_epoch": epoch,
                                                      "known_epoch": old[2], "source": source})
            if not update.take:
                continue
            news = news or update.news
            if old != (topic_id, leader, epoch):
                self.parts[tp] = (topic_id, leader, epoch)
                self.owner.emit(V.CLIENT_EPOCH, {"tp": tp, "topic_id": topic_id, "leader": leader,
                                                 "leader_epoch": epoch, "source": "metadata",
                                                 "from": source})
        return news

    def apply_hint(self, tp: str, leader: int, epoch: int, endpoints: tuple, source: str) -> bool:
        """KIP-951 `updatePartitionLeadership` for one partition (ref §3.3.2)."""
        old = self.parts.get(tp)
        known = leader in self.brokers or leader in endpoints
        if not self.rules.update_partition_leadership(self.protocol, old[2] if old else None,
                                                      leader, epoch, known):
            return False
        self.parts[tp] = (old[0], leader, epoch)
        # an applied hint merges the response's NodeEndpoints into the known nodes, all of them
        # (`Metadata.updatePartitionLeadership`: newNodes go into the cache once a partition is
        # updated; an answer whose hints are all ignored changes no node)
        joined = tuple(sorted(set(self.brokers) | set(endpoints)))
        if joined != self.brokers:
            self.brokers = joined
        self.owner.emit(V.CLIENT_EPOCH, {"tp": tp, "topic_id": old[0], "leader": leader,
                                         "leader_epoch": epoch, "source": "hint", "from": source,
                                         "previous_epoch": old[2]})
        return True
