"""The operator's actions on a KRaft controller: leader moves, and the ones not modelled yet.

Contract (mixin of `KraftController`): each method is what a fault action of
`sim.kafka.faults.admin` / `nodes` calls on the active controller, and returns an outcome for
the trace (None: done). `move_leader` and `preferred_election` write a PartitionChangeRecord
electing the replica asked for (`ReplicationControlManager.electLeaders`, `PartitionChangeBuilder`
with a target leader); the others answer that KRaft mode does not model them, and change
nothing.
"""

from __future__ import annotations

from sim.kafka import kraft_messages as K
from sim.kafka.metadata_image import partition_record

NOT_MODELLED = "not modelled in KRaft mode: nothing done"


class KraftAdmin:
    def move_leader(self, tp: str, to: str | int = "next") -> str | None:
        st = self.image.parts.get(tp)
        if st is None:
            return f"no partition {tp}"
        usable = self.image.usable()
        order = [r for r in st.replicas if r in st.isr and r in usable and r != st.leader]
        if to == "next":
            if not order:
                return "no other live ISR replica"
            target = ([r for r in order if r > st.leader] or order)[0]
        else:
            target = int(str(to).lstrip("b"))
            if target not in order:
                return f"b{target} is not another live ISR replica"
        self._write(partition_record(K.PARTITION_CHANGE, st._replace(
            leader=target, leader_epoch=st.leader_epoch + 1,
            partition_epoch=st.partition_epoch + 1)))
        return None

    def preferred_election(self, tps: list[str]) -> str | None:
        """Elect each partition's first replica where it is a live ISR member and not leading."""
        usable = self.image.usable()
        for tp in tps:
            st = self.image.parts.get(tp)
            if st is not None and st.replicas and st.leader != st.replicas[0] \
                    and st.replicas[0] in st.isr and st.replicas[0] in usable:
                self.move_leader(tp, st.replicas[0])
        return None

    def move_all_leaders(self, broker: int) -> str:
        return NOT_MODELLED

    def reassign(self, tp: str, replicas: list) -> str:
        return NOT_MODELLED

    def cancel_reassignment(self, tp: str) -> str:
        return NOT_MODELLED

    def delete_topic(self, topic: str) -> str:
        return NOT_MODELLED

    def create_topic(self, *args, **kwargs) -> str:
        return NOT_MODELLED

    def send_update_metadata(self, tps: list) -> None:
        """No UpdateMetadata in KRaft: a topic's format change reaches brokers otherwise."""
