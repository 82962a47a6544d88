"""The state a replay of the metadata log builds (Kafka's `MetadataImage`): brokers with their
epochs and fencing, topics with their ids, partitions with their state.

Contract: `replay(offset, record)` applies one `MetadataRecord` as `ClusterControlManager`,
`ReplicationControlManager` and the brokers' `MetadataDelta` do, and returns the partitions it
changed (or removed) and whether the broker set changed. The active controller replays what it
appends; a broker replays what it fetched and found committed, in log order. Plain data: no
actor, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.kafka import kraft_messages as K
from sim.kafka.messages import PartitionState

NOT_MOVING = ((), ())  # (adding, removing) of a partition no reassignment is moving


@dataclass
class BrokerRegistration:
    epoch: int  # RegisterBrokerRecord.BrokerEpoch (by default the record's offset)
    fenced: bool
    in_controlled_shutdown: bool = False  # BrokerRegistrationChangeRecord.InControlledShutdown
    incarnation: int = 0  # RegisterBrokerRecord.IncarnationId: the broker process that registered
    registered_at: int = -1  # the RegisterBrokerRecord's offset (`registerBrokerRecordOffset`)


@dataclass
class MetadataImage:
    brokers: dict = field(default_factory=dict)  # id -> BrokerRegistration
    topics: dict = field(default_factory=dict)  # name -> topic id
    named: set = field(default_factory=set)  # every topic name a TopicRecord ever gave
    parts: dict = field(default_factory=dict)  # tp -> PartitionState
    # tp -> (adding, removing) of a reassignment in progress (PartitionRecord's
    # AddingReplicas / RemovingReplicas)
    reassigning: dict = field(default_factory=dict)
    next_producer_id: int = 0  # the first id of the next producer id block (ProducerIdsRecord)

    def moving(self, tp: str) -> tuple:
        """The (adding, removing) replicas of `tp`'s reassignment in progress (NOT_MOVING: none)."""
        return self.reassigning.get(tp, NOT_MOVING)

    def usable(self) -> tuple:
        """The registered, unfenced brokers not in controlled shutdown, in id order: those that
        may lead or join an ISR (KIP-841, `ReplicationControlManager.isAcceptableLeader`)."""
        return tuple(sorted(b for b, r in self.brokers.items()
                            if not r.fenced and not r.in_controlled_shutdown))

    def has_leaderships(self, broker: int) -> bool:
        """Does `broker` lead a partition (`BrokerToIsrs.hasLeaderships`)?"""
        return any(st.leader == broker for st in self.parts.values())

    def tps_of(self, topic: str) -> list[str]:
        return sorted((tp for tp in self.parts if tp.rpartition("-")[0] == topic),
                      key=lambda tp: int(tp.rpartition("-")[2]))

    def replay(self, offset: int, record: K.MetadataRecord) -> tuple[list[str], bool]:
        """Apply `record` (at `offset`); returns (changed or removed partitions, whether the
        broker set changed)."""
        get = record.get
        if record.kind == K.REGISTER_BROKER:
            # `ClusterControlManager.replay(RegisterBrokerRecord, offset)`: the record's epoch
            # (the offset of the first record its registration wrote), and its own offset
            self.brokers[get("broker")] = BrokerRegistration(
                get("broker_epoch", offset), get("fenced"),
                get("in_controlled_shutdown", False), get("incarnation", 0), offset)
            return [], True
        if record.kind == K.BROKER_CHANGE:
            reg = self.brokers.get(get("broker"))
            if reg is None or reg.epoch != get("broker_epoch"):
                return [], False  # a change for an older incarnation
            reg.fenced = get("fenced")
            reg.in_controlled_shutdown = get("in_controlled_shutdown", reg.in_controlled_shutdown)
            return [], True
        if record.kind == K.UNREGISTER_BROKER:
            # `ClusterControlManager.replay(UnregisterBrokerRecord)`: the registration of that
            # epoch is gone (Kafka throws on any other: the model's writer never writes one)
            reg = self.brokers.get(get("broker"))
            if reg is None or reg.epoch != get("broker_epoch"):
                return [], False
            del self.brokers[get("broker")]
            return [], True
        if record.kind == K.TOPIC:
            self.topics[get("name")] = get("topic_id")
            self.named.add(get("name"))
            return [], False
        if record.kind in (K.PARTITION, K.PARTITION_CHANGE):
            tp = get("tp")
            old = self.parts.get(tp)
            replicas = get("replicas", old.replicas if old else ())
            self.parts[tp] = PartitionState(tp, get("topic_id"), get("leader"),
                                            get("leader_epoch"), get("partition_epoch"),
                                            get("isr"), replicas, elr=get("elr", ()),
                                            last_known_elr=get("last_known_elr", ()))
            moving = (tuple(get("adding", ())), tuple(get("removing", ())))
            if moving == NOT_MOVING:
                self.reassigning.pop(tp, None)
            else:
                self.reassigning[tp] = moving
            return [tp], False
        if record.kind == K.PRODUCER_IDS:
            self.next_producer_id = get("next_producer_id")
            return [], False
        if record.kind == K.REMOVE_TOPIC:
            name = next((n for n, i in self.topics.items() if i == get("topic_id")), None)
            if name is None:
                return [], False
            del self.topics[name]
            gone = self.tps_of(name)
            for tp in gone:
                del self.parts[tp]
                self.reassigning.pop(tp, None)
            return gone, False
        return [], False


def partition_record(kind: str, st: PartitionState, moving: tuple = NOT_MOVING,
                     reason: str = "") -> K.MetadataRecord:
    """A PartitionRecord or PartitionChangeRecord carrying `st` whole, with the adding and
    removing replicas `moving` of a reassignment in progress (the model writes every field;
    Kafka's change record leaves unchanged ones out; ELR and LastKnownElr, KIP-966's, only
    when not empty, so that a record without them reads as before). `reason`, the model's
    own, names the change in the trace's `partition_state` (default: the record's kind)."""
    extra = {"adding": moving[0], "removing": moving[1]} if moving != NOT_MOVING else {}
    if st.elr:
        extra["elr"] = tuple(st.elr)
    if st.last_known_elr:
        extra["last_known_elr"] = tuple(st.last_known_elr)
    if reason:
        extra["reason"] = reason
    return K.MetadataRecord.of(kind, tp=st.tp, topic_id=st.topic_id, leader=st.leader,
                               leader_epoch=st.leader_epoch, partition_epoch=st.partition_epoch,
                               isr=tuple(st.isr), replicas=tuple(st.replicas), **extra)
