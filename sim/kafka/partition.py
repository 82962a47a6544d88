"""A broker's replica of one partition: leader epoch, role, ISR, follower progress.

Contract: volatile state over a durable `Log`. `make_leader` / `make_follower` follow
`Partition.makeLeader` / `makeFollower` (ref §1.4 steps 3-4); the checks of a request against
the replica's epoch are rules (`sim.kafka.rules.epochs`). A replica's leader epoch never goes
back (`ModelBug` otherwise): a LeaderAndIsr the broker applies is at least as new.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.log import Log
from sim.kafka.model_bug import ModelBug

# a time before any run: Kafka's 0 ms, the epoch, for "never caught up" / "never fetched"
NEVER_US = -(1 << 62)


class Replica:
    """Leader-side view of one follower (Kafka's `Replica` / `ReplicaState`)."""

    __slots__ = ("leo", "caught_up_us", "last_fetch_leader_leo", "last_fetch_us", "session",
                 "broker_epoch", "log_start")

    def __init__(self):
        self.leo = -1  # -1: unknown (not fetched since this broker became leader)
        # lastCaughtUpTimeMs: the latest time at which the follower's fetch offset reached the
        # leader's log end offset of that time
        self.caught_up_us = NEVER_US
        self.last_fetch_leader_leo = -1  # the leader's log end offset at its previous fetch
        self.last_fetch_us = NEVER_US  # ... and when that fetch came
        # the fetch session (sim.kafka.fetch_session) whose Fetches read this partition without
        # news, each a `fetched` with the follower caught up, not applied one by one: its
        # `last_fetch_us` stands for both times below until `leave_session`
        self.session = None
        self.broker_epoch = None  # the broker epoch its last Fetch carried (KIP-903)
        # the log start its last Fetch carried (KIP-107), for the low watermark of DeleteRecords
        self.log_start = -1

    def reset(self, leader_leo: int, now_us: int, in_sync: bool, new_leader: bool) -> None:
        """A new leader epoch (`Replica.resetReplicaState` in `Partition.makeLeader`): a
        follower in the new ISR is caught up now, one outside it never was (so it does not
        hold the HW back as caught up). A broker that becomes leader (`isNewLeader`) knows
        nothing else of the follower: `make_leader` gives it a fresh `Replica`, whose log end
        and fetch history are already unknown. One that already led keeps the log end."""
        self.caught_up_us = now_us if in_sync else NEVER_US
        self.session = None
        if not new_leader:
            self.last_fetch_leader_leo = leader_leo
            self.last_fetch_us = now_us if in_sync else NEVER_US

    def caught_up_as_of(self) -> int:
        """`caught_up_us` with the Fetches of its session counted."""
        s = self.session
        return self.caught_up_us if s is None else max(self.caught_up_us, s.last_fetch_us)

    def leave_session(self) -> None:
        """Apply the Fetches its session made without reading it (each `fetched` from the
        leader's log end, which did not move meanwhile) and stop being tracked."""
        s = self.session
        if s is not None:
            self.caught_up_us = max(self.caught_up_us, s.last_fetch_us)
            self.last_fetch_us = max(self.last_fetch_us, s.last_fetch_us)
            self.session = None

    def fetched(self, fetch_offset: int, leader_leo: int, now_us: int) -> None:
        """A Fetch from this follower (`Replica.updateFetchStateOrThrow`): caught up now if it
        asks from the leader's log end offset; else caught up as of its previous fetch if it
        asks from at least the log end offset the leader had then, so a follower that trails
        by one round trip under steady load stays in sync."""
        if self.session is not None:
            self.leave_session()
        if fetch_offset >= leader_leo:
            self.caught_up_us = now_us
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.caught_up_us = max(self.caught_up_us, self.last_fetch_us)
        self.leo = fetch_offset
        self.last_fetch_leader_leo = max(leader_leo, self.last_fetch_leader_leo)
        self.last_fetch_us = now_us


class Partition:
    def __init__(self, tp: str, topic_id: int, log: Log, broker_id: int):
        self.tp = tp
        self.topic_id = topic_id
        self.log = log
        self.broker_id = broker_id
        self.leader_epoch = -1  # INITIAL_LEADER_EPOCH - 1 before any LeaderAndIsr (ref §0)
        self.partition_epoch = -1
        self.leader = E.NO_LEADER
        self.isr: tuple = ()
        self.replicas: tuple = ()
        self.followers: dict[int, Replica] = {}
        self.pending_isr: tuple | None = None  # AlterPartition in flight
        self.alter_request = None  # that AlterPartition, resent until answered
        self.leader_epoch_start_offset = -1
        # (controller epoch, correlation id) of the LeaderAndIsr that last applied to it
        self.lai_stamp = (-1, -1)

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    def make_leader(self, state, now_us: int, cache_epoch: bool = True) -> bool:
        """Apply LeaderAndIsr as leader; returns whether the leader epoch is new. A new epoch
        resets what the leader knows of each follower (`Replica.reset`). With `cache_epoch`
        (KAFKA-7415, 2.1) a new epoch enters the leader-epoch cache now, at the log end;
        before, only with the first batch appended in it."""
        if state.partition_epoch < self.partition_epoch:
            return False
        self._check_epoch(state.leader_epoch)
        self.replicas, self.isr = state.replicas, state.isr
        new_epoch = state.leader_epoch > self.leader_epoch
        new_leader = not self.is_leader
        if new_leader:
            self.followers = {}
        # `updateAssignmentAndIsr` commits the state it was given, so an ISR change in flight
        # is dropped and its answer ignored, at a new leader epoch or not
        self.pending_isr = None
        self.alter_request = None
        for r in state.replicas:
            if r != self.broker_id and r not in self.followers:
                self.followers[r] = Replica()
        for r in list(self.followers):
            if r not in state.replicas:
                del self.followers[r]
        if new_epoch:
            self.leader_epoch_start_offset = self.log.leo
            if cache_epoch:
                self.log.assign_epoch_start(state.leader_epoch, self.log.leo)
            for r, f in self.followers.items():
                f.reset(self.log.leo, now_us, r in state.isr, new_leader)
            self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.leader = self.broker_id
        return new_epoch

    def make_follower(self, state) -> bool:
        """Apply LeaderAndIsr as follower; returns whether the leader epoch is new."""
        if state.partition_epoch < self.partition_epoch:
            return False
        self._check_epoch(state.leader_epoch)
        new_epoch = state.leader_epoch > self.leader_epoch
        self.replicas = state.replicas
        self.isr = ()
        self.leader = state.leader
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.leader_epoch_start_offset = -1
        self.followers = {}
        self.pending_isr = None
        self.alter_request = None
        return new_epoch

    def _check_epoch(self, leader_epoch: int) -> None:
        if leader_epoch < self.leader_epoch:
            raise ModelBug(f"{self.tp} on broker {self.broker_id}: leader epoch "
                           f"{self.leader_epoch} would go back to {leader_epoch}")
