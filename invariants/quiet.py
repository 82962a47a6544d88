"""Quiet time after faults: when a run can be judged for liveness, and from when.

Contract: `QuietClock` is folded once per run by the monitor (`ctx.quiet`); `AfterHeal` is the
base of the liveness rules (`invariants.recovery`), which ask it whether and from when to judge;
`recovery_us(cluster)` is the quiet time a live partition needs to be whole again.

Quiet time is judged from the trace, never assumed: the clock restarts at every fault step and
controller election, and a partition is judged only once it has spent `recovery_us` of quiet
time short of full replication. `recovery_us` is the chain of Kafka's own retry loops after the
last disturbance (cluster options, ms): a lost control request is sent again after
`controller_request_retry_ms`; a follower's Fetch that went unanswered is retried after its max
wait (`replica_fetch_wait_max_ms`) plus the fetch timeout; a failed Fetch backs off
`replica.fetch.backoff.ms`; one more Fetch round brings the follower to the leader's end, and
the leader's AlterPartition adds it back to the ISR. An AlterPartition (or its response) lost
on a live link is sent again only after `controller.socket.timeout.ms`, so such a loss holds
the judgement off for that much longer (not a `dst_down` drop, which a new controller's
arrival repairs, nor a `refused` one, which the sender hears of at once, nor a `connection_reset` one, which both ends hear of: the broker sends its
unanswered AlterPartitions again at once; a `connection_closed` one may be the controller
closing its side of the link, which the broker does not notice).
In KRaft mode a broker that restarts after a crash cannot register again while its previous
incarnation's session is valid (`ClusterControlManager.registerBroker`: DUPLICATE_BROKER_
REGISTRATION), up to broker.session.timeout.ms after its last heartbeat, so the judging clock
starts no earlier than the crash plus that timeout (`broker_session_timeout_ms`). A
controller that becomes active gives every registered, unfenced broker a fresh session
(`ClusterControlManager.activate` registers each with the heartbeat manager at that moment), so
an election while a crashed broker's new incarnation has not registered yet holds the clock
off until the election plus that timeout.
A network cut, or a drop or hold rule still in force at the end (the harness's `unhealed`
event), means the faults did not heal: no judgement.
"""

from __future__ import annotations

from invariants.base import Invariant
from sim.kafka.vocab import CONTROLLER_SOCKET_TIMEOUT_US, FETCH_BACKOFF_US, FETCH_TIMEOUT_US

# Lost on a live link, these are sent again only after controller.socket.timeout.ms; a drop
# without a kind (a trace from before drops named theirs) counts too, to be safe.
SLOW_RETRY = frozenset({"AlterPartition", "AlterPartitionResponse", None})
# Losses the broker hears of and repairs at once: the controller gone (its successor gets the
# requests) or the connection reset under both ends (`Broker.on_disconnect` resends them).
REPAIRED_AT_ONCE = frozenset({"dst_down", "refused", "connection_reset"})


def recovery_us(cluster: dict) -> int:
    """Quiet time (µs) Kafka's retry loops need to bring a live partition back to full
    replication after the last fault step or controller election (see the module doc)."""
    fetch_wait_us = cluster.get("replica_fetch_wait_max_ms", 500) * 1000
    return (cluster.get("controller_request_retry_ms", 3000) * 1000
            + fetch_wait_us + FETCH_TIMEOUT_US + FETCH_BACKOFF_US + fetch_wait_us)


