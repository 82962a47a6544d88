"""How the ZooKeeper-mode controller learns of a failed log directory and moves leaders off it.

Contract (mixin of `Controller`), read at 2.6.0 and 3.7.0 (`KafkaController`):
- `check_log_dir_events` reads the LogDirEventNotifications brokers wrote to the store
  (`processLogDirEventNotification`) and, for each live broker named, sends a LeaderAndIsr
  for every replica it holds, with UpdateMetadata for those partitions
  (`onBrokerLogDirFailure`: `handleStateChanges(replicasOnBrokers, OnlineReplica)`), to find
  out which of them are offline;
- `on_leader_and_isr_response` reads every LeaderAndIsr answer: a partition answered
  KAFKA_STORAGE_ERROR has its replica on that broker offline, one answered NONE online again
  (`processLeaderAndIsrResponseReceived`; `sim.kafka.rules.controller`), so a new controller
  learns the same from the LeaderAndIsr it sends every broker when it takes over;
- `on_replicas_offline` is `onReplicasBecomeOffline`: a partition whose leader is an offline
  replica gets a new leader, elected only among online replicas (`isReplicaOnline`, which
  `replica_online` answers for every election), and each offline replica leaves the ISR
  (OfflineReplica: `removeReplicasFromIsr`, a leader epoch bump) after a StopReplica without
  deletion is queued for it. A replica of a topic being deleted is not asked: its failed
  StopReplica with deletion makes it ReplicaDeletionIneligible (`controller_deletion`), and
  the deletion resumes when the broker starts again.
A broker's offline replicas are forgotten when it starts again or is declared dead
(`onBrokerStartup`, `onBrokerFailure`: `replicasOnOfflineDirs.remove`), and by a controller
that resigns or takes over (a new `ControllerContext`).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.rules.controller import (
    offline_replicas_after_leader_and_isr,
    offline_update_metadata,
)


class LogDirFailureOps:
    def init_offline_replicas(self) -> None:
        self.offline_replicas: dict[int, frozenset] = {}  # broker -> tps in its failed dirs

    def replica_online(self, broker: int, tp: str) -> bool:
        """`ControllerContext.isReplicaOnline`: the broker is live and the replica is not in
        one of its failed log directories."""
        return broker in self.live and tp not in self.offline_replicas.get(broker, ())

    def forget_offline_replicas(self, brokers: list[int]) -> None:
        for b in brokers:
            self.offline_replicas.pop(b, None)

    def check_log_dir_events(self) -> None:
        events = self.store.log_dir_events
        if not events:
            return
        brokers = sorted(set(events))
        events.clear()
        asked = []
        for b in brokers:
            mine = [tp for tp in self.store.all_tps() if b in self.store.partition(tp)[1].replicas]
            if b in self.live and mine:
                self.send_leader_and_isr(b, mine)
                asked.extend(mine)
        if asked:
            self.send_update_metadata(sorted(set(asked)))

    def on_leader_and_isr_response(self, broker: int, request, response) -> None:
        if not self._can_write() or response.error or broker not in self.live:
            return
        errors = dict(response.partition_errors)
        answered = {p.tp: errors.get(p.tp, E.NONE) for p in request.partitions}
        previous = self.offline_replicas.get(broker, frozenset())
        current, new = offline_replicas_after_leader_and_isr(previous, answered)
        if current:
            self.offline_replicas[broker] = current
        else:
            self.offline_replicas.pop(broker, None)
        if new:
            self.on_replicas_offline(broker, sorted(new))

    def on_replicas_offline(self, broker: int, tps: list[str]) -> None:
        self.emit(V.REPLICAS_OFFLINE, {"broker": broker, "tps": tps})
        offline = set(tps)
        offline_led = [tp for tp in self.store.all_tps()  # `partitionsWithOfflineLeader`
                       if (self.store.partition(tp)[1].leader == broker and tp in offline)
                       or self.store.partition(tp)[1].leader not in self.live]
        # as on a broker failure (`onReplicasBecomeOffline`)
        elected = [tp for tp in offline_led if self.elect(tp, "log_dir_failure")]
        # OfflineReplica: the StopReplica at the epoch the election left, then the ISR removal
        mine = [tp for tp in self.store.all_tps() if tp in offline]
        stops = [self._stop_part(tp, delete=False) for tp in mine]
        self.remove_from_isr(broker, mine)
        self.flush()
        if offline_update_metadata(self.protocol, bool(offline_led), bool(mine), bool(elected)):
            self.send_update_metadata([])
        if stops and broker in self.live:
            self.send_stop_replica(broker, tuple(stops))
