"""What a probe can check on a controller under test (`sim.kafka.probe.observe` for the others).

Contract: `CONTROLLER` maps each KRaft-controller-only check name to its `Observable`: a field
of the controller's answer to the step's sender (`answer.<field>`, no argument), a partition's
state (with KIP-966's ELR and LastKnownElr), its reassignment in progress or a broker's
registration in the controller's metadata image, an admin answer's error per topic or partition
(`result`), and the types of the records it appended to the metadata log during the step
(`records`). `ZK_CONTROLLER` is the same for a ZooKeeper-mode controller: its answer, a
partition's state as ZooKeeper holds it (the controller's only copy in the model), the brokers
it counts live (with their broker epochs) or shutting down, and what the UpdateMetadata it sent
a broker during the step says: the live brokers, and a partition's leader, ISR, replicas and
offline replicas; and what the LeaderAndIsr and StopReplica it sent a broker during the step
say of a partition; whether it is active, what /controller and /controller_epoch hold, and the
controller epochs its control requests carried; and the topics queued for deletion, those
halted, and each of their replicas' state in the deletion.
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import NONE, Seen
from sim.kafka.probe.observable import Observable as Obs

ANSWER = ("error", "leader_epoch", "partition_epoch", "isr", "broker_epoch", "fenced",
          "should_shutdown", "is_caught_up", "start", "length")


def _answer(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, _arg: str) -> Any:
        value = getattr(seen.answer, name, NONE) if seen.answer is not None else NONE
        return list(value) if isinstance(value, tuple) else value
    return read


def _partition(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, tp: str) -> Any:
        st = seen.node.image.parts.get(tp)
        if st is None:
            return NONE
        value = getattr(st, name)
        return list(value) if isinstance(value, tuple) else value
    return read


def _broker(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, broker: str) -> Any:
        reg = seen.node.image.brokers.get(int(broker)) if broker.isdigit() else None
        return NONE if reg is None else getattr(reg, name)
    return read


def _session(seen: Seen, broker: str, table: str, unit: int) -> Any:
    """A broker's entry in the active controller's heartbeat manager (`table`), / `unit`."""
    value = getattr(seen.node, table).get(int(broker)) if broker.isdigit() else None
    return NONE if value is None else value // unit


def _next_check(seen: Seen, _arg: str) -> Any:
    contacts = [contact for contact, _ in seen.node.unfenced_order()]
    if not contacts:
        return NONE
    return (min(contacts) + seen.node.cluster.broker_session_timeout_ms * 1000) // 1000


def _session_valid(seen: Seen, broker: str) -> bool:
    reg = seen.node.image.brokers.get(int(broker)) if broker.isdigit() else None
    return reg is not None and not reg.fenced and seen.node._heard_within_session(int(broker))


def _records(seen: Seen, _arg: str) -> list:
    return [ev["record"]["kind"] for ev in seen.events if ev["kind"] == "metadata_append"]


def _result(seen: Seen, name: str) -> Any:
    results = getattr(seen.answer, "results", None)
    return NONE if results is None else results.get(name, NONE)


CONTROLLER = {
    "answered": Obs(False, lambda s, a: s.answer is not None, "whether the node answered the step"),
    "error": Obs(False, _answer("error"), "the answer's error (the same as answer.error)", True),
    **{f"answer.{name}": Obs(False, _answer(name), f"the answer's {name}", name == "error")
       for name in ANSWER},
    "leader": Obs(True, _partition("leader"), "the partition's leader in the controller's image"),
    "leader_epoch": Obs(True, _partition("leader_epoch"), "its leader epoch"),
    "partition_epoch": Obs(True, _partition("partition_epoch"), "its partition epoch"),
    "isr": Obs(True, _partition("isr"), "its ISR"),
    "replicas": Obs(True, _partition("replicas"), "its replicas"),
    "elr": Obs(True, _partition("elr"), "its eligible leader replicas (KIP-966; [] none)"),
    "last_known_elr": Obs(True, _partition("last_known_elr"), "its LastKnownElr: the last "
                          "known leader, kept when the ISR empties (KIP-966; [] none)"),
    "fenced": Obs(True, _broker("fenced"), "whether the broker (arg: its id) is fenced"),
    "broker_epoch": Obs(True, _broker("epoch"), "the broker's epoch (its registration's offset)"),
    "in_controlled_shutdown": Obs(True, _broker("in_controlled_shutdown"),
                                  "whether the broker is in controlled shutdown"),
    "register_offset": Obs(True, _broker("registered_at"), "the offset of the broker's "
                           "RegisterBrokerRecord (`registerBrokerRecordOffset`)"),
    "last_contact_ms": Obs(True, lambda s, b: _session(s, b, "heartbeats", 1000), "when the "
                           "controller's heartbeat manager last heard from the broker (ms)"),
    "session_offset": Obs(True, lambda s, b: _session(s, b, "heartbeat_offsets", 1),
                          "the metadata offset the heartbeat manager holds for the broker"),
    "session_valid": Obs(True, _session_valid, "whether the broker has a valid session "
                         "(`hasValidSession`: registered, unfenced, heard from in time)"),
    "next_check_ms": Obs(False, _next_check, "when the first unfenced broker's session runs "
                         "out (`BrokerHeartbeatManager.nextCheckTimeNs`, ms; none: no unfenced)"),
    "unfenced_order": Obs(False, lambda s, a: [b for _, b in s.node.unfenced_order()],
                          "the unfenced brokers by last contact (`BrokerHeartbeatManager"
                          ".unfenced()`)"),
    "adding_replicas": Obs(True, lambda s, tp: list(s.node.image.moving(tp)[0]), "the replicas "
                           "the partition's reassignment in progress is adding ([] none)"),
    "removing_replicas": Obs(True, lambda s, tp: list(s.node.image.moving(tp)[1]), "the "
                             "replicas it is removing ([] none)"),
    "result": Obs(True, _result, "the admin answer's error for a topic (by name, or by id "
                  "as the request gave it) or a partition (arg); none when the answer leaves "
                  "it out", True),
    "next_producer_id": Obs(False, lambda s, a: s.node.image.next_producer_id, "the first id "
                            "of the next block of producer ids (ProducerIdsRecord)"),
    "records": Obs(False, _records, "the types of the records the controller appended during "
                   "the step, in order"),
}


def _zk_partition(name: str) -> Callable[[Seen, str], Any]:
    """A field of the partition's state as ZooKeeper holds it: a topic queued for deletion's
    too, until the deletion completes (`TopicDeletionManager.completeDeleteTopic`)."""
    def read(seen: Seen, tp: str) -> Any:
        found = seen.node.store.partition(tp) or seen.node.deleted_partition(tp)
        if found is None:
            return NONE
        value = getattr(found[1], name)
        return list(value) if isinstance(value, tuple) else value
    return read


def _live_epoch(seen: Seen, broker: str) -> Any:
    epoch = seen.node.live.get(int(broker)) if broker.isdigit() else None
    return NONE if epoch is None else epoch


def _sent_alive(seen: Seen, broker: str) -> Any:
    """The live brokers the last UpdateMetadata the controller sent `b<broker>` during the
    step lists: what that broker's metadata cache holds alive once it applies it."""
    for dst, kind, body in reversed(seen.sent):
        if kind == "UpdateMetadata" and dst == f"b{broker}":
            return list(body.alive)
    return NONE


