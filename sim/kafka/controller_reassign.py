"""Partition reassignment in ZooKeeper mode (mixin of `Controller`), as `KafkaController` runs
it (`onPartitionReassignment`, 2.4.0-3.7.0; 2.0.0 the same steps without cancellation).

Contract: `reassign(tp, target)` starts one: the assignment becomes target + original, written
with a new leader epoch and sent to every replica (`updateLeaderEpochAndSendRequest`), unless
the target is in the ISR already, when it completes at once with no such step. It
completes (`complete_reassignment`) as soon as every target replica is in the ISR: checked when
an ISR write lands (the ISR change watch) and on every tick. A broker that starts while a
reassignment names it, or a new controller, resumes it: a new leader epoch again
(`maybeResumeReassignments`), one of a topic queued for deletion too
(`resume_deleted_reassignment`).
`cancel_reassignment` reverts to the original replicas (KAFKA-13972, ref §4 row 7).
"""

from __future__ import annotations

from sim.kafka import errors as E


class ReassignmentOps:
    def reassign(self, tp: str, target: list[int]) -> str | None:
        if not self._can_write():
            return "controller cannot write"
        if self.store.partition(tp) is None:
            return f"no partition {tp} (its topic was deleted)"
        _topic, st = self.store.partition(tp)
        target = tuple(target)
        original = self.store.reassignments.get(tp, (None, st.replicas))[1]
        rs = target + tuple(r for r in st.replicas if r not in target)
        self.store.reassignments[tp] = (target, original)
        if all(r in st.isr for r in target):  # `isReassignmentComplete` already: no A1 step
            self.change(tp, "reassign_start", state_written=False, replicas=rs)
            self.complete_reassignment(tp, target)
            return None
        self.change(tp, "reassign_start", replicas=rs)
        self.flush()
        return None

    def check_reassignments(self, tps=None) -> None:
        """Complete every reassignment (of `tps`, default all) whose target is in the ISR."""
        for tp in sorted(self.store.reassignments if tps is None else
                         [tp for tp in tps if tp in self.store.reassignments]):
            if self.store.partition(tp) is None:
                continue  # its topic is queued for deletion (`resume_deleted_reassignment`)
            target, _original = self.store.reassignments[tp]
            if all(r in self.store.partition(tp)[1].isr for r in target):
                self.complete_reassignment(tp, target)

    def resume_reassignments(self, started: list[int] | None) -> None:
        """`maybeResumeReassignments`, at a broker's startup for the reassignments with a
        started broker among their targets, at a controller's failover for all (`started`
        None): each runs `onPartitionReassignment` again, completing if its target is in the
        ISR, else bumping its leader epoch again, sent with the next flush."""
        for tp in sorted(self.store.reassignments):
            target, _original = self.store.reassignments[tp]
            if started is not None and not any(b in target for b in started):
                continue
            if self.store.partition(tp) is None:
                self.resume_deleted_reassignment(tp, target)
                continue
            if all(r in self.store.partition(tp)[1].isr for r in target):
                self.complete_reassignment(tp, target)
            else:
                self.change(tp, "reassign_resume")

    def complete_reassignment(self, tp: str, target: tuple) -> None:
        """`onPartitionReassignment` once the target is in the ISR: the assignment becomes the
        target (B2, in memory, so what follows goes to target replicas only); a leader outside
        it, or not online, gives way to the reassignment election, else the leader epoch is
        bumped alone (B3, `moveReassignedPartitionLeaderIfRequired`); then each removed replica
        goes `OfflineReplica` (StopReplica, delete false, at the epoch the partition has then;
        out of the ISR unless it is its last member, one write each at a new leader epoch,
        leaderless if it led) and `ReplicaDeletionStarted` (StopReplica, delete true, at the
        final epoch) (B4, B5)."""
        _topic, st = self.store.partition(tp)
        del self.store.reassignments[tp]
        removing = [r for r in st.replicas if r not in target]
        self.change(tp, "reassign_complete", state_written=False, replicas=target)
        if st.leader not in target or not self.replica_online(st.leader, tp):
            self.elect(tp, "reassignment", candidates=list(target))
        else:
            self.change(tp, "reassign_leader_epoch")
        self.flush()
        stops = {}
        for r in removing:
            stops[r] = self._stop_part(tp, delete=False)
            self.remove_from_isr(r, [tp], "reassign_remove")
        self.flush()
        for stop_delete in (False, True):
            for r in removing:
                if r in self.live:
                    self.send_stop_replica(r, (self._stop_part(tp, True) if stop_delete
                                               else stops[r],))

    def cancel_reassignment(self, tp: str) -> str | None:
        """Revert to the original replicas as the ZK controller does (a reassignment back to
        them, `onPartitionReassignment`): `updateCurrentReassignment` stops the adding replicas
        first, at the leader epoch they already have (KAFKA-13972, ref §4 row 7), and only then
        does the reassignment's completion move the leader or bump its epoch
        (`moveReassignedPartitionLeaderIfRequired` -> `updateLeaderEpochAndSendRequest`)."""
        if not self._can_write():
            return "controller cannot write"
        if tp not in self.store.reassignments:
            return "no reassignment in progress"
        if self.store.partition(tp) is None:  # `maybeTriggerPartitionReassignment`
            return f"no partition {tp} (its topic is being deleted)"
        _target, original = self.store.reassignments.pop(tp)
        _topic, st = self.store.partition(tp)
        adding = [r for r in st.replicas if r not in original]
        isr = tuple(r for r in st.isr if r in original)
        if isr != st.isr:
            # an adding replica had joined the ISR: taking it out (OfflineReplica) is a
            # controller-initiated ISR removal, which bumps the leader epoch like any other
            # (ref §1.4 table), before its StopReplica is sent
            self.change(tp, "reassign_cancel_isr", self.protocol.isr_shrink_bumps_epoch, isr=isr)
        stops = {r: self._stop_part(tp, delete=True) for r in adding}
        if st.leader not in original and self.elect(tp, "reassignment_cancel",
                                                    candidates=list(original)):
            self.change(tp, "reassign_cancel", state_written=False, replicas=original)
        else:  # a leader outside `original` no election could move goes, as above
            self.change(tp, "reassign_cancel", replicas=original,
                        leader=st.leader if st.leader in original else E.NO_LEADER)
        self.flush()
        for r in adding:
            if r in self.live:
                self.send_stop_replica(r, (stops[r],))
        return None

