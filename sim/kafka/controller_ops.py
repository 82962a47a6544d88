"""Controller operations: elections, broker failure/startup, controlled shutdown, topic and
partition creation.

Contract (mixin of `Controller`): every change to a partition goes through `change`, which bumps
the partition epoch (and the leader epoch when asked, ref §1.4 table, ZK column), records a
`partition_state` event with the new truth, and marks the partition dirty; callers `flush()` to
send LeaderAndIsr to the replicas and UpdateMetadata to every live broker. Operations are no-ops
returning a reason string when they cannot apply (the nemesis records it).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.messages import StopReplicaPartition
from sim.kafka.rules.controller import (
    isr_removal,
    offline_update_metadata,
    startup_update_metadata,
    zk_controlled_shutdown_error,
)
from sim.kafka.rules.elections import (
    leader_for_controlled_shutdown,
    leader_for_offline,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from sim.kafka.rules.inter_broker import stop_replica_carries_epoch
from sim.kafka.store import PState


class ControllerOps:
    # -- the one way partition state changes ----------------------------------------------
    def change(self, tp: str, reason: str, bump_epoch: bool = True, state_written: bool = True,
               **updates) -> None:
        """Apply `updates`; `state_written=False` when only the assignment changes, so the
        partition state (leader, ISR, epochs) is not rewritten: its ZK version, which is the
        partition epoch (ref §1.4 table), stays, and so does the leader epoch."""
        topic, st = self.store.partition(tp)
        for key, value in updates.items():
            setattr(st, key, tuple(value) if isinstance(value, list) else value)
        if self.rules.bumps_leader_epoch(bump_epoch, state_written, reason):
            st.leader_epoch += 1
        if state_written:
            st.partition_epoch += 1
        self._emit_state(tp, topic, st, reason)
        self.dirty.append(tp)

    def _emit_state(self, tp, topic, st, reason: str) -> None:
        self.emit(V.PARTITION_STATE, {"tp": tp, "topic_id": topic.topic_id, "leader": st.leader,
                                      "leader_epoch": st.leader_epoch,
                                      "partition_epoch": st.partition_epoch, "isr": list(st.isr),
                                      "replicas": list(st.replicas), "reason": reason,
                                      "controller_epoch": self.controller_epoch})

    def elect(self, tp: str, reason: str, candidates: list[int] | None = None,
              exclude: tuple = ()) -> bool:
        """Elect `tp`'s leader and write it; returns whether anything was written. Kafka's
        election for the reason (`sim.kafka.rules.elections`): a reassignment's among
        `candidates`, its target replicas (the ISR kept; none found: nothing written); a
        controlled shutdown's (`reason` "controlled_shutdown": the ISR loses the brokers
        shutting down; none found: the leader stays); else a new or offline partition's (none
        found: nothing written, the partition stays offline; `remove_from_isr` then writes it
        leaderless if its leader's replica went offline; found: written even when its
        restarted leader is elected again, `newLeaderAndIsr` taking a new leader epoch).
        `exclude` (the harness's `move_all_leaders`) moves leadership off those brokers to the
        first live ISR member, leading the live ISR without them. A replica in a failed log
        directory, or on a broker shutting down, is not live (`isReplicaOnline`)."""
        _topic, st = self.store.partition(tp)
        live = self._election_live(tp, st.replicas, reason == "controlled_shutdown")
        offline = candidates is None and reason != "controlled_shutdown" and not exclude
        if candidates is not None:
            leader = reassign_partition_leader_election(candidates, st.isr, live)
            elected = None if leader is None else (leader, st.isr)
        elif reason == "controlled_shutdown":
            elected = leader_for_controlled_shutdown(st.replicas, st.isr, live,
                                                     self.shutting_down | set(exclude))
        elif exclude:
            moved = [r for r in st.replicas if r in st.isr and r in live and r not in exclude]
            elected = (moved[0], tuple(r for r in st.isr if r in live and r not in exclude)) \
                if moved else None  # none: the current leader keeps it
        else:
            elected = leader_for_offline(st.replicas, st.isr, live,
                                         self.cluster.unclean_leader_election)
        if elected is None or (not offline and elected == (st.leader, st.isr)):
            return False  # nothing to write: a failed election does not bump the epoch either
        self.change(tp, f"elect:{reason}", leader=elected[0], isr=elected[1])
        return True

    def _election_live(self, tp: str, replicas, with_shutting_down: bool) -> set:
        """The replicas of `tp` an election counts live (`isReplicaOnline`, with
        `includeShuttingDownBrokers` for a controlled shutdown's)."""
        return {r for r in replicas if self.replica_online(r, tp)
                and (with_shutting_down or r not in self.shutting_down)}

    # -- broker lifecycle ----------------------------------------------------------------
    def on_brokers_failure(self, failed: list[int]) -> None:
        """`KafkaController.onBrokerFailure` -> `onReplicasBecomeOffline`: elect a leader for
        every partition whose leader is not live (`triggerOnlinePartitionStateChange`), then
        take the failed brokers' replicas out of the ISRs one broker at a time
        (`OfflineReplica`; Kafka's order is a hash set's, the model's by broker id); then maybe
        an UpdateMetadata of no partition (`rules.offline_update_metadata`)."""
        self.forget_offline_replicas(failed)
        tps = self.store.all_tps()
        offline_led = self.without_live_leader(tps)
        elected = [tp for tp in offline_led if self.elect(tp, "broker_failure")]
        hosted = False
        for broker in sorted(failed):
            mine = self.replicas_on(broker, tps)
            hosted |= bool(mine)
            self.remove_from_isr(broker, mine)
        self.flush()
        self.on_deletion_brokers_failure(failed)
        if offline_update_metadata(self.protocol, bool(offline_led), hosted, bool(elected)):
            self.send_update_metadata([])

    def start_state_machines(self) -> None:
        """`onControllerFailover` from 2.3 (read at 2.3.0 and 3.7.0): UpdateMetadata of every
        partition to the live brokers, and `ReplicaStateMachine.startup`: LeaderAndIsr of the
        current state to every live replica (`OnlineReplica`), then the replicas on brokers
        that are not live to `OfflineReplica` (KAFKA-3143: out of the ISRs, `remove_from_isr`,
        a queued topic's too, `remove_deleted_from_isr`);
        then `PartitionStateMachine.startup` elects a leader for every partition without a
        live one. Each step's requests go before the next step's."""
        self.send_full_state(sorted(self.live))
        tps = self.store.all_tps()
        assigned = {r for tp in tps for r in self.store.partition(tp)[1].replicas}
        for broker in sorted(assigned - set(self.live)):
            self.remove_from_isr(broker, self.replicas_on(broker, tps))
        self.remove_deleted_from_isr([(n, r) for n, d in sorted(self.store.deleting.items())
                                      for r in sorted(d.states) if r[0] not in self.live])
        self.flush()
        for tp in self.without_live_leader(tps):
            self.elect(tp, "offline_partition")
        self.flush()

    def replicas_on(self, broker: int, tps) -> list[str]:
        """The partitions of `tps` that `broker` is a replica of."""
        return [tp for tp in tps if broker in self.store.partition(tp)[1].replicas]

    def without_live_leader(self, tps) -> list[str]:
        """The partitions of `tps` whose leader is not a live broker (none included)."""
        return [tp for tp in tps if self.store.partition(tp)[1].leader not in self.live]

    def remove_from_isr(self, broker: int, tps, reason: str = "isr_remove_offline") -> None:
        """`ReplicaStateMachine.doRemoveReplicasFromIsr` for `broker`'s replicas of `tps` (each
        one it holds or, in a reassignment, held): every
        partition whose ISR holds it is written, leaderless if it led, without it unless it is
        the ISR's last member (ZooKeeper keeps that one); each write takes a new leader epoch
        (`newLeaderAndIsr`). `OfflineReplica` sends the new state to the other replicas only
        (callers `flush(without=broker)`, which matters when the broker is still up), and
        UpdateMetadata to every broker; a partition whose ISR already lacks the replica is
        sent the same way, unwritten (`doRemoveReplicasFromIsr` returns it with the written
        ones, read at 2.0.0 and 3.7.0)."""
        for tp in tps:
            _topic, st = self.store.partition(tp)
            written = isr_removal(st.leader, st.isr, broker)
            if written is None:
                self.dirty.append(tp)
                continue
            self.change(tp, reason, written[0] != st.leader or self.protocol.isr_shrink_bumps_epoch,
                        leader=written[0], isr=written[1])

    def on_brokers_startup(self, started: list[int]) -> None:
        """`onBrokerStartup`: UpdateMetadata (`rules.startup_update_metadata`: from 2.2 the
        brokers already live learn only the new broker list), then the started brokers'
        replicas go online (`OnlineReplica`): LeaderAndIsr to them, and UpdateMetadata of
        their partitions to every live broker, as each LeaderAndIsr adds its partition to one
        (`addLeaderAndIsrRequestForBrokers`, read at 0.10.2.0, 2.0.0 and 3.7.0); then an
        election for every offline partition: leaderless, led by a broker not live, or led by
        one that just started (left as its leader when nobody could take over at a failover)."""
        self.forget_offline_replicas(started)
        bare, full = startup_update_metadata(self.protocol, tuple(self.live), tuple(started))
        if bare:
            self.send_update_metadata([], brokers=list(bare))
        self.send_update_metadata(self.store.all_tps(), deleted=self.deleting_tps(),
                                  brokers=list(full))
        deleted = tuple(self.online_deleted_replicas(started))
        for b in started:
            self.send_assignments(b)
        hosted = [tp for tp in self.store.all_tps()
                  if any(b in self.store.partition(tp)[1].replicas for b in started)]
        if hosted or deleted:
            self.send_update_metadata(hosted, deleted=deleted)
        for tp in self.store.all_tps():
            leader = self.store.partition(tp)[1].leader
            if leader not in self.live or leader in started:
                self.elect(tp, "broker_startup")
        self.resume_reassignments(started)
        self.flush()
        self.on_deletion_brokers_startup(started)

    def controlled_shutdown(self, broker: int, broker_epoch: int = E.NO_EPOCH) -> str | None:
        """`KafkaController.doControlledShutdown` (the same from 1.1 to 3.7): refused when this
        controller cannot write, when `broker_epoch` (ControlledShutdown v2, KIP-380; -1: not
        carried) is older than the registration it holds, or when the broker is not live.
        Otherwise the broker counts as shutting down, and of the partitions it hosts with more
        than one replica (a topic queued for deletion is no longer among them): those it leads
        get the controlled shutdown election (written and sent first); those it follows, in the
        ISR or not, are stopped (StopReplica, delete false) at the leader epoch they have, then lose
        it from their ISR (`OfflineReplica`: `remove_from_isr`, LeaderAndIsr to the other
        replicas only) and are stopped once more at that same epoch, read before the removal.
        Returns a refusal's reason, else None; `leads_after_shutdown` is the answer's list."""
        error = self.controlled_shutdown_error(broker, broker_epoch)
        if error != E.NONE:
            return self._refusal(error, broker, broker_epoch)
        self.shutting_down.add(broker)  # `shuttingDownBrokerIds`: kept out of ISRs (KIP-841)
        led = self.leads_after_shutdown(broker)  # before: the partitions it leads now
        followed = [tp for tp in self.store.all_tps()
                    if self._shutdown_acts_on(tp, broker) and tp not in led]
        for tp in led:
            self.elect(tp, "controlled_shutdown", exclude=(broker,))
        self.flush()
        stops = tuple(self._stop_part(tp, delete=False) for tp in followed)
        if stops:
            self.send_stop_replica(broker, stops)
        self.remove_from_isr(broker, followed, "controlled_shutdown")
        self.flush(without=broker)
        if stops:
            self.send_stop_replica(broker, stops)
        return None

    def controlled_shutdown_error(self, broker: int, broker_epoch: int) -> int:
        """The error `doControlledShutdown` throws before acting, or NONE."""
        return zk_controlled_shutdown_error(self._can_write(), broker_epoch, self.live.get(broker))

    def _refusal(self, error: int, broker: int, broker_epoch: int) -> str:
        if error == E.NOT_CONTROLLER:
            return "controller cannot write"  # as every other operation says it
        why = (f"b{broker} asked at broker epoch {broker_epoch} < {self.live.get(broker)}"
               if error == E.STALE_BROKER_EPOCH else f"b{broker} is not live")
        return f"{V.ERROR_NAMES[error]}: {why}"

    def _shutdown_acts_on(self, tp: str, broker: int) -> bool:
        # a topic queued for deletion has left `store.topics`, so `all_tps` skips it already
        replicas = self.store.partition(tp)[1].replicas
        return broker in replicas and len(replicas) > 1

    def leads_after_shutdown(self, broker: int) -> list[str]:
        """`partitionLeadersOnBroker`: the partitions `broker` leads that a controlled shutdown
        moves (more than one replica, topic not queued for deletion); after one, those it
        still leads, which its answer lists."""
        return [tp for tp in self.store.all_tps() if self._shutdown_acts_on(tp, broker)
                and self.store.partition(tp)[1].leader == broker]

    # -- leadership moves ----------------------------------------------------------------
    def move_leader(self, tp: str, to: str | int = "next") -> str | None:
        if not self._can_write():
            return "controller cannot write"
        if self.store.partition(tp) is None:
            return f"no partition {tp} (its topic was deleted)"
        _topic, st = self.store.partition(tp)
        if to == "next":
            order = [r for r in st.replicas
                     if r in st.isr and self.replica_online(r, tp) and r != st.leader]
            if not order:
                return "no other live ISR replica"
            after = [r for r in order if r > st.leader]
            target = (after or order)[0]
        else:
            target = int(str(to).lstrip("b"))
            if target not in st.isr or not self.replica_online(target, tp):
                return f"b{target} is not a live ISR replica"
        self.change(tp, "elect:move_leader", leader=target)
        self.flush()
        return None

    def move_all_leaders(self, broker: int) -> str | None:
        if not self._can_write():
            return "controller cannot write"
        moved = [tp for tp in self.store.all_tps()
                 if self.store.partition(tp)[1].leader == broker
                 and self.elect(tp, "move_all_leaders", exclude=(broker,))]
        self.flush()
        return None if moved else "no partition moved"

    def preferred_election(self, tps: list[str], reason: str = "elect:preferred") -> str | None:
        """`onReplicaElection(PREFERRED)`: each of `tps` whose preferred replica (its first) is
        live and in the ISR is led by it, written with `reason`, then one flush; returns why
        nothing happened to a single partition named alone, else None."""
        if not self._can_write():
            return "controller cannot write"
        missing = [tp for tp in tps if self.store.partition(tp) is None]
        if missing and len(missing) == len(tps):
            return f"no partition {missing[0]} (its topic was deleted)"
        refused = None
        for tp in tps:
            if tp in missing:
                continue
            _topic, st = self.store.partition(tp)
            preferred = st.replicas[0]
            live = self._election_live(tp, st.replicas, False)
            if st.leader == preferred:
                refused = f"ELECTION_NOT_NEEDED: b{preferred} already leads {tp}"
            elif preferred_replica_partition_leader_election(st.replicas, st.isr, live) is not None:
                self.change(tp, reason, leader=preferred)
            else:
                refused = (f"PREFERRED_LEADER_NOT_AVAILABLE: b{preferred} is not a live ISR "
                           f"replica of {tp} (isr {list(st.isr)})")
        self.flush()
        # Kafka's ElectLeaders answers per partition (KIP-460); a step naming one partition
        # says why nothing happened, a cluster-wide one only that it ran
        return refused if len(tps) == 1 else None

    def _stop_part(self, tp: str, delete: bool) -> StopReplicaPartition:
        topic, st = self.store.partition(tp)
        return self.stop_entry(tp, topic, st, delete)

    def stop_entry(self, tp: str, topic, st, delete: bool,
                   deleting_topic: bool = False) -> StopReplicaPartition:
        """StopReplica entry: v3 carries the epoch (KIP-570), -2 for a topic deletion; older
        versions read as -1 (ref §1.5). The version is the inter-broker protocol's: v3 only
        from IBP 2.6, so during a rolling upgrade to 2.6 brokers still get no epoch."""
        if not stop_replica_carries_epoch(self.protocol, self.store.ibp):
            wire = E.NO_EPOCH
        else:
            wire = E.EPOCH_DURING_DELETE if deleting_topic else st.leader_epoch
        return StopReplicaPartition(tp, topic.topic_id, wire, delete, st.leader_epoch)

    # -- topics --------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, rf: int, message_format: int = 2,
                     assignment: list | None = None) -> str | None:
        """CreateTopics: round robin over the live brokers, or the manual `assignment` as
        given (`ZkAdminManager.createTopics` checks its shape, not that its brokers live).
        Its partitions start as `_new_partitions` says."""
        if not self._can_write():
            return "controller cannot write"
        if name in self.store.topics:
            return f"TOPIC_ALREADY_EXISTS: topic {name} exists"
        if self.marked_for_deletion(name):
            return f"TOPIC_ALREADY_EXISTS: topic {name} is marked for deletion"
        brokers = sorted(self.live)
        if assignment is None and len(brokers) < rf:
            return f"only {len(brokers)} live brokers for replication factor {rf}"
        if assignment is None:
            assignment = [[brokers[(p + i) % len(brokers)] for i in range(rf)]
                          for p in range(partitions)]
        topic = self.store.create_topic(name, assignment, message_format)
        self._new_partitions(name, topic, sorted(topic.partitions), "create_topic")
        self.flush()
        return None

    def add_partitions(self, name: str, assignment: list) -> str | None:
        """`KafkaController.processPartitionModifications` (3.7.0; the same steps in
        `PartitionModifications.process` at 2.0.0): ZooKeeper's assignment of topic `name` is
        now `assignment`, one replica list per partition. The partitions it names beyond those
        the topic has are created as `onNewPartitionCreation` creates a new topic's
        (`_new_partitions`); those the topic has keep their replicas even when the assignment
        names others, since only partitions missing from the controller's context are read (a
        later controller would read the new list from ZooKeeper; the model's store is both).
        A topic queued for deletion gets none (Kafka writes its assignment back without
        them), and a topic the controller does not know has no handler to notify. Returns why
        nothing was created, else None."""
        if not self._can_write():
            return "controller cannot write"
        if self.marked_for_deletion(name):
            return f"topic {name} is being deleted: its new partitions are not added"
        topic = self.store.topics.get(name)
        if topic is None:
            return f"no topic {name}"
        added = [i for i in range(len(assignment)) if i not in topic.partitions]
        if not added:
            return f"no new partition of {name}"
        for i in added:
            replicas = tuple(assignment[i])
            topic.partitions[i] = PState(replicas, replicas, replicas[0])
        self._new_partitions(name, topic, added, "create_partitions")
        self.flush()
        return None

    def _new_partitions(self, name: str, topic, indices: list[int], reason: str) -> None:
        """`onNewPartitionCreation` for `topic`'s partitions `indices`, whose states ZooKeeper
        holds as written (all replicas in the ISR, the first leading, epochs 0): each starts as
        `initializeLeaderAndIsrForPartitions` (2.0.0-3.7.0) makes it: its first online replica
        leads, the online ones form the ISR, leader epoch 0, marked for LeaderAndIsr and
        UpdateMetadata. One with no online replica gets no state in Kafka (it stays
        NewPartition until a replica's broker starts): here it is leaderless with every replica
        in its ISR, sent to nobody, and the next broker startup elects it (at leader epoch 1,
        where Kafka's would be 0)."""
        for i in indices:
            tp, st = f"{name}-{i}", topic.partitions[i]
            online = self._election_live(tp, st.replicas, False)
            isr = tuple(r for r in st.replicas if r in online)
            st.leader, st.isr = (isr[0], isr) if isr else (E.NO_LEADER, st.replicas)
            self._emit_state(tp, topic, st, reason)
            if isr:
                self.dirty.append(tp)