def _sent_deleted(seen: Seen, broker: str) -> Any:
    """The partitions the last UpdateMetadata the controller sent `b<broker>` during the step
    marks deleted (leader LeaderDuringDelete, -2), none when it sent none."""
    for dst, kind, body in reversed(seen.sent):
        if kind == "UpdateMetadata" and dst == f"b{broker}":
            return sorted(body.deleted)
    return NONE


def _sent_partition(name: str, sent_kind: str = "UpdateMetadata") -> Callable[[Seen, str], Any]:
    """A field of the partition's entry in the last `sent_kind` request (UpdateMetadata,
    LeaderAndIsr or StopReplica) the controller sent the broker during the step that names the
    partition (arg `<broker id>/<tp>`): for an UpdateMetadata, what that broker's metadata
    cache then holds for it."""
    def read(seen: Seen, arg: str) -> Any:
        broker, _, tp = arg.partition("/")
        for dst, kind, body in reversed(seen.sent):
            if kind != sent_kind or dst != f"b{broker}":
                continue
            for st in body.partitions:
                if st.tp == tp:
                    value = getattr(st, name)
                    return list(value) if isinstance(value, tuple) else value
        return NONE
    return read


def _sent_full(seen: Seen, broker: str) -> Any:
    """Whether the last LeaderAndIsr sent to the broker (arg: its id) during the step was a
    FULL one (KIP-516), none when none was sent."""
    for dst, kind, body in reversed(seen.sent):
        if kind == "LeaderAndIsr" and dst == f"b{broker}":
            return body.full
    return NONE


def _sent_epochs(seen: Seen, broker: str) -> list:
    return [body.controller_epoch for dst, kind, body in seen.sent if dst == f"b{broker}"
            and kind in ("LeaderAndIsr", "UpdateMetadata", "StopReplica")]


