"""Idempotent-producer invariants (ref §2, §6 item 8; KIP-192, KIP-185)."""

from __future__ import annotations

from invariants.base import Invariant
from invariants.replication import final_leader_log

OOOS = 45


class IdempotenceFold:
    """Which producers are idempotent, and the (pid, epoch, seq) of every appended batch."""

    def __init__(self):
        self.mode: dict[str, str] = {}
        self.seq_of: dict[str, tuple] = {}  # bid -> (pid, producer_epoch, base_seq)
        self.producer_of: dict[str, str] = {}

    def step(self, ev):
        if ev["kind"] == "client_config":
            self.mode[ev["node"]] = ev["idempotence"]
        elif ev["kind"] == "append":
            for b in ev["batches"]:
                self.producer_of[b["bid"]] = ev["producer"]
                if "pid" in b:
                    self.seq_of[b["bid"]] = (b["pid"], b["producer_epoch"], b["base_seq"])


class DuplicateAppend(Invariant):
    """The same batch (same producer id, epoch, sequence) appears twice in a partition's final
    log, for an idempotent producer. Non-idempotent duplicates are a metric."""

    name = "duplicate_append"

    def finish(self):
        for tp in sorted(self.ctx.truth.parts):
            log = final_leader_log(self.ctx, tp)
            if log is None:
                continue
            seen = {}
            for row in log.rows:
                bid = row[3]
                if bid in seen and bid in self.ctx.idem.seq_of:
                    self.violate(self.ctx.end_t, f"{tp}: batch {bid} {self.ctx.idem.seq_of[bid]} "
                                 f"appended at offsets {seen[bid]} and {row[0]}", self.ctx.end_seq)
                seen.setdefault(bid, row[0])


class OutOfOrderAppend(Invariant):
    """Within one producer id and epoch, log order equals sequence order."""

    name = "out_of_order_append"

    def finish(self):
        for tp in sorted(self.ctx.truth.parts):
            log = final_leader_log(self.ctx, tp)
            if log is None:
                continue
            last: dict[tuple, tuple] = {}
            for row in log.rows:
                ident = self.ctx.idem.seq_of.get(row[3])
                if ident is None:
                    continue
                key = ident[:2]
                prev = last.get(key)
                if prev is not None and ident[2] <= prev[0] and ident[2] != 0:
                    self.violate(self.ctx.end_t, f"{tp}: producer {key} sequence {ident[2]} at offset "
                                 f"{row[0]} follows sequence {prev[0]} at offset {prev[1]}",
                                 self.ctx.end_seq)
                last[key] = (ident[2], row[0])


