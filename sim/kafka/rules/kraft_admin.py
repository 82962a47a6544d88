"""The KRaft controller's admin decisions: where a new partition's replicas go, which manual
assignments it refuses, whom a preferred election elects (read at 3.3.0, 3.5.0 and 3.7.0, the
same in each: `ReplicationControlManager.createTopic`, `createPartitions`,
`validateManualPartitionAssignment`, `electLeader`; `StripedReplicaPlacer.place`;
`PartitionChangeBuilder.electPreferredLeader`).

Contract: pure functions of plain values (broker ids, replica lists); an error is returned as
the text `"ERROR_NAME: message"` (Kafka's error and message), a success as its value.
"""

from __future__ import annotations

NO_LEADER = -1


def place_replicas(unfenced: tuple, fenced: tuple, partitions: int, rf: int,
                   first: int = 0) -> list | str:
    """`StripedReplicaPlacer.place` for `partitions` partitions of `rf` replicas, numbered from
    `first`, on the brokers the heartbeat manager offers (`usableBrokers`: every registered
    broker not shutting down), `unfenced` and `fenced` in id order. Kafka refuses a replication
    factor below 1, a cluster with no unfenced broker, or one with fewer brokers than `rf`;
    each partition's first replica (its leader) is unfenced, and fenced brokers are used only
    once the unfenced ones are all placed. Kafka stripes over racks from a random start and
    reshuffles after each round; the model rotates: partition p takes the unfenced brokers
    from the (p mod n)-th on, then the fenced ones from the same rotation, so runs stay
    deterministic and the set placed (all unfenced before any fenced) is Kafka's."""
    prefix = f"INVALID_REPLICATION_FACTOR: Unable to replicate the partition {rf} time(s): "
    if rf <= 0:
        return (prefix + f"Invalid replication factor {rf}: the replication factor must be "
                "positive.")
    if not unfenced:
        return prefix + "All brokers are currently fenced."
    total = len(unfenced) + len(fenced)
    if rf > total:
        return (prefix + f"The target replication factor of {rf} cannot be reached because "
                f"only {total} broker(s) are registered.")
    out = []
    for p in range(first, first + partitions):
        ring = [unfenced[(p + i) % len(unfenced)] for i in range(len(unfenced))]
        if fenced:
            ring += [fenced[(p + i) % len(fenced)] for i in range(len(fenced))]
        out.append(ring[:rf])
    return out


def manual_assignment_error(replicas: tuple, registered, rf: int | None) -> str | None:
    """`validateManualPartitionAssignment`: a manual replica list is refused when empty, when it
    names a broker not registered or one twice, or when its size differs from the partitions
    before it (`rf`, None for the first)."""
    bad = "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes "
    if not replicas:
        return bad + "an empty replica list."
    previous = None
    for b in sorted(replicas):  # Kafka walks the ids sorted: the lowest fault is named
        if b not in registered:
            return bad + f"broker {b}, but no such broker is registered."
        if b == previous:
            return bad + f"the broker {b} more than once."
        previous = b
    if rf is not None and len(replicas) != rf:
        return (bad + f"a partition with {len(replicas)} replica(s), but this is not "
                f"consistent with previous partitions, which have {rf} replica(s).")
    return None


def partition_without_active_replica(assignment: list, active) -> int | None:
    """The index of the first partition in `assignment` none of whose replicas is `active`
    (unfenced, not shutting down), or None. `createTopic` refuses such a topic whole
    (INVALID_REPLICA_ASSIGNMENT for a manual assignment, INVALID_REPLICATION_FACTOR for a
    placed one: "fenced or in controlled shutdown", read at 3.9.0-rc3): a partition is never
    created without an ISR member to lead it."""
    return next((i for i, replicas in enumerate(assignment)
                 if not any(r in active for r in replicas)), None)


def preferred_election_leader(replicas: tuple, isr: tuple, leader: int, usable) -> int:
    """`PartitionChangeBuilder.electPreferredLeader` (no ELR): the first replica if it is a
    usable ISR member; else the current leader if it still is one; else the first usable ISR
    member after the first replica; else no leader. Never an unclean election, whatever the
    topic allows."""
    def valid(b: int) -> bool:
        return b in isr and b in usable

    if replicas and valid(replicas[0]):
        return replicas[0]
    if valid(leader):
        return leader
    return next((b for b in replicas[1:] if valid(b)), NO_LEADER)


def create_topic_request_error(manual: bool, num_partitions: int, rf: int) -> str | None:
    """What `createTopic` refuses before placing anything: a manual assignment with a partition
    count or a replication factor other than -1 (INVALID_REQUEST); without one, a replication
    factor or a partition count below -1 or 0 (INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS;
    -1 asks for the default)."""
    if manual and rf != -1:
        return ("INVALID_REQUEST: A manual partition assignment was specified, but "
                "replication factor was not set to -1.")
    if manual and num_partitions != -1:
        return ("INVALID_REQUEST: A manual partition assignment was specified, but "
                "numPartitions was not set to -1.")
    if not manual and (rf < -1 or rf == 0):
        return ("INVALID_REPLICATION_FACTOR: Replication factor must be larger than 0, or -1 "
                "to use the default value.")
    if not manual and (num_partitions < -1 or num_partitions == 0):
        return ("INVALID_PARTITIONS: Number of partitions was set to an invalid non-positive "
                "value.")
    return None
