"""How far along the chain to an invariant's violation a run got.

Some violations need several things to happen in order, each rare: a StopReplica overtaken
by a newer LeaderAndIsr needs, first, a StopReplica in flight and then a LeaderAndIsr at a
newer epoch sent behind it; an election that reuses a leader epoch breaks
`single_leader_per_epoch` only if it names a broker that missed the epoch the previous
leader led at. A run that got to the second step is closer than one that got to the first,
and the search should mutate it more, even where neither step is rare on its own. A chain of
one step names what a violation needs first and few runs reach: a LeaderAndIsr applied out of
order needs a newer one sent while an older one is stuck in flight to the same broker; a
stray replica left by a cancelled reassignment needs the added replica still catching up.

Contract:
- `ChainFold` reads one run's events in trace order and records `stages`, the names of
  the steps below it saw (each a sentence);
- `STAGES` names, per invariant, its chain of steps in order (the last one before the
  violation itself); `leading(reached, chain)` is how many leading steps of a chain a run
  reached;
- `ChainFold.leads` are fault steps that would take the run one step further where a single
  operator action can: at the moment a step was reached, the action its next step needs,
  aimed at the partition and broker that step named (an in-sync replica that lagged the
  epoch is named leader by a leadership move; a reassignment whose added replica lags is
  cancelled). Only the steps in `lead_stages` (the target's chain) record leads; a mutant
  of the case may add one (`mutate`'s `follow` edit). At most `MAX_LEADS`, the first ones,
  in trace order.
Everything is ordered by names or trace order; nothing depends on set order.
"""

from __future__ import annotations

from sim.core.faults import FaultStep
from sim.kafka.vocab import broker_id

STOP_REPLICA_SENT = "a StopReplica was in flight"
STOP_REPLICA_BEHIND = "a LeaderAndIsr at a newer epoch was sent behind an in-flight StopReplica"
REPLICA_LAGGED = ("a partition's state changed while an in-sync replica lagged the epoch its "
                  "leader led at")
LAGGING_ELECTED = "an election named an in-sync replica that lagged the epoch the leader led at"
LEADER_AND_ISR_BEHIND = ("a LeaderAndIsr at a newer epoch was sent behind an older one to the same "
                         "broker, in flight for 20 ms or more")
STUCK_US = 20_000  # in flight this long on links of a few ms: held, delayed or cut
ADDING_LAGGED = ("a replica a reassignment adds stayed out of the ISR 100 ms after the "
                 "reassignment began")
LEADER_BEHIND = "a partition's leader was named at a newer epoch than the one it led at"
LEADER_LATE = "a leader had not applied its newer epoch 100 ms after it was named at it"
CLIENT_AHEAD = "a client learned a leader epoch its leader had not applied yet"
LATE_US = 100_000  # long enough for a client's metadata refresh to matter
MAX_LEADS = 8

STAGES: dict[str, tuple[str, ...]] = {
    "stop_replica_out_of_order": (STOP_REPLICA_SENT, STOP_REPLICA_BEHIND),
    "single_leader_per_epoch": (REPLICA_LAGGED, LAGGING_ELECTED),
    # KAFKA-13972: a cancel removes an adding replica without a new epoch; it has to be
    # still adding (out of the ISR) when the cancel comes, which a quick catch-up prevents
    "stray_replica": (ADDING_LAGGED,),
    # a broker that applies an older LeaderAndIsr: the newer one must overtake it first
    "leader_epoch_monotonic": (LEADER_AND_ISR_BEHIND,),
    # KIP-359's race: a Produce at the newer epoch reaching a leader still at the older one
    "stale_leader_append": (LEADER_BEHIND, LEADER_LATE, CLIENT_AHEAD),
}


def leading(reached, chain: tuple) -> int:
    """How many leading items of `chain` are in `reached`."""
    n = 0
    while n < len(chain) and chain[n] in reached:
        n += 1
    return n