class SpuriousOutOfOrderSequence(Invariant):
    """The application gets OutOfOrderSequence although none of its acknowledged records of that
    partition is lost: each is in the leader's log or was removed by retention (KIP-192 goal:
    "when you get [OutOfOrderSequence], it should always mean data loss", ref §2.5). Only an
    error on a batch the client sent in sequence is judged: an OutOfOrderSequence that follows
    an earlier failed batch (`in_sequence` false) reports that failure, which a client surfaces
    when its retries run out at the delivery timeout (`Sender.failBatch`)."""

    name = "spurious_out_of_order_sequence"
    handlers = {"ack": "on_ack", "produce_failed": "on_failed"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.acked: dict[tuple, list] = {}

    def on_ack(self, ev):
        self.acked.setdefault((ev["node"], ev["tp"]), []).append((ev["bid"], ev["base_offset"]))

    def on_failed(self, ev):
        if ev["error"] != OOOS or ev.get("in_sequence") is False:
            return
        st = self.ctx.truth.parts.get(ev["tp"])
        log = self.ctx.logs.get(f"b{st['leader']}", ev["tp"]) if st and st["leader"] >= 0 else None
        if log is None:
            return
        present = {row[3] for row in log.rows}
        bid_topic = self.ctx.logs.bid_topic
        acked = [a for a in self.acked.get((ev["node"], ev["tp"]), [])
                 if bid_topic.get(a[0]) == st["topic_id"]]  # this incarnation of the topic only
        lost = [bid for bid, off in acked if bid not in present and not (0 <= off < log.log_start)]
        if not lost:
            self.violate(ev["t"], f"{ev['node']} got OutOfOrderSequence on {ev['tp']} though all "
                         f"{len(acked)} acknowledged batches are intact", ev["seq"])


class UnreportedDataLoss(Invariant):
    """An idempotent producer's acknowledged batch is gone from the log, the producer wrote on
    to that partition (a batch acknowledged later is in the log), and it never surfaced
    OutOfOrderSequence for that partition after the lost batch's ack (the hole a naive
    UNKNOWN_PRODUCER_ID fix opens, ref §2.5 steps 3-4: the loss is reported as that error; an
    unrelated failure such as a delivery timeout reports nothing). Non-idempotent acks=1
    losses are expected and counted as a metric. The promise is KAFKA-5793's: a broker that
    answers an unknown producer with an error (1.0-2.4 UNKNOWN_PRODUCER_ID with the log start
    offset, 0.11 OUT_OF_ORDER_SEQUENCE_NUMBER) tells the client of the loss, and the client must
    not retry it away. Each broker is judged by its own profile (per-node versions): a loss is
    not judged when a broker that accepts an unknown producer (the 2.5+ `accept`, which takes
    the next sequence as a fresh start, with no error to give) appended the producer's batch
    of that partition after the lost one's ack, or, when none did after it, ever. The client's profile
    is not asked: a KIP-360 client (2.5+) that meets a pre-2.5 broker's UNKNOWN_PRODUCER_ID
    bumps its epoch and retries it whatever the log start offset ("For the idempotent
    producer, always retry UNKNOWN_PRODUCER_ID errors", `TransactionManager.canRetry` at
    2.5.0), and so leaves a loss the broker reported unreported. Only the producer's own
    session is held to it: a producer process that restarted is a new KafkaProducer with a new
    producer id (no transactional.id), and "the producer can only guarantee idempotence for
    messages sent within a single session" (KafkaProducer javadoc, 3.7.0), so what a later
    incarnation wrote is not the old one writing on past its hole."""

    name = "unreported_data_loss"
    handlers = {"ack": "on_ack", "produce_failed": "on_failed", "append": "on_append",
                "restart": "on_restart"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.acked: list[tuple] = []
        self.session: dict[str, int] = {}  # producer -> its restarts so far
        self.session_of: dict[str, int] = {}  # bid -> the session of its producer that acked it
        self.last_report: dict[tuple, int] = {}  # (producer, tp) -> time of its last OOOS
        # (producer, tp) -> [(time, whether the appending broker accepts an unknown producer)]
        self.appended: dict[tuple, list[tuple[int, bool]]] = {}

    def on_ack(self, ev):
        self.acked.append((ev["tp"], ev["bid"], ev["base_offset"], ev["seq"], ev["node"], ev["t"]))
        self.session_of[ev["bid"]] = self.session.get(ev["node"], 0)

    def on_restart(self, ev):
        self.session[ev["node"]] = self.session.get(ev["node"], 0) + 1

    def on_failed(self, ev):
        if ev["error"] == OOOS:
            self.last_report[(ev["node"], ev["tp"])] = ev["t"]

    def on_append(self, ev):
        accepts = self.ctx.protocol_of(ev["node"]).get("unknown_producer") == "accept"
        for b in ev["batches"]:
            self.appended.setdefault((ev["producer"], b["tp"]), []).append((ev["t"], accepts))

    def _no_signal(self, producer: str, tp: str, acked_t: int) -> bool:
        """Whether a broker that accepts an unknown producer may have met the hole: one
        appended the producer's batch of `tp` after `acked_t` (or ever, when none did after)."""
        appended = self.appended.get((producer, tp), [])
        after = [accepts for t, accepts in appended if t > acked_t]
        return any(after or [accepts for _t, accepts in appended])

    def finish(self):
        from invariants.replication import lost_batches
        lost = lost_batches(self.ctx, self.acked)
        lost_bids = {item[1] for item in lost}
        # (producer, session, tp) -> the last ack of a batch still in the log
        last_kept: dict[tuple, int] = {}
        for tp, bid, _base, _seq, node, acked_t in self.acked:
            if bid not in lost_bids:
                key = (node, self.session_of[bid], tp)
                last_kept[key] = max(acked_t, last_kept.get(key, -1))
        for tp, bid, base, seq, node, acked_t in lost:
            if self._no_signal(node, tp, acked_t):
                continue  # a broker that takes an unknown producer's batch has no error to give
            reported = self.last_report.get((node, tp), -1) >= acked_t  # only a later error reports it
            # The producer went on past the hole: a later acknowledged batch of the same session
            # is in the log. One that has not written there since the loss (the run ended first,
            # or its process restarted) has not yet had the chance to report it.
            went_on = last_kept.get((node, self.session_of[bid], tp), -1) > acked_t
            if bid in self.ctx.idem.seq_of and went_on and not reported:
                self.violate(self.ctx.end_t, f"{bid} (offset {base}) of {tp} was acknowledged and is "
                             f"lost, yet {node} wrote on to {tp} and never reported an error "
                             "for it", seq)


class IdempotenceModeViolated(Invariant):
    """A `required` producer wrote without idempotence, or a `requested` producer failed a send
    only because the topic's message format is old (KIP-185/192 modes, ref §2.6)."""

    name = "idempotence_mode_violated"
    handlers = {"append": "on_append", "produce_failed": "on_failed"}

    def on_append(self, ev):
        if self.ctx.idem.mode.get(ev["producer"]) == "required":
            for b in ev["batches"]:
                if "pid" not in b:
                    self.violate(ev["t"], f"required-idempotence producer {ev['producer']} wrote "
                                 f"{b['bid']} to {b['tp']} without a producer id", ev["seq"])

    def on_failed(self, ev):
        if ev.get("error_name") == "IDEMPOTENCE_UNSUPPORTED_FORMAT" \
                and self.ctx.idem.mode.get(ev["node"]) == "requested":
            self.violate(ev["t"], f"requested-idempotence producer {ev['node']} failed a send to "
                         f"{ev['tp']} because of the topic's message format", ev["seq"])
