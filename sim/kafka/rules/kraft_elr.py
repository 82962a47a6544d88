"""KIP-966 (part 1) in the quorum controller: eligible leader replicas (ELR) and the last
known leader, as `PartitionChangeBuilder.build` keeps them with ELR enabled, and what a
broker's registration says of its last shutdown.

Read at 3.9.0-rc3 (`metadata/.../controller/PartitionChangeBuilder.java`,
`ReplicationControlManager.java`, `ClusterControlManager.registerBroker`, the ELR cases of
`PartitionChangeBuilderTest` and `ReplicationControlManagerTest`) and in a 4.x copy of
`PartitionChangeBuilder.java` found with the code search (the same rules; no ZooKeeper
migration flag). KAFKA-19522 (4.1.0) made the last known leader electable only when it is
an acceptable leader; 3.7-4.0 elected it whatever its state.

Contract: pure functions of plain values (a partition is a `PartitionState` with its `elr`
and `last_known_elr`); they change nothing. The controller's builder always keeps the last
known leader in LastKnownElr (`useLastKnownLeaderInBalancedRecovery` is true: the
ReplicationControlManager never sets it), so the wider LastKnownElr of that flag's other arm
is not modelled, nor KIP-966 part 2 (unclean recovery), which 4.1 does not ship.
"""

from __future__ import annotations

from typing import NamedTuple

from sim.kafka.rules.kraft import completed_reassignment

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # `LeaderConstants.NO_LEADER_CHANGE`: a change record naming no leader


class ElrChange(NamedTuple):
    """A partition's state after a change built with ELR (`PartitionChangeRecord` applied)."""

    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple
    replicas: tuple
    adding: tuple
    removing: tuple
    elr: tuple
    last_known_elr: tuple


def effective_min_isr(min_insync_replicas: int, replication_factor: int) -> int:
    """`ReplicationControlManager.getTopicEffectiveMinIsr`: min.insync.replicas, at most the
    topic's replication factor (that of its partition 0)."""
    return min(min_insync_replicas, replication_factor)


def target_elr(st, target_isr: tuple, min_isr: int, unclean_shutdown: tuple,
               assigned: tuple | None = None) -> tuple:
    """`maybePopulateTargetElr`: with the target ISR at least min.insync.replicas, no ELR;
    below it, the present ISR and ELR without the target ISR and without the brokers whose
    shutdown was unclean (Kafka gathers them in a HashSet of small ints: ascending order).
    Kafka keeps a replica a completed reassignment removed (read at 3.9.0-rc3 and in a 4.x
    copy), so re-added with an empty log it may be elected from the ELR; `assigned` (the
    target replicas, proposal `elr_assigned_replicas_only`) keeps only those."""
    if len(target_isr) >= min_isr:
        return ()
    candidates = set(st.elr) | set(st.isr)
    return tuple(sorted(r for r in candidates
                        if r not in target_isr and r not in unclean_shutdown
                        and (assigned is None or r in assigned)))


def elect_leader(st, target_isr: tuple, target_elr_: tuple, replicas: tuple, usable,
                 unclean: bool) -> tuple[int, bool]:
    """`electAnyLeader` (election ONLINE, or UNCLEAN with `unclean`): (leader, unclean?). A
    valid leader is usable and in the target ISR, or in the ELR when the target ISR is empty
    (`isValidNewLeader`): the current leader if valid, else the first valid replica in
    assignment order; else the last known leader, once ISR and ELR are both empty and
    LastKnownElr holds just it, if it is usable (`canElectLastKnownLeader`, KAFKA-19522),
    elected as an unclean election; else with `unclean` the first usable replica."""
    def valid(r: int) -> bool:
        in_isr = r in target_isr or (not target_isr and r in target_elr_)
        return in_isr and r in usable

    if valid(st.leader):
        return st.leader, False
    clean = [r for r in replicas if valid(r)]
    if clean:
        return clean[0], False
    if not target_isr and not target_elr_ and len(st.last_known_elr) == 1 \
            and st.last_known_elr[0] in usable:
        return st.last_known_elr[0], True
    dirty = [r for r in replicas if r in usable] if unclean else []
    return (dirty[0], True) if dirty else (NO_LEADER, False)


