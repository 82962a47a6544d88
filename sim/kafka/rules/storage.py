"""A broker's log directories: where a new log goes, what a failed directory takes with it.

Contract: pure functions of plain values, read at 2.6.0 and 3.7.0 (ZooKeeper mode):
- `get_partition_or_error` is `ReplicaManager.getPartitionOrError`: a partition hosted online
  is served, one in an offline log directory answers KAFKA_STORAGE_ERROR, one not hosted
  NOT_LEADER_OR_FOLLOWER when the metadata cache knows it, else UNKNOWN_TOPIC_OR_PARTITION;
- `next_log_dir` is `LogManager.nextLogDirs`: a new log goes to the live directory holding the
  fewest logs (Kafka breaks ties by its map's order, the model by the lower index);
- `halts_on_log_dir_failure` is `LogManager.handleLogDirFailure`: a broker left with no live
  log directory halts (`Exit.halt`, no shutdown hooks: as a crash, its ZooKeeper session left
  to expire); with one left it goes on serving the partitions of the others. Before KIP-112
  (1.0, `survives_log_dir_failure`) any I/O error halted it ("Halting due to unrecoverable
  I/O error", `ReplicaManager.appendToLocalLog` at 0.11.0). The model halts such a broker
  when the directory fails; 0.11 first answered a request whose own I/O failed with an error
  (a failed deletion: the StopReplica fails as a whole) and halted at its next write there.
"""

from __future__ import annotations

from sim.kafka import errors as E

ONLINE, OFFLINE, NOT_HOSTED = "online", "offline", "none"  # HostedPartition


def get_partition_or_error(hosted: str, in_metadata_cache: bool) -> int:
    """`ReplicaManager.getPartitionOrError` for a partition in state `hosted`."""
    if hosted == ONLINE:
        return E.NONE
    if hosted == OFFLINE:
        return E.KAFKA_STORAGE_ERROR
    # not hosted: this broker is no longer a replica (a reassignment deleted it), or never was
    return E.NOT_LEADER_OR_FOLLOWER if in_metadata_cache else E.UNKNOWN_TOPIC_OR_PARTITION


def epoch_lookup_not_hosted_error(error: int, reads_metadata_cache: bool) -> int:
    """`ReplicaManager.lastOffsetForLeaderEpoch` for a partition this broker does not host:
    from 2.1 (KIP-320, switch `fetch_epoch_check`) as `getPartitionOrError` (`error`);
    0.11-2.0 read no metadata cache there, so a partition it knows of but does not host was
    UNKNOWN_TOPIC_OR_PARTITION too."""
    if error == E.NOT_LEADER_OR_FOLLOWER and not reads_metadata_cache:
        return E.UNKNOWN_TOPIC_OR_PARTITION
    return error


def next_log_dir(logs_per_live_dir: dict[int, int]) -> int:
    """`LogManager.nextLogDirs`: the live directory (index -> logs it holds) with the fewest
    logs, the lower index on a tie."""
    return min(sorted(logs_per_live_dir), key=lambda d: logs_per_live_dir[d])


def halts_on_log_dir_failure(proto, live_dirs_left: int) -> bool:
    """`LogManager.handleLogDirFailure`: "Shutdown broker because all log dirs ... have
    failed" once none is left; before KIP-112 at the first failure."""
    return live_dirs_left == 0 or not proto.survives_log_dir_failure
