"""The ZooKeeper-mode controller's election, failover and resignation (`KafkaController`).

Contract: a mixin of `sim.kafka.controller.Controller`. In a run the controller reads
ZooKeeper (the `Store`) on a timer (`ticks`): it renews its session, resigns when another
controller holds /controller or its own session expired, and a standby takes over with
/controller_epoch + 1 once the active one has been silent for `zk_session_timeout_ms` plus
`controller_failover_delay_ms`. A probe's controller has no timer (`ticks` False) and acts
only on the events a probe delivers, as Kafka's controller event thread does
(`KafkaController.process` at 2.2.0 and 3.7.0, alike in every modelled release):
`ControllerChange` (`maybeResign`), `Reelect` (`maybeResign` then `elect`), `Expire`
(`onControllerResignation`), a ZooKeeper notification whose write a newer controller epoch
fences (ControllerMovedException, then `maybeResign`), and the operator's shutdown and start
(`KafkaController.shutdown`, `processStartup`).
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.controller_rebalance import FIRST_CHECK_US

TICK_US = 100_000
# the events about /controller itself, from its watch and the session's state handler
CONTROLLER_EVENTS = ("ControllerChange", "Reelect", "Expire")


class ElectionOps:
    ticks = True  # reads ZooKeeper on a timer (a run); a probe's controller does not

    def on_restart(self) -> None:
        if self.ticks:
            self.set_timer(TICK_US, "tick")
        else:
            self.elect_controller()  # the `Startup` event: `processStartup` registers its watch and elects

    def _tick(self) -> None:
        now = self.now_us
        reach = self.can_reach("zk")
        store = self.store
        if self.active:
            if reach and store.active == self.name and store.controller_epoch == self.controller_epoch:
                store.controller_renewed_us = self.last_renew_us = now
            if not self._can_write() and (now - self.last_renew_us > self._session_us() or reach):
                self._resign("session expired" if not reach else "superseded")
                return
            if self._can_write():
                self.check_brokers()
                self.check_log_dir_events()
                self.check_reassignments()
        elif reach and (store.active is None
                        or now - store.controller_renewed_us > self._session_us()
                        + self.cluster.controller_failover_delay_ms * 1000):
            self._become_active()

    def _session_us(self) -> int:
        return self.cluster.zk_session_timeout_ms * 1000

    def _can_write(self) -> bool:
        store = self.store
        return (self.active and store.active == self.name
                and store.controller_epoch == self.controller_epoch
                and self.can_reach("zk"))

    def _resign(self, reason: str) -> None:
        """`onControllerResignation`: it stops sending (`controllerChannelManager.shutdown`
        drops the queued requests, so nothing is retried) and forgets its context."""
        self.active = False
        self.outstanding = {}
        self.shutting_down = set()  # `ControllerContext.resetContext` on resignation
        self.init_offline_replicas()
        self.emit(V.CONTROLLER_RESIGNED, {"controller_epoch": self.controller_epoch, "reason": reason})

    def _become_active(self) -> None:
        """`registerControllerAndIncrementControllerEpoch` then `onControllerFailover`."""
        store = self.store
        store.controller_epoch += 1
        store.active = self.name
        store.controller_renewed_us = self.last_renew_us = self.now_us
        self.controller_epoch = store.controller_epoch
        self.active = True
        self.outstanding = {}
        # `KafkaController.initializeControllerContext` clears `shuttingDownBrokerIds`: the
        # marks were the old controller's memory (in Kafka a broker still shutting down sends
        # its ControlledShutdown again; here the fault step is one call, made once)
        self.shutting_down = set()
        self.init_offline_replicas()
        self.emit(V.CONTROLLER_ELECTED, {"controller_epoch": self.controller_epoch})
        self.live = self._registered_live()
        self.init_deletions()  # `fetchTopicDeletionsInProgress`, `TopicDeletionManager.init`
        for tp in store.all_tps():
            topic, st = store.partition(tp)
            self._emit_state(tp, topic, st, "controller_failover")
        if self.protocol.offline_replicas_at_failover:
            self.start_state_machines()
        else:
            for tp in self.without_live_leader(store.all_tps()):
                self.elect(tp, "offline_partition")
            self.dirty = []
            self.send_full_state(sorted(self.live))
        self.resume_reassignments(None)  # `initializePartitionReassignments`
        self.flush()
        self.resume_deletions()  # `tryTopicDeletion`
        self.schedule_auto_rebalance(FIRST_CHECK_US)

    def _registered_live(self) -> dict[int, int]:
        return {b: s.epoch for b, s in sorted(self.store.brokers.items())
                if self.now_us - s.renewed_us <= s.timeout_us}

    # -- a probe's events ----------------------------------------------------------------
    def on_controller_event(self, kind: str) -> None:
        """An event about /controller (a probe's step): `processControllerChange`,
        `processReelect` or `processExpire` (KafkaController at 2.2.0 and 3.7.0)."""
        if kind == "Expire":
            if self.active:  # `activeControllerId = -1; onControllerResignation()`
                self._resign("session expired")
            return
        self.maybe_resign()
        if kind == "Reelect":
            self.elect_controller()

    def maybe_resign(self) -> None:
        """`maybeResign`: it reads /controller again and resigns if it held it and no longer
        does (another controller holds it, or none does)."""
        if self.active and self.store.active != self.name:
            self._resign("superseded" if self.store.active is not None else "controller deleted")

    def elect_controller(self) -> None:
        """`elect`: if /controller is empty it registers itself there, /controller_epoch + 1,
        and takes over (`onControllerFailover`); if another holds it, it stays a standby."""
        if self.store.active is None:
            self._become_active()

    def fenced_write(self, kind: str, body) -> bool:
        """Whether a ZooKeeper notification makes this controller write ZooKeeper while a newer
        controller epoch fences its writes: it believes itself active, but /controller_epoch
        moved on, so the write's check of the epoch znode's version fails
        (ControllerMovedException, KAFKA-6082, 2.1+) and the event is abandoned before anything
        is sent. The writes: a new topic's partition states (`processTopicChange`), added
        partitions' (`processPartitionModifications`), the admin znode a preferred election or
        a reassignment removes or rewrites when done, a broker change's state changes, and a
        deletion's first ISR removal (`OfflineReplica`)."""
        if not self.active or self.store.controller_epoch == self.controller_epoch:
            return False
        if kind == "TopicChange":
            return body.topic not in self.store.topics
        if kind == "PartitionModifications":
            topic = self.store.topics.get(body.topic)
            return topic is not None and len(body.assignment) > len(topic.partitions)
        if kind == "BrokerChange":
            return self._registered_live() != self.live
        if kind == "TopicDeletion":
            return bool(self.newly_deleted(body.topics))
        return True  # PreferredReplicaElection, PartitionReassignment

    def startup(self) -> None:
        """The operator starts the controller's broker (again after `begin_shutdown`): the
        `Startup` event, `processStartup`, registers the /controller watch and elects."""
        if self.alive:
            self.elect_controller()
        else:
            self.world.restart(self.name)  # `on_restart`

    def begin_shutdown(self) -> None:
        """The operator stops the controller's broker: `KafkaController.shutdown` resigns, and
        the broker's ZooKeeper session closes, deleting /controller if it held it;
        /controller_epoch stays (`testControllerEpochPersistsWhenAllBrokersDown`)."""
        if self.active:
            self._resign("shutdown")
        if self.store.active == self.name:
            self.store.active = None
        self.world.crash(self.name)