class ChainFold:
    """The chain steps one run reached; feed it every event in trace order."""

    def __init__(self, lead_stages: tuple = ()):
        self.stages: set[str] = set()
        self._lead_stages = lead_stages  # the steps whose leads are recorded
        self._stop_replicas: dict[int, tuple] = {}  # mid -> (dst, {tp: epoch}) in flight
        self._leader_and_isrs: dict[int, tuple] = {}  # mid -> (dst, {tp: epoch}, sent at)
        # tp -> (leader epoch, ISR, when) the controller last wrote
        self._written: dict[str, tuple] = {}
        self._restarted: dict[int, int] = {}  # broker id -> when it last restarted
        self._applied: dict[tuple, int] = {}  # (broker id, tp) -> applied leader epoch
        self._led: dict[tuple, int] = {}  # (tp, leader epoch) -> the broker that led at it
        self._down: set[int] = set()  # broker ids crashed and not restarted
        self._leading: dict[tuple, int] = {}  # (broker id, tp) -> the epoch it leads at
        self._adding: dict[tuple, int] = {}  # (broker id, tp) -> adding out of the ISR since
        self._adds: dict[str, set] = {}  # tp -> the replicas its reassignment adds
        self._replicas: dict[str, tuple] = {}  # tp -> its replicas as last written
        # (broker id, tp) -> (the newer epoch it was named leader at, since when)
        self._named_ahead: dict[tuple, tuple] = {}
        self._adding_led: set[tuple] = set()  # (broker id, tp) adding overdue, led already
        self.leads: list[FaultStep] = []

    def _lead(self, stage: str, at_us: int, action: str, target: str, params: dict) -> None:
        """Record a lead reached at `stage` (only for the stages asked for)."""
        lead = FaultStep(at_us, action, target, params)
        if stage in self._lead_stages and len(self.leads) < MAX_LEADS and lead not in self.leads:
            self.leads.append(lead)

    def step(self, ev: dict) -> None:
        now = ev.get("t", 0)
        if self._named_ahead and LEADER_LATE not in self.stages and \
                _overdue((since for _e, since in self._named_ahead.values()), now):
            self.stages.add(LEADER_LATE)
        if len(self._adding) > len(self._adding_led) and _overdue(self._adding.values(), now):
            self._adding_lagged(now)  # (the replicas led already are among those adding)
        handler = _HANDLERS.get(ev["kind"])
        if handler is not None:
            handler(self, ev)

    def on_send(self, ev: dict) -> None:
        if ev["msg"] == "StopReplica" and ev["parts"]:
            self._stop_replicas[ev["mid"]] = (ev["dst"], {tp: epoch for tp, epoch, *_ in ev["parts"]})
            self.stages.add(STOP_REPLICA_SENT)
        elif ev["msg"] == "LeaderAndIsr":
            self._behind(ev["dst"], ev["parts"])
            self._leader_and_isr_behind(ev)

    def _leader_and_isr_behind(self, ev: dict) -> None:
        """A LeaderAndIsr sent to a broker that an older one, stuck in flight, has not yet
        reached: it may overtake it (not two sent a moment apart, as a reassignment's are)."""
        sent = {tp: epoch for tp, _leader, epoch in ev["parts"]}
        now = ev.get("t", 0)
        if any(dst == ev["dst"] and now - at >= STUCK_US
               and any(sent.get(tp, -1) > e for tp, e in older.items())
               for dst, older, at in self._leader_and_isrs.values()):
            self.stages.add(LEADER_AND_ISR_BEHIND)
        self._leader_and_isrs[ev["mid"]] = (ev["dst"], sent, now)

    def _behind(self, dst: str, parts) -> None:
        for s_dst, stopped in self._stop_replicas.values():
            if s_dst == dst and any(epoch > stopped.get(tp, epoch) for tp, _leader, epoch in parts):
                self.stages.add(STOP_REPLICA_BEHIND)

    def on_gone(self, ev: dict) -> None:
        """A message delivered or dropped is no longer in flight."""
        self._stop_replicas.pop(ev["mid"], None)
        self._leader_and_isrs.pop(ev["mid"], None)

    def on_replica_state(self, ev: dict) -> None:
        key = (broker_id(ev["node"]), ev["tp"])
        self._applied[key] = ev["leader_epoch"]
        if ev["role"] == "leader":
            self._led.setdefault((ev["tp"], ev["leader_epoch"]), key[0])
            self._leading[key] = ev["leader_epoch"]
        else:
            self._leading.pop(key, None)
        named = self._named_ahead.get(key)
        if named is not None and (ev["role"] != "leader" or ev["leader_epoch"] >= named[0]):
            del self._named_ahead[key]

    def on_client_epoch(self, ev: dict) -> None:
        """A client now knows `leader` at `leader_epoch`: ahead of that broker if it leads the
        partition at an older epoch."""
        led = self._leading.get((ev["leader"], ev["tp"]))
        if led is not None and led < ev["leader_epoch"]:
            self.stages.add(CLIENT_AHEAD)

    def on_crash(self, ev: dict) -> None:
        """A crashed broker loses its state, and what was in flight to it with its
        connections."""
        for flight in (self._stop_replicas, self._leader_and_isrs):
            for mid in sorted(m for m, sent in flight.items() if sent[0] == ev["node"]):
                del flight[mid]
        node = broker_id(ev["node"])
        self._down.add(node)
        for key in sorted(k for k in self._applied if k[0] == node):
            del self._applied[key]
        for key in sorted(k for k in self._leading if k[0] == node):
            del self._leading[key]
            self._named_ahead.pop(key, None)

    def on_restart(self, ev: dict) -> None:
        self._down.discard(broker_id(ev["node"]))
        self._restarted[broker_id(ev["node"])] = ev.get("t", 0)

    def on_log_deleted(self, ev: dict) -> None:
        self._applied.pop((broker_id(ev["node"]), ev["tp"]), None)
        self._leading.pop((broker_id(ev["node"]), ev["tp"]), None)

    def on_partition_state(self, ev: dict) -> None:
        tp = ev["tp"]
        self._track_adding(ev)
        key = (ev["leader"], tp)
        led = self._leading.get(key)
        if led is not None and led < ev["leader_epoch"]:
            self.stages.add(LEADER_BEHIND)
            since = self._named_ahead.get(key, (0, ev.get("t", 0)))[1]  # the first time named
            self._named_ahead[key] = (ev["leader_epoch"], since)
        written, isr, since = self._written.get(tp, (None, (), 0))
        self._written[tp] = (ev["leader_epoch"], tuple(ev.get("isr", ())), ev.get("t", 0))
        led_by = self._led.get((tp, written))
        if led_by is None:
            return
        # a replica that restarted since the epoch was written lags only until the controller
        # reads its restart, which takes it out of the ISR: not a lag an election can use
        lagging = [r for r in isr if r not in self._down and r != led_by
                   and self._restarted.get(r, -1) < since
                   and self._applied.get((r, tp), -1) < written]
        if lagging:
            self.stages.add(REPLICA_LAGGED)
            for replica in lagging:  # from when it began to lag: the epoch's write
                self._lead(REPLICA_LAGGED, since, "move_leader", tp, {"to": f"b{replica}"})
        if ev["reason"].startswith("elect") and ev["leader"] in lagging:
            self.stages.add(LAGGING_ELECTED)

    def _adding_lagged(self, now: int) -> None:
        """Replicas a reassignment adds stayed out of the ISR: cancelling it now removes them
        while they are still adding."""
        for key in sorted(k for k, since in self._adding.items()
                          if now - since >= LATE_US and k not in self._adding_led):
            self.stages.add(ADDING_LAGGED)
            self._adding_led.add(key)
            self._lead(ADDING_LAGGED, now, "cancel_reassignment", key[1], {})

    def _track_adding(self, ev: dict) -> None:
        """Which replicas a reassignment of `ev`'s partition adds that are out of its ISR,
        and since when. A ZooKeeper-mode controller's `reassign_start` names the old and new
        replicas together: the added ones are those the partition did not have; KRaft's
        records name them (`adding`)."""
        tp, now, reason = ev["tp"], ev.get("t", 0), ev.get("reason", "")
        before = self._replicas.get(tp, ())
        self._replicas[tp] = tuple(ev.get("replicas", ()))
        if "adding" in ev:
            self._adds[tp] = set(ev["adding"])
        elif reason == "reassign_start":
            self._adds[tp] = set(self._replicas[tp]) - set(before)
        elif reason.startswith(("reassign_complete", "reassign_cancel")):
            self._adds.pop(tp, None)
        out = self._adds.get(tp, set()) - set(ev.get("isr", ()))
        for key in sorted(k for k in self._adding if k[1] == tp and k[0] not in out):
            del self._adding[key]
            self._adding_led.discard(key)
        for replica in sorted(out):
            self._adding.setdefault((replica, tp), now)


def _overdue(since_us, now_us: int) -> bool:
    """Whether any of the times `since_us` is LATE_US or more before `now_us`."""
    return any(now_us - since >= LATE_US for since in since_us)


_HANDLERS = {
    "send": ChainFold.on_send, "deliver": ChainFold.on_gone, "drop": ChainFold.on_gone,
    "replica_state": ChainFold.on_replica_state, "crash": ChainFold.on_crash,
    "restart": ChainFold.on_restart, "log_deleted": ChainFold.on_log_deleted,
    "partition_state": ChainFold.on_partition_state, "client_epoch": ChainFold.on_client_epoch,
}
