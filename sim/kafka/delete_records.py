"""A broker's DeleteRecords (KIP-107): move a partition's log start on its leader, and answer
once every live replica's log start has followed, or at the request's timeout.

Contract (Kafka 3.7.0, `KafkaApis.handleDeleteRecordsRequest`, `ReplicaManager.deleteRecords`,
`DelayedDeleteRecords`): a partition the metadata cache lacks is UNKNOWN_TOPIC_OR_PARTITION;
one not hosted here NOT_LEADER_OR_FOLLOWER (KAFKA_STORAGE_ERROR offline); then
`rules.delete_records`. When every accepted partition's low watermark already reaches its
offset the answer goes at once; else the request waits in purgatory, each waiting partition
REQUEST_TIMED_OUT with the low watermark it had until it completes. A waiting partition is
tried again when a follower's Fetch brings a new log start (`updateFollowerFetchState`) and
then completes with its low watermark, or with the error of a replica that no longer leads;
nothing else wakes it (a leadership change completes produces and fetches only), so that
one times out.
"""

from __future__ import annotations

from sim.core.deadlines import Deadlines
from sim.kafka import errors as E
from sim.kafka.admin_messages import DeleteRecordsPartitionResult as Result
from sim.kafka.admin_messages import DeleteRecordsResponse
from sim.kafka.rules.delete_records import (
    delete_records_on_leader,
    delete_records_pending,
    low_watermark,
)


class DeleteRecordsHandler:
    def init_delete_records(self) -> None:
        # (src, corr) -> (src, corr, {tp: [offset asked, Result, waiting]}) in request order
        self.delete_waiters: dict[tuple, tuple] = {}
        self.delete_waiters_by_tp: dict[str, list] = {}
        self.delete_deadlines = Deadlines(self, "delete_records_timeout")

    def on_delete_records(self, msg) -> None:
        req = msg.body
        status = {}
        for part in req.partitions:
            status[part.tp] = self._delete_on_local_log(part.tp, part.offset)
        if not any(waiting for _, _, waiting in status.values()):
            self._answer_delete(msg.src, req.corr, status)
            return
        key = (msg.src, req.corr)
        self.delete_waiters[key] = (msg.src, req.corr, status)
        for tp, (_, _, waiting) in status.items():
            if waiting:
                self.delete_waiters_by_tp.setdefault(tp, []).append(key)
        self.delete_deadlines.add(key, self.now_us + req.timeout_us)

    def _delete_on_local_log(self, tp: str, offset: int) -> list:
        """[offset asked, the partition's result so far, whether it waits]."""
        if tp not in self.metadata:
            return [offset, Result(tp, E.UNKNOWN_TOPIC_OR_PARTITION), False]
        p = self.partitions.get(tp)
        if p is None:
            return [offset, Result(tp, self.not_hosted_error(tp)), False]
        err, requested = delete_records_on_leader(p.is_leader, offset, p.log.hw)
        if err:
            return [offset, Result(tp, err), False]
        self.raise_log_start(tp, p.topic_id, p.log, requested)
        lw = self._low_watermark(p)
        if delete_records_pending(lw, requested):
            return [requested, Result(tp, E.REQUEST_TIMED_OUT, lw), True]
        return [requested, Result(tp, E.NONE, lw), False]

    def _low_watermark(self, p) -> int:
        alive = self.alive_brokers
        return low_watermark(p.log.log_start_offset,
                             ((r in alive, f.log_start) for r, f in sorted(p.followers.items())))

    def check_delete_waiters(self, tp: str) -> None:
        """`DelayedDeleteRecords.tryComplete` for the requests waiting on `tp`."""
        keys = self.delete_waiters_by_tp.get(tp)
        if not keys:
            return
        p = self.partitions.get(tp)
        for key in list(keys):
            waiter = self.delete_waiters.get(key)
            if waiter is None:
                keys.remove(key)
                continue
            entry = waiter[2][tp]
            if p is None or not p.is_leader:
                err = E.NOT_LEADER_OR_FOLLOWER if p is not None else \
                    E.KAFKA_STORAGE_ERROR if tp in self.offline else E.UNKNOWN_TOPIC_OR_PARTITION
                entry[1:] = [Result(tp, err), False]
            else:
                lw = self._low_watermark(p)
                if not delete_records_pending(lw, entry[0]):
                    entry[1:] = [Result(tp, E.NONE, lw), False]
            if not entry[2]:
                keys.remove(key)
                if not any(waiting for _, _, waiting in waiter[2].values()):
                    self._finish_delete(key)

    def on_delete_records_timeout(self) -> None:
        for key in self.delete_deadlines.expired():
            if key in self.delete_waiters:
                self._finish_delete(key)

    def _finish_delete(self, key) -> None:
        src, corr, status = self.delete_waiters.pop(key)
        self.delete_deadlines.cancel(key)
        for tp in status:
            keys = self.delete_waiters_by_tp.get(tp)
            if keys and key in keys:
                keys.remove(key)
        self._answer_delete(src, corr, status)

    def _answer_delete(self, src: str, corr: int, status: dict) -> None:
        self.send(src, "DeleteRecordsResponse",
                  DeleteRecordsResponse(corr, tuple(result for _, result, _ in status.values())))
