"""Topic deletion as the ZooKeeper-mode controller's TopicDeletionManager does it.

Contract (mixin of `Controller`): `delete_topics` takes the topics out of the assignment at once
(their partitions leave `store.topics`) and queues them in `store.deleting`, each replica
`OnlineReplica` when its broker is live and not shutting down and its log directory online, else
`OfflineReplica`; then `resume_deletions`, Kafka's `resumeDeletions`
(`sim.kafka.rules.topic_deletion.resume_decision` per topic):
- a topic whose replicas were all deleted completes (`topic_deletion_completed`; the name is
  free again);
- while none of its replicas is being deleted, the replicas whose deletion failed go back to
  `OfflineReplica` (a StopReplica without deletion to each live one), and a topic not marked
  ineligible (re)starts: UpdateMetadata with the LeaderDuringDelete marker for its partitions to
  every live broker, so they stop serving it; its replicas on brokers not live (or shutting
  down, or in a failed log directory) become `ReplicaDeletionIneligible` and mark the topic
  ineligible; every other replica not yet deleted becomes `OfflineReplica` (one StopReplica
  without deletion per broker) and then `ReplicaDeletionStarted` (one StopReplica with
  deletion per broker). Both carry the deletion's leader epoch (-2 from StopReplica v3).
A StopReplica answer completes each deleted replica it answers without error
(`ReplicaDeletionSuccessful`) and fails the others (`ReplicaDeletionIneligible`, the topic
marked ineligible); a broker's failure fails its replicas of queued topics; a broker's startup
brings its replicas back `OnlineReplica` and clears the ineligible mark of their topics
(`resumeDeletionForTopics`); a new controller sets every replica's state anew and marks a topic
ineligible that has a replica offline (`fetchTopicDeletionsInProgress`). Each of these ends in
`resume_deletions`. So a deletion a broker's failure halted resumes once no replica of the
topic is still being deleted elsewhere, and a broker down during the deletion still deletes its
replicas when it comes back, instead of keeping them as strays. Until a deletion completes a
topic of that name cannot be created (TOPIC_ALREADY_EXISTS, "Topic 't' is marked for
deletion").

ZooKeeper keeps a queued topic's partition states until the deletion completes: each
`OfflineReplica` writes its replica out of the ISR (`remove_deleted_from_isr`, no LeaderAndIsr
sent), and each `OnlineReplica` (a broker's startup, a new controller's) sends the replica a
LeaderAndIsr of that state (`deleted_online_on`), leaderless once the deletion took the replicas
offline. A reassignment of the topic in progress stays so (Kafka's `partitionsBeingReassigned`)
and goes with the topic: it halts the deletion (ineligible) only once queued, when another
notification names the topic (`processTopicDeletion` marks before it queues, and
`markTopicIneligibleForDeletion` ignores a topic not queued; read at 1.0.0, 2.4.0 and 3.7.0),
at a failover (`fetchTopicDeletionsInProgress`) or when it resumes
(`resume_deleted_reassignment`); a new deletion of a topic being reassigned starts at once.

Sources: TopicDeletionManager.scala (enqueueTopicsForDeletion, resumeDeletions,
onTopicDeletion, onPartitionDeletion, failReplicaDeletion, completeReplicaDeletion,
resumeDeletionForTopics), ReplicaStateMachine.scala (OfflineReplica, ReplicaDeletionStarted),
KafkaController (processTopicDeletion, onReplicasBecomeOffline, onBrokerStartup,
fetchTopicDeletionsInProgress), AdminZkClient.validateTopicCreate; read at 1.0.0 and 3.7.0.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.messages import StopReplicaPartition
from sim.kafka.rules import topic_deletion as TD
from sim.kafka.rules.controller import isr_removal
from sim.kafka.store import TopicDeletion


class TopicDeletionOps:
    def delete_topic(self, name: str) -> str | None:
        """An admin's deletion of one topic (`delete_topics` of it alone)."""
        return self.delete_topics([name])

    def delete_topics(self, names: list[str]) -> str | None:
        """`processTopicDeletion`: queue `names` for deletion together and resume; returns why
        not (the first name refused), else None."""
        if not self._can_write():
            return "controller cannot write"
        for name in names:
            if name in self.store.deleting:
                return f"topic {name} is already marked for deletion"
            if name not in self.store.topics:
                return f"no topic {name}"
        for name in names:
            topic = self.store.topics.pop(name)
            self.store.deleting[name] = TopicDeletion(topic, self._initial_states(name, topic))
            self.emit(V.TOPIC_DELETED, {"topic": name, "topic_id": topic.topic_id})
        self.resume_deletions()
        return None

    def newly_deleted(self, names) -> list[str]:
        """Of `names`, the topics that exist and are not yet queued for deletion."""
        return [n for n in names if n in self.store.topics]

    def on_topic_deletion_notification(self, names) -> None:
        """`processTopicDeletion`: mark ineligible the named topics with a reassignment in
        progress, then queue those that exist (a name it does not know is ignored), and resume
        every queued deletion. The mark comes before the queueing and
        `markTopicIneligibleForDeletion` ignores a topic not queued (read at 1.0.0, 2.4.0 and
        3.7.0), so it holds back only a topic an earlier notification queued: a new deletion
        of a topic being reassigned starts at once, over its reassignment's replicas too."""
        for name in sorted(set(names)):
            if name in self.store.deleting and self.reassigning(name):
                self.store.deleting[name].ineligible = True
        new = self.newly_deleted(names)
        if new:
            self.delete_topics(new)
        else:
            self.resume_deletions()

    def sends_before_fenced_write(self, kind: str, body) -> None:
        """What a controller whose ZooKeeper writes a newer controller epoch fences sends
        before its first write fails: for a TopicDeletion, `onTopicDeletion`'s UpdateMetadata
        with the deletion's marker (the write that fails is `OfflineReplica`'s ISR removal);
        nothing for the other notifications."""
        if kind == "TopicDeletion":
            self.send_update_metadata([], deleted=tuple(
                f"{n}-{i}" for n in self.newly_deleted(body.topics)
                for i in sorted(self.store.topics[n].partitions)))

    def marked_for_deletion(self, name: str) -> bool:
        return name in self.store.deleting

    def deleting_tps(self) -> tuple:
        """The partitions of every topic queued for deletion, for full UpdateMetadata requests,
        which carry them with the LeaderDuringDelete marker."""
        return tuple(sorted({tp for d in self.store.deleting.values() for _b, tp in d.states}))

    def _deletable(self, broker: int, tp: str) -> bool:
        """`isReplicaOnline` as a deletion asks it: live, not shutting down, directory online."""
        return broker not in self.shutting_down and self.replica_online(broker, tp)

    def _initial_states(self, name: str, topic) -> dict:
        return {(r, f"{name}-{i}"): TD.ONLINE if self._deletable(r, f"{name}-{i}") else TD.OFFLINE
                for i in sorted(topic.partitions) for r in topic.partitions[i].replicas}

    def init_deletions(self) -> None:
        """A controller taking over (`fetchTopicDeletionsInProgress`, `ReplicaStateMachine
        .startup`): replica states anew, a topic with an offline replica ineligible."""
        for name, d in sorted(self.store.deleting.items()):
            d.states = self._initial_states(name, d.topic)
            d.ineligible = TD.OFFLINE in d.states.values() or self.reassigning(name)

    def reassigning(self, name: str) -> bool:
        """Whether a partition of topic `name` is being reassigned. A deletion leaves the
        reassignment in progress, as Kafka does (`partitionsBeingReassigned`)."""
        return any(tp.rpartition("-")[0] == name for tp in self.store.reassignments)

    # -- resumeDeletions -----------------------------------------------------------------
    def resume_deletions(self) -> None:
        """`resumeDeletions` over every queued topic, in name order."""
        retry, start = [], []
        for name, d in sorted(self.store.deleting.items()):
            decision = TD.resume_decision(d.states.values(), d.ineligible)
            if decision == "complete":
                del self.store.deleting[name]
                # ZooKeeper's topic znode goes, with the reassignment it held (Kafka's context
                # keeps it in `partitionsBeingReassigned` until a failover: not modelled)
                for tp in [tp for tp in self.store.reassignments if tp.rpartition("-")[0] == name]:
                    del self.store.reassignments[tp]
                self.emit(V.TOPIC_DELETION_COMPLETED, {"topic": name, "topic_id": d.topic.topic_id})
            retry += [name] if decision.startswith("retry") else []
            start += [name] if decision.endswith("start") else []
        if retry:  # `retryDeletionForIneligibleReplicas`
            self._transition([(n, r) for n in retry for r, s in sorted(self.store.deleting[n]
                              .states.items()) if s == TD.INELIGIBLE], TD.OFFLINE)
        if start:
            self._on_topic_deletion(start)

    def _on_topic_deletion(self, names: list[str]) -> None:
        """`onTopicDeletion` then `onPartitionDeletion` for `names` together."""
        self.send_update_metadata([], deleted=tuple(sorted(
            {tp for n in names for _b, tp in self.store.deleting[n].states})))
        dead, retry = [], []
        for name in names:
            d = self.store.deleting[name]
            for r, state in sorted(d.states.items()):
                if not self._deletable(*r):
                    dead.append((name, r))
                elif state != TD.SUCCESSFUL:
                    retry.append((name, r))
        self._transition(dead, TD.INELIGIBLE)
        self._transition(retry, TD.OFFLINE)
        self._transition(retry, TD.STARTED)
        for name in sorted({n for n, _r in dead}):
            self.store.deleting[name].ineligible = True

    def _transition(self, replicas: list, target: str) -> None:
        """`handleStateChanges(replicas, target)` for replicas named (topic, (broker, tp)):
        those whose state allows it move; OfflineReplica and ReplicaDeletionStarted then send
        each live broker one StopReplica for its replicas, without and with deletion."""
        by_broker: dict[int, list] = {}
        moved = []
        for name, r in replicas:
            states = self.store.deleting[name].states
            if not TD.valid_transitions(states, [r], target):
                continue
            states[r] = target
            moved.append((name, r))
            by_broker.setdefault(r[0], []).append(self._deletion_stop(name, r[1], target == TD.STARTED))
        if target == TD.OFFLINE:
            self.remove_deleted_from_isr(moved)
        if target in (TD.OFFLINE, TD.STARTED):
            for b, parts in sorted(by_broker.items()):
                if b in self.live:
                    self.send_stop_replica(b, tuple(parts))

    def remove_deleted_from_isr(self, replicas) -> None:
        """`OfflineReplica`'s ZooKeeper write for replicas (topic, (broker, tp)) of queued
        topics, one broker at a time (Kafka groups them by replica id in a hash map's order,
        the model by broker id): `isr_removal` on the partition's state, which ZooKeeper keeps
        until the deletion completes, with a new leader epoch and partition epoch. Nothing is
        sent for it: the LeaderAndIsr to the other replicas is left out for a topic queued for
        deletion (`isTopicQueuedUpForDeletion`), and the UpdateMetadata goes only for a
        partition without leadership info. So once every replica went offline the partition is
        leaderless, its ISR the last replica written (read at 2.4.0 and 3.7.0)."""
        for _name, (b, tp) in sorted(replicas, key=lambda nr: nr[1]):
            st = self.deleted_partition(tp)[1]
            written = isr_removal(st.leader, st.isr, b)
            if written is None:
                continue
            if written[0] != st.leader or self.protocol.isr_shrink_bumps_epoch:
                st.leader_epoch += 1
            st.leader, st.isr = written
            st.partition_epoch += 1

    def resume_deleted_reassignment(self, tp: str, target: tuple) -> None:
        """`onPartitionReassignment` run again for a partition of a topic queued for deletion:
        `maybeResumeReassignments` (a failover, a target broker's startup) does not ask whether
        the topic is being deleted (read at 2.4.0 and 3.7.0). The topic is marked ineligible
        for deletion; unless its target is in the ISR, the partition's state takes a new
        leader epoch (`updateLeaderEpoch`) and goes in a LeaderAndIsr to each live replica,
        with an UpdateMetadata that marks it deleted. Not modelled: a target in the ISR, which
        completes the reassignment of the deleted partition (the model leaves it pending)."""
        self.store.deleting[tp.rpartition("-")[0]].ineligible = True
        st = self.deleted_partition(tp)[1]
        if all(r in st.isr for r in target):
            return
        st.leader_epoch += 1
        st.partition_epoch += 1
        for b in sorted(b for b in self.live if b in st.replicas):
            self.send_leader_and_isr(b, [tp])
        self.send_update_metadata([], deleted=(tp,))

    def deleted_partition(self, tp: str):
        """(topic, partition state) of `tp` of a topic queued for deletion, else None."""
        name, _, index = tp.rpartition("-")
        d = self.store.deleting.get(name)
        if d is None or not index.isdigit() or int(index) not in d.topic.partitions:
            return None
        return d.topic, d.topic.partitions[int(index)]

    def _deletion_stop(self, name: str, tp: str, delete: bool) -> StopReplicaPartition:
        topic = self.store.deleting[name].topic
        st = topic.partitions[int(tp.rpartition("-")[2])]
        return self.stop_entry(tp, topic, st, delete, deleting_topic=True)

    # -- what moves a deletion on --------------------------------------------------------
    def _queued(self, replicas) -> list:
        """(topic, (broker, tp)) for those of `replicas` (broker, tp) whose topic is queued."""
        return [(tp.rpartition("-")[0], (b, tp)) for b, tp in replicas
                if tp.rpartition("-")[0] in self.store.deleting]

    def fail_replica_deletion(self, replicas) -> None:
        """`failReplicaDeletion`: the replicas (broker, tp) of queued topics become
        ReplicaDeletionIneligible and their topics ineligible; then resume."""
        queued = self._queued(replicas)
        if not queued:
            return
        self._transition(queued, TD.INELIGIBLE)
        for name in sorted({n for n, _r in queued}):
            self.store.deleting[name].ineligible = True
        self.resume_deletions()

    def complete_replica_deletion(self, replicas) -> None:
        """`completeReplicaDeletion`: the replicas were deleted; then resume."""
        self._transition(self._queued(replicas), TD.SUCCESSFUL)
        self.resume_deletions()

    def on_deletion_brokers_failure(self, failed: list[int]) -> None:
        """`onReplicasBecomeOffline`'s part for queued topics: their replicas on `failed`."""
        self.fail_replica_deletion([r for d in self._deletions() for r in sorted(d.states)
                                    if r[0] in failed])

    def online_deleted_replicas(self, started: list[int]) -> list[str]:
        """`onBrokerStartup`'s `OnlineReplica` for the started brokers' replicas of queued
        topics, those whose state allows it (not one being or already deleted); returns their
        partitions, which `send_assignments` then names (`deleted_online_on`)."""
        self._transition([(tp.rpartition("-")[0], (b, tp)) for d in self._deletions()
                          for b, tp in sorted(d.states) if b in started], TD.ONLINE)
        return sorted({tp for b in started for tp in self.deleted_online_on(b)})

    def deleted_online_on(self, broker: int) -> list[str]:
        """The partitions of queued topics whose replica on `broker` is `OnlineReplica`. That
        transition (a broker's startup, a new controller's `ReplicaStateMachine.startup`) sends
        the broker a LeaderAndIsr of the partition as ZooKeeper holds it, with its others, as
        for any topic (`OnlineReplica` does not ask whether the topic is being deleted; read at
        2.4.0 and 3.7.0): leaderless once the deletion took its replicas offline, so the broker
        only creates the log again, which the deletion's StopReplica then removes."""
        return [tp for d in self._deletions() for (b, tp), state in sorted(d.states.items())
                if b == broker and state == TD.ONLINE]

    def on_deletion_brokers_startup(self, started: list[int]) -> None:
        """`onBrokerStartup`'s last part: the deletions of the queued topics with a replica on
        a started broker resume (`resumeDeletionForTopics`: no longer ineligible)."""
        names = sorted({tp.rpartition("-")[0] for d in self._deletions() for b, tp in d.states
                        if b in started})
        for name in names:
            self.store.deleting[name].ineligible = False
        if names:
            self.resume_deletions()

    def _deletions(self) -> list:
        return [d for _n, d in sorted(self.store.deleting.items())]

    def on_stop_replica_response(self, broker: int, request, response) -> None:
        """The answer to a StopReplica with deletion: each of its partitions of a queued topic
        (same topic id) deleted when answered without error, failed otherwise (a request-level
        error fails them all): `failReplicaDeletion` first, then `completeReplicaDeletion`."""
        if not self._can_write():
            return
        errors = dict(response.partition_errors)
        failed, deleted = [], []
        for part in request.partitions:
            deletion = self.store.deleting.get(part.tp.rpartition("-")[0])
            if not part.delete or deletion is None or deletion.topic.topic_id != part.topic_id:
                continue
            error = response.error or errors.get(part.tp)
            if error is not None:  # a partition the answer leaves out is neither
                (failed if error != E.NONE else deleted).append((broker, part.tp))
        if failed:
            self.fail_replica_deletion(failed)
        if deleted:
            self.complete_replica_deletion(deleted)
