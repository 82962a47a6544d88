"""A broker's log directories and what a failing one does (JBOD, KIP-112, ZooKeeper mode).

Contract (mixin of `Broker`): each broker has `cluster.log_dirs` directories; a new log goes to
the live one holding the fewest logs (`sim.kafka.rules.storage.next_log_dir`). A directory
fails (`fail_log_dir`) at once (the `log_dir_failure` fault) or at its next log deletion,
which then fails with an I/O error (`arm_failing_delete`: `Log.renameDir` inside
`LogManager.asyncDelete`, whose `maybeHandleIOException` puts the directory on the
`LogDirFailureChannel`). `ReplicaManager.handleLogDirFailure` (read at 2.6.0 and 3.7.0) then:
- stops the fetchers of the partitions in it and marks them offline (`HostedPartition.Offline`,
  `markPartitionOffline`): from then on Produce, Fetch, OffsetsForLeaderEpoch, ListOffsets,
  LeaderAndIsr and StopReplica answer KAFKA_STORAGE_ERROR for them (`getPartitionOrError`);
  requests parked on them are not completed early, so an acks=all write waits for its
  timeout (REQUEST_TIMED_OUT) and a Fetch for its max wait;
- drops their logs from the live set (`LogManager.handleLogDirFailure`): no HW checkpoint,
  retention or producer expiry touches them, though their files stay on the failed disk;
- halts the broker if no live directory is left (`Exit.halt`: a crash, without the clean
  shutdown's HW checkpoint or session close), or at once before KIP-112
  (`survives_log_dir_failure`, off before 1.0);
- else writes a LogDirEventNotification to ZooKeeper (`propagateLogDirEvent`), now or, while
  "zk" is out of reach, once it is reachable again; the controller then asks the broker,
  with LeaderAndIsr, which of its replicas are offline (`sim.kafka.controller_log_dirs`).
A directory stays failed until the broker restarts, as replacing the disk and restarting does:
its logs come back then with `data = "kept"`, or are gone (`log_deleted`, reason
`disk_replaced`) with `data = "lost"`, and the controller's LeaderAndIsr recreates them empty.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.rules.storage import (
    OFFLINE,
    get_partition_or_error,
    halts_on_log_dir_failure,
    next_log_dir,
)


class LogDirs:
    def init_log_dirs(self) -> None:
        """The durable side: what a crash keeps (the disks, and which of them failed)."""
        self.log_dir_of: dict[str, int] = {}  # tp -> the directory of its log
        self.failed_dirs: dict[int, str] = {}  # dir -> "lost" | "kept": offline until a restart
        self.offline_logs: dict[str, tuple] = {}  # tp -> (topic_id, log) left on a failed disk
        self.failing_deletes: dict[int, str] = {}  # dir -> data: its next log deletion fails

    def init_offline(self) -> None:
        """The volatile side, reset on a crash."""
        self.offline: set[str] = set()  # partitions hosted in a failed directory
        self.log_dir_event_pending = False  # a notification not yet written to ZooKeeper

    def place_log(self, tp: str) -> None:
        """Record the directory a new log of `tp` goes to (`LogManager.nextLogDirs`)."""
        counts = {d: 0 for d in range(self.cluster.log_dirs) if d not in self.failed_dirs}
        if len(counts) == 1:  # one live directory (the default): nothing to count, and
            self.log_dir_of[tp] = next(iter(counts))  # counting made set-up quadratic
            return
        for other in self.logs:
            d = self.dir_of(other)
            if d in counts:
                counts[d] += 1
        self.log_dir_of[tp] = next_log_dir(counts)

    def dir_of(self, tp: str) -> int:
        """The directory of the log of `tp` (0 for a log placed by no `place_log`)."""
        return self.log_dir_of.get(tp, 0)

    def not_hosted_error(self, tp: str) -> int:
        """The error for a partition with no online replica here (`getPartitionOrError`)."""
        hosted = OFFLINE if tp in self.offline else "none"
        return get_partition_or_error(hosted, tp in self.metadata)

    def on_failed_disk(self, tp: str) -> bool:
        """Whether `tp` is offline, or its only log is on a failed disk: a LeaderAndIsr for
        it answers KAFKA_STORAGE_ERROR (`HostedPartition.Offline`; for a replica whose deletion
        failed, `LogManager.getOrCreateLog` refuses to create a log while directories are
        offline)."""
        return tp in self.offline or tp in self.offline_logs

    def mark_offline(self, tp: str) -> None:
        """`ReplicaManager.markPartitionOffline`, as a test calls it: `tp`'s replica is offline
        (`HostedPartition.Offline`) and its log left on a failed disk, its directory not."""
        self.offline_logs[tp] = self.logs.pop(tp)
        self.offline.add(tp)

    # -- a directory fails ---------------------------------------------------------------
    def fail_log_dir(self, d: int, data: str = "lost") -> str | None:
        """`ReplicaManager.handleLogDirFailure(d)`; a reason when there is nothing to do."""
        if d in self.failed_dirs:
            return f"log dir {d} of {self.name} is already offline"
        self.failed_dirs[d] = data
        self.failing_deletes.pop(d, None)
        in_dir = sorted(tp for tp in self.logs if self.dir_of(tp) == d)
        offline = [tp for tp in in_dir if tp in self.partitions]
        for tp in in_dir:
            self.offline_logs[tp] = self.logs.pop(tp)
        for tp in offline:
            self.remove_from_fetchers(tp)
            self.truncating.discard(tp)
            del self.partitions[tp]
            self.offline.add(tp)
            self.touch_sessions(tp)  # a session's next answer carries KAFKA_STORAGE_ERROR
        halt = halts_on_log_dir_failure(self.protocol, self.cluster.log_dirs - len(self.failed_dirs))
        self.emit(V.LOG_DIR_FAILURE, {"dir": d, "tps": offline, "halt": halt})
        if halt:
            self.exit_process()
        else:
            self.log_dir_event_pending = True
            self.propagate_log_dir_event()
        return None

    def arm_failing_delete(self, d: int, data: str = "lost") -> str | None:
        """The next log deletion in directory `d` fails with an I/O error."""
        if d in self.failed_dirs:
            return f"log dir {d} of {self.name} is already offline"
        self.failing_deletes[d] = data
        return None

    def delete_fails(self, tp: str) -> bool:
        """Whether deleting the log of `tp` now fails (its directory is armed to)."""
        return bool(self.failing_deletes) and tp in self.logs \
            and self.dir_of(tp) in self.failing_deletes

    def fail_delete(self, tp: str) -> None:
        """`LogManager.asyncDelete` fails renaming the log of `tp`: the log has left the live
        set, its files stay on the disk, and the directory goes offline."""
        d = self.dir_of(tp)
        data = self.failing_deletes.pop(d)
        self.offline_logs[tp] = self.logs.pop(tp)
        self.fail_log_dir(d, data)

    def propagate_log_dir_event(self) -> None:
        """Write the LogDirEventNotification once "zk" can be reached."""
        if self.log_dir_event_pending and self.can_reach("zk"):
            self.store.log_dir_events.append(self.id)
            self.log_dir_event_pending = False

    # -- restart -------------------------------------------------------------------------
    def restore_log_dirs(self) -> None:
        """The failed directories are back: their logs too with `data = "kept"`; with
        "lost" (a new disk) they are gone."""
        for tp in sorted(self.offline_logs):
            topic_id, log = self.offline_logs.pop(tp)
            if self.failed_dirs.get(self.dir_of(tp)) == "kept" and tp not in self.logs:
                self.logs[tp] = (topic_id, log)
                continue
            if tp not in self.logs:
                self.log_dir_of.pop(tp, None)
            self.emit(V.LOG_DELETED, {"tp": tp, "topic_id": topic_id, "reason": "disk_replaced"})
        self.failed_dirs.clear()
        self.failing_deletes.clear()
