"""The operator's actions on a KRaft controller: leader moves, topic deletion and creation,
reassignment.

Contract (mixin of `KraftController`): each method is what a fault action of
`sim.kafka.faults.admin` / `nodes` calls on the active controller, and returns an outcome for
the trace (None: done). `move_leader` and `preferred_election` write a PartitionChangeRecord
electing the replica asked for (`ReplicationControlManager.electLeaders`, `PartitionChangeBuilder`
with a target leader); `delete_topic` writes a RemoveTopicRecord and `create_topic` a
TopicRecord with a PartitionRecord per partition (`ReplicationControlManager.deleteTopic`,
`createTopic`); `reassign` and `cancel_reassignment` write the PartitionChangeRecords of a
reassignment. An outcome that Kafka answers with an error starts with that error's name
(`"INVALID_REPLICATION_FACTOR: ..."`, Kafka's message after it). A probe's admin client also
calls `create_partitions`, and an admin client or a run's operator `elect_leaders`
(ElectLeaders, PREFERRED or UNCLEAN: an error code per partition).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import kraft_messages as K
from sim.kafka.metadata_image import NOT_MOVING, partition_record
from sim.kafka.rules import admin_elections as AE
from sim.kafka.rules import kraft as kraft_rules
from sim.kafka.rules import kraft_admin as admin_rules


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

    def elect_leaders(self, tps: list[str] | None, election_type: str = AE.PREFERRED) -> dict:
        """ElectLeaders (`ReplicationControlManager.electLeaders`, `electLeader`, read at 3.7.0
        and 3.9.0-rc3): per partition, UNKNOWN_TOPIC_OR_PARTITION for one that does not exist,
        ELECTION_NOT_NEEDED when it needs none (`rules.admin_elections
        .kraft_election_needed`), else NONE with the PartitionChangeRecord the election
        wrote, or PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when it wrote
        none. PREFERRED elects as `rules.kraft_admin.preferred_election_leader` picks;
        UNCLEAN as `PartitionChangeBuilder` with `Election.UNCLEAN` (`change_partition` with an
        unclean election allowed: an ISR member, with KIP-966 an ELR member or the last known
        leader, else the first usable replica with an ISR of itself). `tps` None: every
        partition, the answer without those that needed no election. Returns the error code
        per partition."""
        every = tps is None
        results = {tp: self._elect_leader(tp, election_type)
                   for tp in (sorted(self.image.parts) if every else tps)}
        return AE.answered(results, every)

    def _elect_leader(self, tp: str, election_type: str) -> int:
        st = self.image.parts.get(tp)
        if st is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION
        if not AE.kraft_election_needed(election_type, st.replicas, st.leader):
            return E.ELECTION_NOT_NEEDED
        if election_type == AE.UNCLEAN:
            change = self.change_partition(st, st.isr, reason=AE.ADMIN_UNCLEAN, unclean=True)
            return E.NONE if change is not None else AE.failed_error(election_type)
        leader = admin_rules.preferred_election_leader(st.replicas, st.isr, st.leader,
                                                       self.image.usable())
        if leader == st.leader:
            return AE.failed_error(election_type)
        self._write(partition_record(K.PARTITION_CHANGE, st._replace(
            leader=leader, leader_epoch=st.leader_epoch + 1,
            partition_epoch=st.partition_epoch + 1), self.image.moving(tp), AE.ADMIN_PREFERRED))
        return E.NONE

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
        error = admin_rules.manual_assignment_error(target, self.image.brokers, None)
        if error:  # `changePartitionReassignment` checks the target as a manual assignment
            return error
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
        if unclean and not self.unclean_enabled():
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
        """CreateTopics with a new topic id (`ReplicationControlManager.createTopic`, the same at
        3.3.0-3.7.0): the replicas placed as `rules.kraft_admin.place_replicas` says (fenced
        brokers too, once the unfenced are used), or a manual `assignment` checked as
        `validateManualPartitionAssignment` does; the ISR is the active replicas, and a
        partition with none is refused (INVALID_REPLICATION_FACTOR when placed,
        INVALID_REPLICA_ASSIGNMENT when manual)."""
        if name in self.image.topics:
            return f"TOPIC_ALREADY_EXISTS: Topic '{name}' already exists."
        assignment = self._assignment(partitions, rf, assignment, 0)
        if isinstance(assignment, str):
            return assignment
        topic = self.store.create_topic(name, assignment, message_format)
        self.write_topic(name, topic.topic_id, assignment)
        return None

    def create_partitions(self, name: str, count: int, assignment: list | None = None) -> str | None:
        """CreatePartitions (`ReplicationControlManager.createPartitions`): the topic grows to
        `count` partitions, the new ones placed or assigned as for a new topic with the topic's
        replication factor, each a PartitionRecord (its ISR the active replicas, the first of
        them leading)."""
        topic_id = self.image.topics.get(name)
        if topic_id is None:
            return "UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition."
        tps = self.image.tps_of(name)
        if count <= len(tps):
            return (f"INVALID_PARTITIONS: Topic already has {len(tps)} partition(s)."
                    if count == len(tps) else f"INVALID_PARTITIONS: The topic {name} currently "
                    f"has {len(tps)} partition(s); {count} would not be an increase.")
        added = count - len(tps)
        if assignment is not None and len(assignment) != added:
            return (f"INVALID_REPLICA_ASSIGNMENT: Attempted to add {added} additional "
                    f"partition(s), but only {len(assignment)} assignment(s) were specified.")
        rf = len(self.image.parts[tps[0]].replicas)
        placed = self._assignment(added, rf, assignment, len(tps), rf)
        if isinstance(placed, str):
            return placed
        usable = self.image.usable()
        for i, replicas in enumerate(placed, start=len(tps)):
            isr = tuple(r for r in replicas if r in usable)
            self._write(K.MetadataRecord.of(
                K.PARTITION, tp=f"{name}-{i}", topic_id=topic_id, leader=isr[0],
                leader_epoch=0, partition_epoch=0, isr=isr, replicas=tuple(replicas)))
        return None

    def _assignment(self, partitions: int, rf: int, manual: list | None, first: int,
                    manual_rf: int | None = None) -> list | str:
        """The replica lists of `partitions` new partitions numbered from `first`: `manual` ones
        checked (each as large as `manual_rf`, or as the first), else placed; an error text if
        Kafka refuses them, or if a partition would have no active replica."""
        usable = self.image.usable()
        if manual is not None:
            for i, replicas in enumerate(manual):
                error = admin_rules.manual_assignment_error(
                    tuple(replicas), self.image.brokers,
                    manual_rf if manual_rf is not None or i == 0 else len(manual[0]))
                if error:
                    return error
                if not any(r in usable for r in replicas):
                    return ("INVALID_REPLICA_ASSIGNMENT: All brokers specified in the manual "
                            f"partition assignment for partition {first + i} are fenced or in "
                            "controlled shutdown.")
            return [list(r) for r in manual]
        offered = [b for b in sorted(self.image.brokers) if not self._shutting_down(b)]
        placed = admin_rules.place_replicas(
            tuple(b for b in offered if not self.image.brokers[b].fenced),
            tuple(b for b in offered if self.image.brokers[b].fenced), partitions, rf, first)
        if isinstance(placed, str):
            return placed
        if any(not any(r in usable for r in replicas) for replicas in placed):
            return (f"INVALID_REPLICATION_FACTOR: Unable to replicate the partition {rf} "
                    "time(s): All brokers are currently fenced or in controlled shutdown.")
        return placed

    def _shutting_down(self, broker: int) -> bool:
        """`BrokerHeartbeatState.shuttingDown`: the broker entered controlled shutdown by its
        heartbeat (it has a controlledShutdownOffset) and is neither fenced nor registered
        again since (either ends it). Such a broker is offered to no placement; one whose
        registration alone says it is in controlled shutdown (a replayed
        BrokerRegistrationChangeRecord, as Kafka's tests write) still is."""
        reg = self.image.brokers[broker]
        return broker in self.shutdown_offsets and reg.in_controlled_shutdown and not reg.fenced

    def send_update_metadata(self, tps: list) -> None:
        """No UpdateMetadata in KRaft: a topic's format change reaches brokers otherwise."""
