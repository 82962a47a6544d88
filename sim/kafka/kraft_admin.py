"""The operator's actions on a KRaft controller: leader moves, topic deletion and creation,
reassignment.

Contract (mixin of `KraftController`): each method is what a fault action of
`sim.kafka.faults.admin` / `nodes` calls on the active controller, and returns an outcome for
the trace (None: done). `move_leader` and `preferred_election` write a PartitionChangeRecord
electing the replica asked for (`ReplicationControlManager.electLeaders`, `PartitionChangeBuilder`
with a target leader); `delete_topic` writes a RemoveTopicRecord and `create_topic` a
TopicRecord with a PartitionRecord per partition (`ReplicationControlManager.deleteTopic`,
`createTopic`); `reassign` and `cancel_reassignment` write the PartitionChangeRecords of a
reassignment.
"""

from __future__ import annotations

from sim.kafka import kraft_messages as K
from sim.kafka.metadata_image import NOT_MOVING, partition_record
from sim.kafka.rules import kraft as kraft_rules


class KraftAdmin:
    def move_leader(self, tp: str, to: str | int = "next", reason: str = "") -> str | None:
        st = self.image.parts.get(tp)
        if st is None:
            return f"no partition {tp}"
        usable = self.image.usable()
        order = [r for r in st.replicas if r in st.isr and r in usable and r != st.leader]
        if to == "next":
            if not order:
                return "no other live ISR replica"
            target = ([r for r in order if r > st.leader] or order)[0]
        else:
            target = int(str(to).lstrip("b"))
            if target not in order:
                return f"b{target} is not another live ISR replica"
        self._write(partition_record(K.PARTITION_CHANGE, st._replace(
            leader=target, leader_epoch=st.leader_epoch + 1,
            partition_epoch=st.partition_epoch + 1),
            self.image.moving(tp), reason))
        return None

    def preferred_election(self, tps: list[str]) -> str | None:
        """Elect each partition's first replica where it is a live ISR member and not leading."""
        for tp in tps:
            self.elect_preferred(tp)
        return None

    def elect_preferred(self, tp: str, reason: str = "") -> int:
        """Elect `tp`'s first replica if it is a usable ISR member and not leading
        (`PartitionChangeBuilder` with `Election.PREFERRED`); returns how many records that
        wrote (0 or 1)."""
        st = self.image.parts.get(tp)
        if st is not None and st.replicas and st.leader != st.replicas[0] \
                and st.replicas[0] in st.isr and st.replicas[0] in self.image.usable():
            return int(self.move_leader(tp, st.replicas[0], reason) is None)
        return 0

    def move_all_leaders(self, broker: int) -> str | None:
        """Every partition `broker` leads gets another live ISR replica as leader (as
        `move_leader` does for one), where it has one."""
        moved = [tp for tp in sorted(self.image.parts)
                 if self.image.parts[tp].leader == broker and self.move_leader(tp) is None]
        return None if moved else "no partition moved"

    def reassign(self, tp: str, replicas: list) -> str | None:
        """AlterPartitionReassignments (`ReplicationControlManager.changePartitionReassignment`):
        one PartitionChangeRecord with the target's replicas then the removed ones, and the
        adding and removing sets. It completes (`rules.kraft.completed_reassignment`) with the
        first change whose ISR holds every added replica, which drops the removed ones, and
        elects a new leader if the old one was removed; a broker that applies a record leaving
        it out of the replicas deletes its replica."""
        st = self.image.parts.get(tp)
        if st is None:
            return f"UNKNOWN_TOPIC_OR_PARTITION: no partition {tp}"
        target = tuple(replicas)
        if any(b not in self.image.brokers for b in target):
            return "INVALID_REPLICA_ASSIGNMENT: a target broker is not registered"
        merged, adding, removing = kraft_rules.reassignment_target(st.replicas, target)
        change = self.change_partition(st, st.isr, merged, (adding, removing), "reassign_start")
        return None if change is not None else "no change: the partition has these replicas"

    def cancel_reassignment(self, tp: str) -> str | None:
        """`cancelPartitionReassignment`: back to the original replicas, the ISR without the
        ones being added; refused when that needs an unclean election and the topic does not
        allow one (`PartitionReassignmentRevert`)."""
        st = self.image.parts.get(tp)
        if st is None or tp not in self.image.reassigning:
            return "NO_REASSIGNMENT_IN_PROGRESS"
        adding, _removing = self.image.reassigning[tp]
        original, isr, unclean = kraft_rules.reverted_reassignment(st.replicas, adding, st.isr)
        if unclean and not self.cluster.unclean_leader_election:
            return "INVALID_REPLICA_ASSIGNMENT: reverting needs an unclean leader election"
        self.change_partition(st, isr, original, NOT_MOVING, "reassign_cancel", unclean=unclean)
        return None

    def delete_topic(self, topic: str) -> str | None:
        """DeleteTopics: one RemoveTopicRecord. Each broker deletes its replicas when it applies
        the record (`ReplicaManager.applyDelta`); no StopReplica, no deletion state."""
        topic_id = self.image.topics.get(topic)
        if topic_id is None:
            return f"UNKNOWN_TOPIC_OR_PARTITION: no topic {topic}"
        self._write(K.MetadataRecord.of(K.REMOVE_TOPIC, topic_id=topic_id, name=topic))
        self.store.topics.pop(topic, None)
        return None

    def create_topic(self, name: str, partitions: int, rf: int, message_format: int = 2,
                     assignment: list | None = None) -> str | None:
        """CreateTopics with a new topic id. Without `assignment` the replicas are placed on
        the unfenced brokers, round robin (Kafka's `StripedReplicaPlacer` places only on
        them, with a random start the model leaves out); a manual `assignment` may name
        fenced brokers. Either way the ISR is the active replicas, and a partition with none
        is refused (`ReplicationControlManager.createTopic` at 3.6.0)."""
        if name in self.image.topics:
            return f"TOPIC_ALREADY_EXISTS: topic {name} exists"
        usable = self.image.usable()
        if assignment is None:
            if len(usable) < rf:
                return (f"INVALID_REPLICATION_FACTOR: {len(usable)} unfenced brokers for "
                        f"replication factor {rf}")
            assignment = [[usable[(p + i) % len(usable)] for i in range(rf)]
                          for p in range(partitions)]
        elif any(not any(r in usable for r in replicas) for replicas in assignment):
            return ("INVALID_REPLICA_ASSIGNMENT: every broker of a partition's manual "
                    "assignment is fenced or in controlled shutdown")
        topic = self.store.create_topic(name, assignment, message_format)
        self.write_topic(name, topic.topic_id, assignment)
        return None

    def send_update_metadata(self, tps: list) -> None:
        """No UpdateMetadata in KRaft: a topic's format change reaches brokers otherwise."""
