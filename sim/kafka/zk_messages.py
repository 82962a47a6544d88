"""ZooKeeper's notifications to a ZooKeeper-mode controller, as a probe delivers them.

Contract: immutable records with `brief()`, as `sim.kafka.messages`' bodies. The model's
controller reads ZooKeeper's state on its own; these let a probe deliver one notification
(`KafkaController.process*`) at an instant of its choosing, and the events about /controller
itself (`ControllerChange`, `Reelect`, `Expire`).
"""

from __future__ import annotations

from typing import NamedTuple


class BrokerChange(NamedTuple):
    """ZooKeeper's notification that /brokers/ids changed: the controller reads the
    registrations anew (`processBrokerChange`). The model's controller reads them every tick
    anyway; a probe delivers the notification to have them read at once."""
    brokers: tuple  # the registered broker ids after the change, for the trace

    def brief(self) -> dict:
        return {"brokers": list(self.brokers)}


class TopicChange(NamedTuple):
    """ZooKeeper's notification that a topic was created (`processTopicChange`), with the
    replica assignment the admin wrote (carried here: the model's store holds a topic only
    with its partition states, which the controller writes)."""
    topic: str
    assignment: tuple  # one tuple of broker ids per partition, in partition order

    def brief(self) -> dict:
        return {"topic": self.topic, "assignment": [list(a) for a in self.assignment]}


class PartitionModifications(NamedTuple):
    """ZooKeeper's notification that a topic's znode changed (`processPartitionModifications`):
    the topic's whole replica assignment as now written, its existing partitions and any
    added (`AdminZkClient.addPartitions` writes them all)."""
    topic: str
    assignment: tuple  # one tuple of broker ids per partition, in partition order

    def brief(self) -> dict:
        return {"topic": self.topic, "assignment": [list(a) for a in self.assignment]}


class PreferredReplicaElection(NamedTuple):
    """ZooKeeper's notification that /admin/preferred_replica_election names partitions
    (`processReplicaLeaderElection`): the controller moves each to its preferred replica."""
    partitions: tuple  # tps

    def brief(self) -> dict:
        return {"partitions": list(self.partitions)}


class PartitionReassignment(NamedTuple):
    """ZooKeeper's notification that /admin/reassign_partitions was written
    (`processZkPartitionReassignment`): each partition's target replicas."""
    reassignments: tuple  # (tp, tuple of target broker ids)

    def brief(self) -> dict:
        return {"reassignments": [[tp, list(t)] for tp, t in self.reassignments]}


class TopicDeletion(NamedTuple):
    """ZooKeeper's notification that /admin/delete_topics changed (`processTopicDeletion`): the
    topics it names, which the controller queues for deletion (those it does not know are
    ignored)."""
    topics: tuple

    def brief(self) -> dict:
        return {"topics": list(self.topics)}


class ControllerChange(NamedTuple):
    """The /controller watch fired on its creation or a data change (`ControllerChangeHandler`:
    `ControllerChange`): the controller reads /controller again (`maybeResign`)."""
    controller: str  # who /controller names as the event is delivered ("none": no one)

    def brief(self) -> dict:
        return {"controller": self.controller}


class Reelect(NamedTuple):
    """The /controller watch fired on its deletion (`Reelect`): the controller reads /controller
    again, then stands for election (`maybeResign`, `elect`)."""
    controller: str

    def brief(self) -> dict:
        return {"controller": self.controller}


class Expire(NamedTuple):
    """The controller's ZooKeeper session expired (`Expire`, from the session's state handler):
    it resigns (`processExpire`); ZooKeeper deleted its ephemeral /controller."""

    def brief(self) -> dict:
        return {}
