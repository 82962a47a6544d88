"""The probe's kinds about /controller itself and topic deletion, to a ZooKeeper-mode
controller under test.

Contract: `ZK_CONTROLLER_KINDS` maps each kind to its `Kind` (`sim.kafka.probe.kind`).
`TopicDeletion` is ZooKeeper's notification that /admin/delete_topics names topics, and
`StopReplicaResponse` a broker's answer to the controller's StopReplica: by default to the last
one it sent that broker, every partition of it answered with the partition error given (none by
default) unless `partitions` lists each partition's error (a partition the list leaves out is
not in the answer).
ZooKeeper's writes to /controller and /controller_epoch happen as the step begins, through the
`Context` (`set_controller_znode`), as another broker's
`KafkaZkClient.registerControllerAndIncrementControllerEpoch` or a deletion of /controller
leaves them: `ControllerZnode` writes and tells the node nothing (the watch's event waits
behind the ones the node processes first, as in `ControllerIntegrationTest.testControllerMove`),
`ControllerChange` and `Reelect` write (when given) then deliver the watch's event; `Expire`
ends the node's session (its ephemeral /controller goes). `Startup` is the operator starting
the controller's broker, e.g. again after a `Shutdown` (`processStartup`: `elect`).
"""

from __future__ import annotations

from sim.kafka import messages as M
from sim.kafka import zk_messages as ZM
from sim.kafka.probe.fields import Field
from sim.kafka.probe.kind import NO, Kind

ZK_CONTROLLER = ("zk_controller",)
# /controller as the step leaves it ("" untouched, "none" deleted, else a controller c<n>) and
# /controller_epoch (NO: incremented when another controller registers, else untouched)
ZNODE = (Field("controller", "str", ""), Field("controller_epoch", "int", NO))
ZNODE_KINDS = ("ControllerZnode", "ControllerChange", "Reelect")


def write_controller_znode(store, controller: str, epoch: int) -> str:
    """ZooKeeper's /controller made `controller` ("" untouched, "none" deleted): another
    controller registering there increments /controller_epoch, as
    `registerControllerAndIncrementControllerEpoch` does, unless `epoch` says what it holds.
    Returns who /controller names after ("none": no one)."""
    if controller == "none":
        store.active = None
    elif controller and controller != store.active:
        store.active = controller
        store.controller_epoch += 1
    if epoch != NO:
        store.controller_epoch = epoch
    return store.active or "none"


def _written(f: dict, ctx) -> str:
    """Write the znodes the step names, and return who /controller names after."""
    return ctx.set_controller_znode(f["controller"], f["controller_epoch"])


def _expire(f: dict, ctx) -> ZM.Expire:
    ctx.expire_controller_session()
    return ZM.Expire()


STOP_REPLICA_ERROR = (Field("tp", "str"), Field("error", "error", 0))


def _stop_replica_response(f: dict, ctx) -> M.ControlResponse:
    corr = f["corr"] or ctx.corr("StopReplica")
    parts = f["partitions"]
    if parts is None:
        request = ctx.sent_request("StopReplica", corr)
        parts = [{"tp": p.tp, "error": f["partition_error"]}
                 for p in (request.partitions if request is not None else ())]
    return M.ControlResponse(corr, f["error"], tuple((p["tp"], p["error"]) for p in parts))


ZK_CONTROLLER_KINDS: dict[str, Kind] = {
    "TopicDeletion": Kind(
        ZK_CONTROLLER, (Field("topics", "strs"),), lambda f, ctx: ZM.TopicDeletion(tuple(f["topics"])),
        "ZooKeeper's notification that /admin/delete_topics names topics: the controller "
        "queues them for deletion (from zk)"),
    "StopReplicaResponse": Kind(
        ZK_CONTROLLER, (Field("corr", "int", 0), Field("error", "error", 0),
                        Field("partition_error", "error", 0),
                        Field("partitions", "tables", None, STOP_REPLICA_ERROR)),
        _stop_replica_response, "a broker's answer to the controller's last StopReplica to it "
        "(`partition_error` for each of its partitions, or each as `partitions` lists)", True),
    "ControllerZnode": Kind(
        ZK_CONTROLLER, ZNODE, lambda f, ctx: (_written(f, ctx), None)[1],
        "ZooKeeper's /controller and /controller_epoch written by another broker or deleted, no "
        "event delivered (from zk)", act=lambda node, _src, _f: None),
    "ControllerChange": Kind(
        ZK_CONTROLLER, ZNODE, lambda f, ctx: ZM.ControllerChange(_written(f, ctx)),
        "the /controller watch's event on its creation or change: maybeResign (from zk)"),
    "Reelect": Kind(
        ZK_CONTROLLER, ZNODE, lambda f, ctx: ZM.Reelect(_written(f, ctx)),
        "the /controller watch's event on its deletion: maybeResign, then elect (from zk)"),
    "Expire": Kind(
        ZK_CONTROLLER, (), _expire, "the controller's ZooKeeper session expired: it resigns "
        "(from zk)"),
    "Startup": Kind(
        ZK_CONTROLLER, (), lambda f, ctx: None, "the operator starts the controller's broker, "
        "e.g. again after a Shutdown: it stands for election (no message)",
        act=lambda node, _src, _f: node.startup()),
}
