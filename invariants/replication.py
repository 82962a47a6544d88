"""Replication invariants: acked durability, committed-log agreement, monotonic HW."""

from __future__ import annotations

from invariants.base import Invariant


def final_leader_log(ctx, tp: str):
    """The log of the partition's leader per the controller at the end, or None. A leader
    whose failure is not yet acted on at the end (a ZooKeeper session that has not expired, a
    broker not yet fenced), down or restarted since the partition's state was last written,
    stands for the election that failure will bring: the log is that of the replica a clean
    election would choose, the first other live ISR member in assignment order
    (`offlinePartitionLeaderElection`; `PartitionChangeBuilder`'s `electLeader` once the
    old incarnation is fenced: a KRaft broker restarted within its session is refused
    registration and serves nobody until then, `BrokerServer.startup` waiting to be
    unfenced), or the leader's own when no other ISR member is live (it leads again)."""
    st = ctx.truth.parts.get(tp)
    if st is None or st["leader"] < 0:
        return None
    leader, truth = st["leader"], ctx.truth
    failed = f"b{leader}" in truth.down \
        or truth.crash_seq.get(f"b{leader}", -1) > truth.state_seq.get(tp, -1)
    if failed:
        live = [r for r in st["replicas"] if r in st["isr"] and r != leader
                and f"b{r}" not in truth.down]
        leader = live[0] if live else leader
    return ctx.logs.get(f"b{leader}", tp)


