"""A ZooKeeper-mode controller's partition leader elections: who leads, and with which ISR.

Contract: pure functions of plain values. The four `*_election` functions are Kafka's
`PartitionLeaderElectionAlgorithms` (1.1.0-3.7.0; 0.10.2-1.0's leader selectors,
`OfflinePartitionLeaderSelector` and its siblings, choose the same replica), each returning
the new leader or None: the election fails and nothing is written. `leader_for_offline` and
`leader_for_controlled_shutdown` add the ISR the new state carries (`Election.leaderForOffline`,
`leaderForControlledShutdown` at 3.7.0); a reassignment's and a preferred election's keep the
ISR as it is (`leaderAndIsr.newLeader`). `assignment` is in assignment order; `live` holds the
replicas the controller counts online for the election (for all but a controlled shutdown,
`isReplicaOnline`: a live broker not shutting down, the replica not in a failed log
directory; for a controlled shutdown also those shutting down).
"""

from __future__ import annotations


def offline_partition_leader_election(assignment, isr, live, unclean: bool) -> int | None:
    """The first replica in assignment order that is live and in the ISR; failing that, with
    unclean leader election, the first live one."""
    clean = next((r for r in assignment if r in live and r in isr), None)
    if clean is not None or not unclean:
        return clean
    return next((r for r in assignment if r in live), None)


def reassign_partition_leader_election(reassignment, isr, live) -> int | None:
    """The first target replica that is live and in the ISR; never an unclean one."""
    return next((r for r in reassignment if r in live and r in isr), None)


def preferred_replica_partition_leader_election(assignment, isr, live) -> int | None:
    """The preferred replica (the assignment's first), if it is live and in the ISR."""
    return assignment[0] if assignment and assignment[0] in live and assignment[0] in isr \
        else None


def controlled_shutdown_partition_leader_election(assignment, isr, live,
                                                  shutting_down) -> int | None:
    """The first replica in assignment order that is live, in the ISR and not shutting down."""
    return next((r for r in assignment
                 if r in live and r in isr and r not in shutting_down), None)


def leader_for_offline(assignment, isr, live, unclean: bool) -> tuple[int, tuple] | None:
    """(leader, ISR) of a new or offline partition's election: a leader from the ISR leads the
    ISR's live members; an unclean one leads an ISR of itself."""
    leader = offline_partition_leader_election(assignment, isr, live, unclean)
    if leader is None:
        return None
    return leader, (tuple(r for r in isr if r in live) if leader in isr else (leader,))


def leader_for_controlled_shutdown(assignment, isr, live,
                                   shutting_down) -> tuple[int, tuple] | None:
    """(leader, ISR) when the leader's broker shuts down: the ISR loses every broker that is
    shutting down, and keeps the rest (live or not)."""
    leader = controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down)
    if leader is None:
        return None
    return leader, tuple(r for r in isr if r not in shutting_down)


def auto_rebalance_elections(partitions, imbalance_percentage: int, reassigning: bool,
                             during_reassignment: bool) -> list[list[str]]:
    """`KafkaController.checkAndTriggerAutoLeaderRebalance` (0.11.0-3.7.0): which partitions
    one automatic rebalance elects their preferred replica for, one list per preferred broker
    (each an `onReplicaElection`), brokers in id order. `partitions`: (tp, assignment, leader,
    isr, live) of every partition whose topic is not queued for deletion, `live` as for a
    preferred election. A broker's partitions (those it is the preferred replica of) are
    imbalanced when the share it does not lead, leaderless ones included, is above
    `imbalance_percentage`; then each of them whose preferred replica can lead
    (`canPreferredReplicaBeLeader`: live and in the ISR) is elected. Before KAFKA-10149
    (`during_reassignment` False, up to 3.3) none is while any partition is `reassigning`;
    up to 2.5 the filter asked only that the preferred broker be online, and the election then
    failed on a preferred replica outside the ISR: the same partitions are elected."""
    by_broker: dict[int, list] = {}
    for part in partitions:
        if part[1]:
            by_broker.setdefault(part[1][0], []).append(part)
    out = []
    for broker in sorted(by_broker):
        parts = by_broker[broker]
        off = [p for p in parts if p[2] != broker]
        if len(off) * 100 <= imbalance_percentage * len(parts):
            continue  # `imbalanceRatio > leaderImbalancePerBrokerPercentage / 100` fails
        if reassigning and not during_reassignment:
            continue
        chosen = [tp for tp, assignment, _leader, isr, live in off
                  if preferred_replica_partition_leader_election(assignment, isr, live)
                  is not None]
        if chosen:
            out.append(chosen)
    return out
