"""Topic deletion as the ZooKeeper-mode controller's TopicDeletionManager does it.

Contract (mixin of `Controller`): `delete_topic` takes the topic out of the assignment at once
(its partitions leave `store.topics`, and UpdateMetadata with the LeaderDuringDelete marker makes
brokers drop them from their metadata caches) and queues it in `store.deleting` with every
replica pending. A replica stops pending when its broker answers a StopReplica(delete) for it
without error; when none is left the deletion completes (`topic_deletion_completed`) and the
name is free again. A replica on a dead broker stays pending (ReplicaDeletionIneligible): the
deletion resumes when that broker starts again or a new controller takes over, and until it
completes a topic of that name cannot be created (TOPIC_ALREADY_EXISTS, "Topic 't' is marked
for deletion"). So a broker that was down during the deletion still deletes its replicas when
it comes back, instead of keeping them as strays.

Sources: TopicDeletionManager.scala (onTopicDeletion, onPartitionDeletion,
completeReplicaDeletion, resumeDeletions), KafkaController.onBrokerStartup and
onControllerFailover, AdminZkClient.validateTopicCreate.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.messages import StopReplicaPartition
from sim.kafka.store import TopicDeletion


class TopicDeletionOps:
    def delete_topic(self, name: str) -> str | None:
        if not self._can_write():
            return "controller cannot write"
        if name in self.store.deleting:
            return f"topic {name} is already marked for deletion"
        topic = self.store.topics.get(name)
        if topic is None:
            return f"no topic {name}"
        tps = [f"{name}-{i}" for i in sorted(topic.partitions)]
        pending = {(r, tp) for tp in tps for r in self.store.partition(tp)[1].replicas}
        for tp in tps:
            self.store.reassignments.pop(tp, None)
        del self.store.topics[name]
        self.store.deleting[name] = TopicDeletion(topic, pending)
        self.emit(V.TOPIC_DELETED, {"topic": name, "topic_id": topic.topic_id})
        # brokers stop serving the topic first, then its replicas are deleted (onTopicDeletion)
        self.send_update_metadata([], deleted=tuple(tps))
        self.resume_deletions(sorted(self.live))
        return None

    def marked_for_deletion(self, name: str) -> bool:
        return name in self.store.deleting

    def deleting_tps(self) -> tuple:
        """The partitions of every topic queued for deletion, for full UpdateMetadata requests,
        which carry them with the LeaderDuringDelete marker."""
        return tuple(sorted({tp for d in self.store.deleting.values() for _b, tp in d.pending}))

    def resume_deletions(self, brokers: list[int]) -> None:
        """StopReplica(delete) for every pending replica on each of `brokers` (live ones)."""
        for b in brokers:
            parts = tuple(self._deletion_stop(d, tp) for _name, d in sorted(self.store.deleting.items())
                          for r, tp in sorted(d.pending) if r == b)
            if parts and b in self.live:
                self.send_stop_replica(b, parts)

    def _deletion_stop(self, deletion: TopicDeletion, tp: str) -> StopReplicaPartition:
        st = deletion.topic.partitions[int(tp.rpartition("-")[2])]
        return self.stop_entry(tp, deletion.topic, st, True, deleting_topic=True)

    def on_stop_replica_response(self, broker: int, request, response) -> None:
        """completeReplicaDeletion: a replica answered without error is deleted; the topic's
        deletion completes with its last replica."""
        if not self._can_write():
            return
        errors = dict(response.partition_errors)
        for part in request.partitions:
            name = part.tp.rpartition("-")[0]
            deletion = self.store.deleting.get(name)
            if (not part.delete or deletion is None or deletion.topic.topic_id != part.topic_id
                    or errors.get(part.tp) != E.NONE):
                continue
            deletion.pending.discard((broker, part.tp))
            if not deletion.pending:
                del self.store.deleting[name]
                self.emit(V.TOPIC_DELETION_COMPLETED, {"topic": name, "topic_id": part.topic_id})
