"""What a probe can check of a leader's ISR against its replicas and min.insync.replicas: the
metrics' predicates of Kafka's `Partition` (read at 2.4.0 and 3.7.0).

Contract: `ISR` holds the broker observables `under_replicated:tp` (`isUnderReplicated`: the
node leads the partition and its ISR is smaller than its replicas), `under_min_isr:tp`
(`isUnderMinIsr`: it leads it and its ISR is below min.insync.replicas) and `at_min_isr:tp`
(`isAtMinIsr`: it leads it and its ISR is exactly that many). min.insync.replicas is the
leader's (`IsrManager.min_isr`: from 3.7, KAFKA-15583's `effectiveMinIsr`, at most the
replicas). The ISR is the committed one (`partitionState.isr`), not the maximal ISR of an
AlterPartition in flight. Each is false when the node holds no replica of the partition.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import Observable, Seen


def _leader_isr(test: Callable) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        p = seen.node.partitions.get(tp)
        if p is None:
            return False  # no replica, so no leader's log (`leaderLogIfLocal` empty)
        return p.is_leader and test(len(p.isr), len(p.replicas), seen.node.min_isr(p))
    return read


ISR = {
    "under_replicated": Observable(True, _leader_isr(lambda isr, replicas, _m: isr < replicas),
                                   "whether the node leads the partition with an ISR smaller "
                                   "than its replicas (`isUnderReplicated`)"),
    "under_min_isr": Observable(True, _leader_isr(lambda isr, _r, min_isr: isr < min_isr),
                                "whether it leads it with an ISR below min.insync.replicas "
                                "(`isUnderMinIsr`)"),
    "at_min_isr": Observable(True, _leader_isr(lambda isr, _r, min_isr: isr == min_isr),
                             "whether it leads it with an ISR of exactly min.insync.replicas "
                             "(`isAtMinIsr`)"),
}