def last_known_elr(st, record_isr: tuple | None, record_leader: int) -> tuple:
    """`maybeUpdateLastKnownLeader`: a change that empties the ISR records the leader it had
    as the last known leader (unless LastKnownElr already holds just it); one that names a
    leader, or keeps a leader it has, clears LastKnownElr; else it stays."""
    if record_isr == () and st.last_known_elr != (st.leader,):
        return (st.leader,)
    keeps = st.leader != NO_LEADER and record_leader != NO_LEADER
    if (record_leader >= 0 or keeps) and st.last_known_elr:
        return ()
    return tuple(st.last_known_elr)


def elr_change(proto, st, usable, target_isr: tuple, target_replicas: tuple, adding: tuple,
               removing: tuple, unclean: bool, moving: tuple, min_isr: int,
               unclean_shutdown: tuple = ()) -> ElrChange | None:
    """`PartitionChangeBuilder.build` with ELR enabled, in its order: a reassignment that can
    complete does; the target ELR (`target_elr`); the election (`elect_leader`): a leader
    taken from the ELR leads an ISR of itself and leaves the ELR, an unclean one (the last
    known leader, or any usable replica) leads an ISR of itself and clears ELR and
    LastKnownElr (`maybeUpdateRecordElr`); the ISR is the target one even when empty (the ELR
    holds what an empty ISR forgets); the leader epoch moves with a new leader, with a replica
    leaving the assignment, and on an ISR shrink while `kraft_isr_shrink_bumps_epoch`; the
    LastKnownElr (`last_known_elr`). `moving` is the (adding, removing) the partition has
    now; `unclean_shutdown` the brokers whose unclean shutdown the change handles
    (`setUncleanShutdownReplicas`). None: no change (`changeRecordIsNoOp`)."""
    done = completed_reassignment(target_replicas, adding, removing, target_isr)
    if done is not None:
        target_replicas, target_isr = done
        adding = removing = ()
    assigned = tuple(target_replicas) if proto.elr_assigned_replicas_only else None
    target_isr = tuple(target_isr)
    elr = target_elr(st, target_isr, min_isr, unclean_shutdown, assigned)
    new_leader, dirty = elect_leader(st, target_isr, elr, target_replicas, usable, unclean)
    record_leader, record_isr = NO_LEADER_CHANGE, None
    if new_leader != st.leader:
        if new_leader in elr:
            target_isr, elr = (new_leader,), tuple(r for r in elr if r != new_leader)
        record_leader = new_leader
        if dirty:
            record_isr, elr = (new_leader,), ()
    if record_leader == NO_LEADER_CHANGE and any(r not in target_replicas for r in st.replicas):
        record_leader = st.leader  # "Reassignment": the epoch moves
    if record_isr is None and target_isr != tuple(st.isr):
        record_isr = target_isr
    if proto.kraft_isr_shrink_bumps_epoch and record_leader == NO_LEADER_CHANGE \
            and record_isr is not None and any(r not in record_isr for r in st.isr):
        record_leader = st.leader
    lke = last_known_elr(st, record_isr, record_leader)
    replicas = tuple(target_replicas) or tuple(st.replicas)
    if record_leader == NO_LEADER_CHANGE and record_isr is None and elr == tuple(st.elr) \
            and lke == tuple(st.last_known_elr) and replicas == tuple(st.replicas) \
            and (tuple(adding), tuple(removing)) == tuple(moving):
        return None
    bump = record_leader != NO_LEADER_CHANGE
    return ElrChange(st.leader if not bump else record_leader,
                     st.leader_epoch + (1 if bump else 0), st.partition_epoch + 1,
                     tuple(st.isr) if record_isr is None else record_isr, replicas,
                     tuple(adding), tuple(removing), elr, lke)


def clean_shutdown(registered_epoch: int | None, previous_broker_epoch: int) -> bool:
    """`ClusterControlManager.registerBroker` (4.x; the TODO at 3.7.0): a new incarnation's
    registration follows a clean shutdown when its PreviousBrokerEpoch (the epoch the broker
    wrote in its clean-shutdown file, `LogManager.readBrokerEpochFromCleanShutdownFiles`; -1
    when none) is the epoch the controller holds for it; a broker not registered (`None`)
    never did."""
    return registered_epoch is not None and previous_broker_epoch == registered_epoch
