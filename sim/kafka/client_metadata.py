"""A client's metadata with Kafka's leader-epoch rules (ref §3.1) and KIP-951 hints (§3.3).

Contract: two maps, as Kafka's `Metadata` keeps them. `parts` is the cache
(`MetadataCache`): each Metadata answer builds it anew (`handleMetadataResponse`), so a
partition or topic the answer does not list is gone from it, and the client knows no leader
for it. `last_seen` (`lastSeenLeaderEpochs`) outlives the cache: the last leader epoch seen of
each partition, from Metadata answers, hints, or out of band (`update_last_seen_epoch_if_newer`,
the hook a ListOffsets answer calls); Kafka removes an entry only for a topic the client stops
asking about, and a recreated topic resets it. `apply_response` takes a partition's entry as
`update_partition_metadata` decides against the last seen epoch and the cache's topic id, and
keeps the cached entry on a rejection (KAFKA-7738); an entry without a leader epoch (an old
answer) is taken as it is and the partition's last seen epoch forgotten; an answer without brokers is not taken
(see `client_refresh`). `apply_hint` accepts a CurrentLeader hint only when both fields are
present, the epoch is strictly newer than the last seen, the node is known (from the cluster
nodes or the response's NodeEndpoints, which then join the nodes), and the partition is
cached; other partitions are kept (KAFKA-16012). `current_leader` is `Metadata.currentLeader`:
no leader while the cached entry is missing or stale (older than the last seen epoch) or names
an unknown node. Every change of that view is a `client_epoch` event (leader -1 when there is
none: a partition dropped from the cache, or made stale out of band); every rejection a
`metadata_rejected` event.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.rules import client_metadata as cm
from sim.kafka.rules import rules_for

NOT_CACHED = (-1, -1, -1)


def topic_of(tp: str) -> str:
    return tp.rpartition("-")[0]


class ClientMetadata:
    def __init__(self, owner, protocol):
        self.owner = owner  # the client actor, for trace events
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.parts: dict[str, tuple] = {}  # tp -> (topic_id, leader, leader_epoch): the cache
        # tp -> (leader_epoch, topic_id): `lastSeenLeaderEpochs`. Kafka's map holds the epoch
        # alone; the topic id it was seen under is kept for the trace's `client_epoch`, and
        # for the recreation check under `client_keeps_unlisted_topic_id`
        self.last_seen: dict[str, tuple[int, int]] = {}
        self.brokers: tuple = ()
        self.formats: dict[str, int] = {}

    # -- reading -------------------------------------------------------------------------
    def entry(self, tp: str) -> tuple[int, int, int]:
        """(topic id, leader, leader epoch) of `tp` in the cache, all -1 when it is not cached:
        what the producer's accumulator reads (`cluster.leaderFor`)."""
        return self.parts.get(tp, NOT_CACHED)

    def epoch(self, tp: str) -> int:
        """The last leader epoch seen of `tp`, -1 when none."""
        seen = self.last_seen.get(tp)
        return seen[0] if seen else -1

    def _last_seen_epoch(self, tp: str) -> int | None:
        seen = self.last_seen.get(tp)
        return seen[0] if seen else None

    def is_current(self, tp: str) -> bool:
        """Whether `tp` is cached and its entry is not older than the last seen epoch."""
        entry = self.parts.get(tp)
        return entry is not None and cm.partition_metadata_if_current(
            self.protocol, self._last_seen_epoch(tp), entry[2])

    def current_leader(self, tp: str) -> tuple[int, int]:
        """`Metadata.currentLeader`: (leader, epoch) of a current cached entry, its leader -1
        when it is no known node; else (-1, the last seen epoch or -1)."""
        if not self.is_current(tp):
            return -1, self.epoch(tp)
        _, leader, epoch = self.parts[tp]
        return (leader if leader in self.brokers else -1), epoch

    # -- Metadata answers ----------------------------------------------------------------
    def apply_response(self, resp, source: str) -> bool:
        """Build the cache anew from a MetadataResponse (`Metadata.handleMetadataResponse`);
        returns whether it brought news: a first epoch, a newer one, or a recreated topic
        (what resets `Metadata.equivalentResponseCount` in `updateLatestMetadata`, ref §3.1)."""
        self.brokers = resp.brokers
        self.formats.update(dict(resp.formats))
        known_ids = {topic_of(tp): entry[0] for tp, entry in self.parts.items()}
        decide = self.rules.update_partition_metadata
        parts: dict[str, tuple] = {}
        news = False
        for tp, topic_id, leader, epoch in resp.partitions:
            old = self.parts.get(tp)
            seen = self.last_seen.get(tp)  # (epoch, topic id) or None
            last_seen = seen[0] if seen else None
            known_id = cm.known_topic_id(self.protocol, known_ids.get(topic_of(tp)),
                                         seen[1] if seen else None)
            update = decide(self.protocol, last_seen, known_id, topic_id, epoch)
            if update.reject:
                self.owner.emit(V.METADATA_REJECTED, {"tp": tp, "leader_epoch": epoch,
                                                      "known_epoch": last_seen, "source": source})
            news = news or update.news
            if not update.take:
                if old is not None:  # "use the previously cached info"
                    parts[tp] = old
                continue
            entry = (topic_id, leader, epoch)
            parts[tp] = entry
            current = old is not None and self.is_current(tp)
            if update.forget:
                self.last_seen.pop(tp, None)
            else:
                self.last_seen[tp] = (epoch, topic_id)
            if old != entry or not current:
                self._emit_epoch(tp, entry, {"source": "metadata", "from": source})
        self._drop_unlisted(parts, source)
        self.parts = parts
        return news

    def _drop_unlisted(self, parts: dict, source: str) -> None:
        """The partitions the new cache no longer holds: the client knows no leader for them,
        and their last seen epochs stay."""
        for tp in sorted(set(self.parts) - set(parts)):
            topic_id = self.parts[tp][0]
            epoch = self.epoch(tp)
            self._emit_epoch(tp, (topic_id, -1, epoch), {"source": "metadata", "from": source,
                                                         "dropped": True})

    def _emit_epoch(self, tp: str, entry: tuple, fields: dict) -> None:
        topic_id, leader, epoch = entry
        self.owner.emit(V.CLIENT_EPOCH, {"tp": tp, "topic_id": topic_id, "leader": leader,
                                         "leader_epoch": epoch, **fields})

    # -- leader epochs learnt elsewhere --------------------------------------------------
    def apply_hint(self, tp: str, leader: int, epoch: int, endpoints: tuple, source: str) -> bool:
        """KIP-951 `updatePartitionLeadership` for one partition (ref §3.3.2)."""
        old = self.parts.get(tp)
        known = leader in self.brokers or leader in endpoints
        previous = self.current_leader(tp)[1]
        if not self.rules.update_partition_leadership(self.protocol,
                                                      previous if old else None,
                                                      leader, epoch, known):
            return False
        self.parts[tp] = (old[0], leader, epoch)
        self.last_seen[tp] = (epoch, old[0])
        # an applied hint merges the response's NodeEndpoints into the known nodes, all of them
        # (`Metadata.updatePartitionLeadership`: newNodes go into the cache once a partition is
        # updated; an answer whose hints are all ignored changes no node)
        joined = tuple(sorted(set(self.brokers) | set(endpoints)))
        if joined != self.brokers:
            self.brokers = joined
        self._emit_epoch(tp, self.parts[tp], {"source": "hint", "from": source,
                                              "previous_epoch": previous})
        return True

    def update_last_seen_epoch_if_newer(self, tp: str, epoch: int, source: str,
                                        answered_by: str) -> bool:
        """`Metadata.updateLastSeenEpochIfNewer`: take `epoch`, learnt from a `source` answer
        other than Metadata, as the last seen one when it is newer; the cached entry is then
        stale (no current leader) until a Metadata answer at that epoch. Returns whether it
        was taken, in which case the caller asks for a metadata update (`needFullUpdate`)."""
        seen = self.last_seen.get(tp)
        if not cm.update_last_seen_epoch_if_newer(self.protocol, seen[0] if seen else None,
                                                  epoch):
            return False
        cached = self.parts.get(tp)
        topic_id = cached[0] if cached else seen[1]
        self.last_seen[tp] = (epoch, topic_id)
        self._emit_epoch(tp, (topic_id, -1, epoch), {"source": source, "from": answered_by,
                                                     "previous_epoch": seen[0]})
        return True