class AckedWriteLost(Invariant):
    """acks=all: every acknowledged batch is in the final leader's log (or was removed by
    retention below its log start offset) (ref §6 item 7). acks=1 losses are a metric, and so
    are batches a power loss took when every replica of the partition lost power (no replica
    then kept its whole log) or power losses took them from every replica that held them: such
    a loss is the configuration's (Kafka leaves flushing to the OS), not the protocol's
    (`acked_lost_to_power_loss` counts them). A batch one replica's power loss took while
    another that held it never lost power is lost by the election: before KIP-966 Kafka elects
    the replica that lost it when it was the ISR's last member
    (`kip966-power-loss-leader-legacy`). A batch acknowledged before an admin's ElectLeaders
    (UNCLEAN) elected a replica outside the partition's ISR is the operator's choice to lose
    (KIP-460), not the protocol's; one acknowledged after it is judged."""

    name = "acked_write_lost"
    handlers = {"ack": "on_ack"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.acked: list[tuple] = []  # (tp, bid, base_offset, seq, t)

    def on_ack(self, ev):
        if ev["acks"] == "all":
            self.acked.append((ev["tp"], ev["bid"], ev["base_offset"], ev["seq"], ev["t"]))

    def finish(self):
        for tp, bid, base, seq, t in lost_batches(self.ctx, self.acked):
            if self.ctx.logs.lost_to_every_replica_power(tp, bid):
                continue
            if any(t < at for at, _seq in self.ctx.truth.operator_unclean.get(tp, ())):
                continue  # acknowledged before the operator chose an unclean leader
            self.violate(self.ctx.end_t, f"acknowledged batch {bid} (offset {base}) of {tp} "
                         f"is missing from the final log", seq)


def lost_batches(ctx, acked: list[tuple]) -> list[tuple]:
    """The acknowledged (tp, bid, base_offset, ...) items missing from their partition's final
    leader log, leaving out those below its log start (retention removed them). An ack without
    an offset (DUPLICATE_SEQUENCE_NUMBER) is placed where a leader last appended the batch."""
    by_tp: dict[str, list] = {}
    for item in acked:
        by_tp.setdefault(item[0], []).append(item)
    lost = []
    for tp in sorted(by_tp):
        log = final_leader_log(ctx, tp)
        if log is None:
            continue
        present = {row[3] for row in log.rows}
        topic_id = ctx.truth.parts[tp]["topic_id"]
        for item in by_tp[tp]:
            if ctx.logs.bid_topic.get(item[1], topic_id) != topic_id:
                continue  # written to an earlier incarnation of a recreated topic
            base = item[2] if item[2] >= 0 else ctx.logs.bid_base.get(item[1], -1)
            if item[1] not in present and not (0 <= base < log.log_start):
                lost.append(item)
    return lost


class LogDivergence(Invariant):
    """Two replicas never hold different batches at an offset below both their high
    watermarks (ref §6 item 6; RaftEventSimulationTest ConsistentCommittedData). A committed
    batch that a power loss took may be replaced: the log lost that history rather than
    forked, as when Kafka elects a replica that lost it (before KIP-966); so may what an
    admin's ElectLeaders (UNCLEAN) gave up, from the elected replica's log end on (the
    operator chose that history's loss). A replica that still
    holds it is judged against the new history once its HW moves again, so one that keeps it
    while following the new leader (HW truncation, KIP-101's second case) is caught."""

    name = "log_divergence"
    handlers = {"hw": "on_hw", "truncate": "on_truncate", "log_created": "on_created",
                "partition_state": "on_state"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.committed: dict[tuple, dict] = {}  # (tp, topic_id) -> base -> (bid, node, seq)
        self.checked: dict[tuple, int] = {}  # (node, tp) -> offsets checked up to

    def on_created(self, ev):
        self.checked[(ev["node"], ev["tp"])] = 0

    def on_truncate(self, ev):
        key = (ev["node"], ev["tp"])
        self.checked[key] = min(self.checked.get(key, 0), ev["to_offset"])

    def on_hw(self, ev):
        if ev["role"] == "recovered":
            # a restart reading its checkpointed HW back commits nothing new: what it covers
            # is judged when the HW next moves, after the replica has truncated where it must
            return
        node = ev["node"]
        for tp, topic_id, hw, _epoch in ev["hws"]:
            key = (node, tp)
            lo = self.checked.get(key, 0)
            log = self.ctx.logs.get(node, tp)
            if log is None or hw <= lo:
                continue
            canon = self.committed.setdefault((tp, topic_id), {})
            for base, _count, _e, bid in log.rows_between(lo, hw):
                first = canon.setdefault(base, (bid, node, ev["seq"]))
                if first[0] == bid:
                    continue
                if first[0] in self.ctx.logs.power_lost:
                    canon[base] = (bid, node, ev["seq"])  # its history was lost, not forked
                    self._rejudge_from(tp, base)
                else:
                    self.violate(ev["t"], f"{tp} offset {base}: {node} has {bid} below its HW {hw} "
                                 f"but {first[1]} committed {first[0]}", first[2], ev["seq"])
            self.checked[key] = hw

    def on_state(self, ev):
        """An admin's unclean election (`Truth.operator_unclean`): the committed history of
        the partition from the new leader's log end on is given up."""
        tp = ev["tp"]
        if (ev["t"], ev["seq"]) not in self.ctx.truth.operator_unclean.get(tp, ()):
            return
        log = self.ctx.logs.get(f"b{ev['leader']}", tp)
        end = log.rows[-1][0] + log.rows[-1][1] if log is not None and log.rows else 0
        for (ctp, _topic_id), canon in self.committed.items():
            if ctp == tp:
                for base in [b for b in canon if b >= end]:
                    del canon[base]
        self._rejudge_from(tp, end)

    def _rejudge_from(self, tp: str, base: int) -> None:
        """The committed history of `tp` changed at `base`: every replica's rows from there on
        are judged again the next time its HW covers them."""
        for key, lo in self.checked.items():
            if key[1] == tp and lo > base:
                self.checked[key] = base


class HighWatermarkMonotonic(Invariant):
    """While a broker leads a partition at one leader epoch, its HW never decreases
    (RaftEventSimulationTest MonotonicHighWatermark; ref §6 item 5). A crash ends the
    leadership: a restarted broker starts from its checkpointed HW, and when no controller saw
    it go (a controller failover hid the restart), it is handed the same epoch again and leads
    on from there, which is a new leadership, not a lowered HW."""

    name = "high_watermark_monotonic"
    handlers = {"hw": "on_hw", "crash": "on_crash"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.last: dict[tuple, tuple] = {}

    def on_crash(self, ev):
        node = ev["node"]
        for key in [k for k in self.last if k[0] == node]:
            del self.last[key]

    def on_hw(self, ev):
        if ev["role"] != "leader":
            return
        for tp, topic_id, hw, epoch in ev["hws"]:
            key = (ev["node"], tp, topic_id, epoch)
            prev = self.last.get(key)
            if prev is not None and hw < prev[0]:
                self.violate(ev["t"], f"{ev['node']} lowered the HW of {tp} from {prev[0]} to {hw} "
                             f"at leader epoch {epoch}", prev[1], ev["seq"])
            self.last[key] = (hw, ev["seq"])
