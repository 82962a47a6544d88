"""Client metadata invariants (ref §3.1, §3.3; KAFKA-7738, KIP-951)."""

from __future__ import annotations

from invariants.base import Invariant
from invariants.replication import final_leader_log


class ClientLeaderEpochRegression(Invariant):
    """A client's known leader epoch for a partition never goes down, except when the topic is
    recreated under a new topic id (ref §3.1, §4 rows 9-10). A client that crashed starts
    over: its metadata cache is in memory only."""

    name = "client_leader_epoch_regression"
    handlers = {"client_epoch": "on_epoch", "crash": "on_crash"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.known: dict[tuple, tuple] = {}

    def on_crash(self, ev):
        for key in [k for k in self.known if k[0] == ev["node"]]:
            del self.known[key]

    def on_epoch(self, ev):
        key = (ev["node"], ev["tp"])
        prev = self.known.get(key)
        if prev is not None and prev[1] == ev["topic_id"] and ev["leader_epoch"] < prev[0]:
            self.violate(ev["t"], f"{ev['node']} went back from leader epoch {prev[0]} to "
                         f"{ev['leader_epoch']} for {ev['tp']} (from {ev.get('from')})",
                         prev[2], ev["seq"])
        self.known[key] = (ev["leader_epoch"], ev["topic_id"], ev["seq"])


class LeaderHintMisapplied(Invariant):
    """A KIP-951 CurrentLeader hint is applied only when strictly newer than the client's epoch
    and naming a broker that exists (ref §3.3.2)."""

    name = "leader_hint_misapplied"
    handlers = {"client_epoch": "on_epoch"}

    def on_epoch(self, ev):
        if ev["source"] != "hint":
            return
        if ev["leader_epoch"] <= ev["previous_epoch"]:
            self.violate(ev["t"], f"{ev['node']} applied a hint for {ev['tp']} at epoch "
                         f"{ev['leader_epoch']}, not newer than its {ev['previous_epoch']}", ev["seq"])
        elif not 1 <= ev["leader"] <= self.ctx.brokers:
            self.violate(ev["t"], f"{ev['node']} applied a hint naming unknown node {ev['leader']}",
                         ev["seq"])


class ConsumerSkippedRecord(Invariant):
    """A consumer never reads past a batch of the final committed log without reading it: if it
    read a batch of the final leader's log (below its HW) at offset o, it read every batch of
    that log below o too, each at its offset (KIP-320 client side, KAFKA-7747; ref §1.2).
    Without position validation a consumer that read records an unclean election later
    truncated goes on from its old position on the new leader, past the records written there
    in between. A consumer still waiting to validate has read nothing of the final log past
    them, so it is not judged yet. A reset (`reset_position`: the first position, and each
    after OFFSET_OUT_OF_RANGE or a validation that found no offset) starts a new run at the
    offset it gave: the leader the consumer asked said its log started (`earliest`) or ended
    (`latest`, Kafka's default) there, so a run is judged from that offset up, and a batch
    the final log holds below it, which only a history an unclean election put back can hold,
    is not the consumer's to read (Kafka's reset position carries no epoch,
    `OffsetFetcherUtils.resetPositionIfNeeded`, and KIP-320 cannot tell the two histories apart
    when the new leader never had the position's epoch). A batch read in any run counts."""

    name = "consumer_skipped_record"
    handlers = {"consume": "on_consume", "reset_position": "on_reset"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.read: dict[tuple, dict] = {}  # (consumer, tp) -> {(base_offset, bid): seq}
        # (consumer, tp) -> its runs: [start offset, the (base_offset, bid) keys read in it]
        self.runs: dict[tuple, list] = {}

    def on_consume(self, ev):
        key = (ev["node"], ev["tp"])
        read = self.read.setdefault(key, {})
        runs = self.runs.setdefault(key, [])
        if not runs:
            runs.append([0, set()])
        # a trace from before consume events named their batches cannot be judged
        for base, bid in ev.get("read", ()):
            read.setdefault((base, bid), ev["seq"])
            runs[-1][1].add((base, bid))

    def on_reset(self, ev):
        if ev["action"] == "reset":
            self.runs.setdefault((ev["node"], ev["tp"]), []).append([ev["position"], set()])

    def finish(self):
        for (node, tp), read in sorted(self.read.items()):
            log = final_leader_log(self.ctx, tp)
            if log is None:
                continue
            committed = [(row[0], row[3]) for row in log.rows_between(log.log_start, log.hw)
                         if row[0] + row[1] <= log.hw]
            for start, keys in self.runs.get((node, tp), []):
                mine = [key for key in committed if key[0] >= start]
                furthest = max((i for i, key in enumerate(mine) if key in keys), default=0)
                missed = next((key for key in mine[:furthest] if key not in read), None)
                if missed is not None:
                    base, bid = mine[furthest]
                    self.violate(self.ctx.end_t, f"{node} read {tp} at offset {base} (batch "
                                 f"{bid}) but never the committed batch {missed[1]} at offset "
                                 f"{missed[0]} below it", read[mine[furthest]])
                    break