class QuietClock:
    """The quiet clock the liveness rules share, folded once per run by the monitor
    (`ctx.quiet`): when the last disturbance ended, and whether the network was whole at the
    end."""

    KINDS = frozenset({"fault", "drop", "controller_elected", "unhealed", "crash", "restart",
                       "metadata_append"})

    def __init__(self, session_hold_us: int = 0):
        self.quiet_from = 0  # t of the last fault step or controller election
        self.live_drop = None  # t of the last AlterPartition (or answer) lost on a live link
        self.unhealed = False  # the harness found the network not whole at the end
        # KRaft: broker.session.timeout.ms, which a crashed broker's restart may wait out
        self.session_hold_us = session_hold_us
        self.crashed_at: dict[str, int] = {}  # broker -> its last crash, until it restarts
        # brokers restarted after a crash whose new incarnation has not registered yet
        self.unregistered: set[str] = set()
        self.registration_hold = 0  # the judging clock starts no earlier than this

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == "drop":
            if ev["reason"] not in REPAIRED_AT_ONCE and ev.get("msg") in SLOW_RETRY:
                self.live_drop = ev["t"]
        elif kind == "fault":
            # a rule with a duration disturbs until it lapses, which may be after later steps
            duration = ev.get("params", {}).get("duration_ms") if ev["action"] == "rule" else None
            end = ev["t"] + int(duration * 1000) if duration else ev["t"]
            self.quiet_from = max(self.quiet_from, end)
        elif kind == "controller_elected":
            self.quiet_from = max(self.quiet_from, ev["t"])
            if self.crashed_at or self.unregistered:  # their old sessions begin afresh
                self.registration_hold = max(self.registration_hold,
                                             ev["t"] + self.session_hold_us)
        elif kind == "metadata_append":
            record = ev["record"]
            if record.get("kind") == "RegisterBrokerRecord":
                self.unregistered.discard(f"b{record['broker']}")
        elif kind == "crash":
            if self.session_hold_us and ev["node"].startswith("b"):
                self.crashed_at[ev["node"]] = ev["t"]
        elif kind == "restart":
            crashed = self.crashed_at.pop(ev["node"], None)
            if crashed is not None:  # it may register only once its old session lapsed
                self.registration_hold = max(self.registration_hold,
                                             crashed + self.session_hold_us)
                self.unregistered.add(ev["node"])
        else:  # unhealed
            self.unhealed = True

    def why_not(self, truth) -> str | None:
        """Why the run cannot be judged for liveness, or None when it can."""
        end = truth.end
        if end is None or not end.get("settled"):
            return "the run was cut off before its end (max_events)"
        if truth.active_controller is None:
            return "no controller was active at the end"
        if self.unhealed:
            return "the network was not whole at the end (a cut link, or a drop or hold rule)"
        return None

    def healed(self, truth) -> tuple[int, int] | None:
        """(when the last fault or election was, when the judging clock starts), or None when
        the run is not judged (`why_not`)."""
        if self.why_not(truth) is not None:
            return None
        start = max(self.quiet_from, self.registration_hold)
        if self.live_drop is not None:  # a lost AlterPartition waits out the socket timeout
            start = max(start, self.live_drop + CONTROLLER_SOCKET_TIMEOUT_US)
        return self.quiet_from, start


class AfterHeal(Invariant):
    """What the liveness rules share: the run's quiet clock, and which partitions are up.

    After `finish`, `judged` counts what the rule looked at (partitions, producer-partitions,
    consumer-partitions) and `note` says it in words: what was judged, or why nothing was. A
    rule that judged nothing holds vacuously, and a user should know that."""

    rule = "liveness"
    unit = "partitions"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.judged = 0
        self.note = "not judged: the run has not ended"

    def healed(self) -> tuple[int, int] | None:
        judged = self.ctx.quiet.healed(self.ctx.truth)
        if judged is None:
            self.note = f"not judged: {self.ctx.quiet.why_not(self.ctx.truth)}"
        return judged

    def judged_note(self, short: str, quoted_us: int | None = None,
                    over_us: int | None = None, why: str = "") -> None:
        """Set `note` from `judged`: the count, or `short` (why nothing qualified). `quoted_us`
        is the time `short` quotes, `over_us` when the quiet time it needs is over (default
        the same): when the run ended before the quoted time, the note says by how much the
        run fell short instead of quoting a time the run never reached; `why` (already at the
        end of `short`) says what pushed the quiet time out, and is kept."""
        unit = self.unit if self.judged != 1 else self.unit[:-1]  # units are plurals in -s
        end = self.ctx.truth.end["t"] if self.ctx.truth.end else None
        if not self.judged and quoted_us is not None and end is not None and quoted_us > end:
            over = quoted_us if over_us is None else over_us
            short = (f"the run ended at {end / 1e6:g} s, {(over - end) / 1e6:g} s before its "
                     f"quiet time was over (a longer run.settle_ms would let it judge){why}")
        self.note = (f"judged {self.judged} {unit}" if self.judged else f"not judged: {short}")

    def all_up(self, st: dict) -> bool:
        """Every replica of the partition is up: its broker runs, and the replica is not in a
        failed log directory (which only a restart brings back)."""
        truth = self.ctx.truth
        return not any(f"b{r}" in truth.down or (f"b{r}", st["tp"]) in truth.offline
                       for r in st["replicas"])