def _deletion_state(seen: Seen, arg: str) -> Any:
    """The state (Kafka's replica state names) of the replica (arg `<broker id>/<tp>`) of a
    topic queued for deletion, none when its topic is not queued."""
    broker, _, tp = arg.partition("/")
    deletion = seen.node.store.deleting.get(tp.rpartition("-")[0])
    if deletion is None or not broker.isdigit():
        return NONE
    return deletion.states.get((int(broker), tp), NONE)


ZK_ANSWER = ("error", "leader_epoch", "partition_epoch", "isr")
LEADER_AND_ISR = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas")
STOP_REPLICA = ("leader_epoch", "delete")
UPDATE_METADATA = ("leader", "leader_epoch", "isr", "replicas", "offline_replicas")
ZK_CONTROLLER = {
    "answered": CONTROLLER["answered"],
    "error": CONTROLLER["error"],
    **{f"answer.{name}": CONTROLLER[f"answer.{name}"] for name in ZK_ANSWER},
    "answer.remaining": Obs(False, _answer("remaining"), "the partitions a ControlledShutdown "
                            "answer says the broker still leads"),
    "result": CONTROLLER["result"],
    **{name: Obs(True, _zk_partition(name), CONTROLLER[name].doc.replace(
        "in the controller's image", "as ZooKeeper holds it"))
       for name in ("leader", "leader_epoch", "partition_epoch", "isr", "replicas")},
    "broker_epoch": Obs(True, _live_epoch, "the broker epoch the controller holds for a live "
                        "broker (arg: its id; none when it is not live)"),
    "shutting_down": Obs(True, lambda s, b: b.isdigit() and int(b) in s.node.shutting_down,
                         "whether the broker (arg: its id) is in controlled shutdown"),
    "update_metadata_alive": Obs(True, _sent_alive, "the live brokers of the last "
                                 "UpdateMetadata sent to the broker (arg: its id) during the "
                                 "step, none when none was"),
    "update_metadata_deleted": Obs(True, _sent_deleted, "the partitions the last "
                                   "UpdateMetadata sent to the broker (arg: its id) during the "
                                   "step marks deleted (leader -2), none when none was"),
    **{f"update_metadata.{name}": Obs(True, _sent_partition(name), f"the {name} of the "
                                      "partition in the last UpdateMetadata sent to the broker "
                                      "during the step that names it (arg <broker id>/<tp>), "
                                      "none when none did")
       for name in UPDATE_METADATA},
    **{f"leader_and_isr.{name}": Obs(True, _sent_partition(name, "LeaderAndIsr"), f"the "
                                     f"{name} of the partition in the last LeaderAndIsr sent to "
                                     "the broker during the step that names it (arg <broker "
                                     "id>/<tp>), none when none did")
       for name in LEADER_AND_ISR},
    "leader_and_isr_full": Obs(True, _sent_full, "whether the last LeaderAndIsr sent to the "
                               "broker (arg: its id) during the step was FULL (KIP-516)"),
    **{f"stop_replica.{name}": Obs(True, _sent_partition(name, "StopReplica"), f"the {name} "
                                   "(leader_epoch: -1 absent before 2.6, -2 a deletion's) of the "
                                   "partition in the last StopReplica sent to the broker during "
                                   "the step that names it (arg <broker id>/<tp>), none when none did")
       for name in STOP_REPLICA},
    "topics_to_be_deleted": Obs(False, lambda s, a: sorted(s.node.store.deleting),
                                "the topics queued for deletion (`topicsToBeDeleted`)"),
    "topics_ineligible_for_deletion": Obs(
        False, lambda s, a: sorted(n for n, d in s.node.store.deleting.items() if d.ineligible),
        "the queued topics whose deletion is halted (`topicsIneligibleForDeletion`)"),
    "deletion_state": Obs(True, _deletion_state, "the state of a replica (arg <broker id>/<tp>) "
                          "of a topic queued for deletion: OnlineReplica, OfflineReplica, "
                          "ReplicaDeletionStarted, ReplicaDeletionSuccessful or "
                          "ReplicaDeletionIneligible; none when its topic is not queued"),
    "controller_epoch": Obs(False, lambda s, a: s.node.controller_epoch,
                            "the controller's epoch"),
    "active": Obs(False, lambda s, a: s.node.active, "whether the node is the active "
                  "controller (Kafka's isActive)"),
    "zk_controller": Obs(False, lambda s, a: s.node.store.active or NONE, "the controller "
                         "/controller names, none when it is empty"),
    "zk_controller_epoch": Obs(False, lambda s, a: s.node.store.controller_epoch,
                               "the epoch /controller_epoch holds"),
    "controller_epoch_sent": Obs(True, _sent_epochs, "the controller epochs of the control "
                                 "requests sent to the broker (arg: its id) during the step, "
                                 "in order"),
}
