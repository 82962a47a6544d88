"""Liveness after faults heal (ref §6 liveness; the kafka-tlaplus spec's liveness rules, §5.3).

- `under_replicated_after_heal` ("acked records end up fully replicated";
  `EventuallyAcknowledgedValueFullyReplicated`, `EventuallyReassignmentCompletes`): at the end
  of a settled run with an active controller and a healed network, a partition whose replicas
  are all up has a leader, an ISR equal to its replicas and no reassignment pending, unless
  the faults gave Kafka too little quiet time to get there.
- `consume_stalled_after_heal`: in such a run, a consumer reaches every record its
  partition's leader had committed a little (its fetch wait + 2 s) before the end, once the
  quiet time had passed by then.
- `produce_stalled_after_heal` (`ValuesEventuallyAcked`): in such a run, a batch a producer
  created once the quiet time (plus its request timeout and longest retry backoff) had passed, for a
  partition whose replicas are all up, does not expire unacknowledged (DELIVERY_TIMEOUT).

When a run can be judged, and from when, is `invariants.quiet`'s: the quiet time after the
last disturbance, and what the rules share (`AfterHeal`).
"""

from __future__ import annotations

import bisect

from invariants.quiet import AfterHeal, recovery_us
from sim.kafka.vocab import CONSUMER_REQUEST_TIMEOUT_MS, OUTCOME_NAMES

# the producer's own error code for an expired batch
DELIVERY_TIMEOUT = next(code for code, name in OUTCOME_NAMES.items() if name == "DELIVERY_TIMEOUT")


class UnderReplicatedAfterHeal(AfterHeal):
    """Liveness: after the faults heal and the quiet time Kafka's retries need
    (controller_request_retry_ms + 2 x replica_fetch_wait_max_ms + 3 s: 7 s by default; see
    docs/invariants.md), every partition whose replicas are all up has a leader, ISR ==
    replicas and no reassignment pending."""

    name = "under_replicated_after_heal"
    handlers = {"partition_state": "on_state", "topic_deleted": "on_deleted"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.reassigning: dict[str, int] = {}  # tp -> topic id of a pending reassignment
        self.short_since: dict[str, tuple] = {}  # tp -> (t, seq) it stopped being fully replicated

    def on_state(self, ev):
        tp, reason = ev["tp"], ev["reason"]
        if reason == "reassign_start":
            self.reassigning[tp] = ev["topic_id"]
        elif reason in ("reassign_complete", "reassign_cancel", "create_topic"):
            self.reassigning.pop(tp, None)
        full = (ev["leader"] >= 0 and sorted(ev["isr"]) == sorted(ev["replicas"])
                and tp not in self.reassigning)
        if full:
            self.short_since.pop(tp, None)
        elif tp not in self.short_since:
            self.short_since[tp] = (ev["t"], ev["seq"])

    def on_deleted(self, ev):
        for tp in [tp for tp, tid in self.reassigning.items() if tid == ev["topic_id"]]:
            del self.reassigning[tp]

    def finish(self):
        judged = self.healed()
        if judged is None:
            return
        last, healed = judged
        truth = self.ctx.truth
        end = truth.end
        bound = recovery_us(self.ctx.header["options"].get("cluster", {}))
        for tp in sorted(truth.parts):
            st = truth.parts[tp]
            since, seq = self.short_since.get(tp, (healed, None))
            if not self.all_up(st) or end["t"] - max(healed, since) < bound:
                continue
            self.judged += 1
            if seq is None:
                continue
            latest = truth.state_seq[tp]
            self.violate(end["t"], self._describe(tp, st, since, last),
                         seq, latest if latest != seq else None, end["seq"])
        self.judged_note(f"no partition had all its replicas up and {bound / 1e6:g} s of quiet "
                         f"time (after {healed / 1e6:g} s) by the end", healed, healed + bound)

    def _describe(self, tp: str, st: dict, since: int, last: int) -> str:
        if st["leader"] < 0:
            what = f"has no leader although replicas {st['replicas']} are all up"
        elif tp in self.reassigning:
            what = (f"still has a reassignment pending (replicas {st['replicas']}, "
                    f"ISR {st['isr']})")
        else:
            what = f"has ISR {st['isr']} short of replicas {st['replicas']}"
        return (f"{tp} {what}, since {since / 1e6:g} s; the last fault or controller election "
                f"was at {last / 1e6:g} s")


class ProduceStalledAfterHeal(AfterHeal):
    """Liveness: after the faults heal, a batch created that quiet time + the producer's
    `request_timeout_ms` + its longest retry backoff (`retry_backoff_max_ms`) later, for a
    partition whose replicas are all up (and, for acks=all, at least min.insync.replicas
    many), is acknowledged, not expired (DELIVERY_TIMEOUT).
    Judged once per producer and partition, at its first such batch."""

    name = "produce_stalled_after_heal"
    unit = "producer-partitions"
    handlers = {"batch": "on_batch", "produce_failed": "on_failed"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.created: dict[str, tuple] = {}  # bid -> (created_us, seq)
        self.times: dict[tuple, list] = {}  # (producer, tp) -> created_us of its batches, in order
        self.expired: list[dict] = []  # produce_failed events with DELIVERY_TIMEOUT

    def on_batch(self, ev):
        self.created[ev["bid"]] = (ev["created_us"], ev["seq"])
        self.times.setdefault((ev["node"], ev["tp"]), []).append(ev["created_us"])

    def on_failed(self, ev):
        if ev["error"] == DELIVERY_TIMEOUT:
            self.expired.append(ev)

    def finish(self):
        judged = self.healed()
        if judged is None:
            return
        last, healed = judged
        options = self.ctx.header["options"]
        base = recovery_us(options.get("cluster", {}))
        # a request in flight to a broker that died holds its slot for the request timeout;
        # then the retry waits at most the longest backoff (retry.backoff.max.ms, KIP-580)
        producers = {p.get("name"): p for p in options.get("producers", [])}
        after = {name: healed + base + (p.get("request_timeout_ms", 30000)
                                        + max(p.get("retry_backoff_max_ms", 1000),
                                              p.get("retry_backoff_ms", 100))) * 1000
                 for name, p in producers.items()}
        seen = set()
        for ev in self.expired:
            st = self.ctx.truth.parts.get(ev["tp"])
            created, seq = self.created.get(ev["bid"], (None, None))
            key = (ev["node"], ev["tp"])
            if created is None or key in seen or not self.writable(st, producers.get(ev["node"])):
                continue
            if created < after.get(ev["node"], healed + base + 31_000_000):
                continue
            seen.add(key)
            self.violate(ev["t"], f"{ev['node']}'s batch {ev['bid']} for {ev['tp']}, created at "
                         f"{created / 1e6:g} s, expired unacknowledged although replicas "
                         f"{st['replicas']} are all up; the last fault or controller election "
                         f"was at {last / 1e6:g} s", seq, ev["seq"])
        self.judged = len(seen | self._held(after, producers))
        first = min(after.values(), default=None)
        since = f" (from {first / 1e6:g} s)" if first is not None else ""
        self.judged_note(f"no producer created a batch after the quiet time + its request timeout "
                         f"+ retry backoff{since} and its delivery timeout before the end", first)

    def writable(self, st: dict | None, producer: dict | None) -> bool:
        """Can the partition take this producer's writes once healed: it exists, its replicas
        are all up, and for acks=all there are at least min.insync.replicas of them (with
        fewer, Kafka answers NOT_ENOUGH_REPLICAS for good, and expiry is the right outcome)."""
        if st is None or not self.all_up(st):
            return False
        min_isr = self.ctx.header["options"].get("cluster", {}).get("min_insync_replicas", 1)
        return (producer or {}).get("acks") != "all" or len(st["replicas"]) >= min_isr

    def _held(self, after: dict, producers: dict) -> set:
        """The (producer, partition) pairs with a batch the rule holds to account: one created
        after `after[producer]`, early enough to have expired by the end, for a partition whose
        replicas are all up."""
        end = self.ctx.truth.end["t"]
        held = set()
        for (node, tp), times in self.times.items():
            if node not in after or not self.writable(self.ctx.truth.parts.get(tp),
                                                      producers[node]):
                continue
            latest = end - producers[node].get("delivery_timeout_ms", 120000) * 1000
            i = bisect.bisect_left(times, after[node])
            if i < len(times) and times[i] <= latest:
                held.add((node, tp))
        return held


# Lost on a live link, these leave a consumer waiting out its request.timeout.ms. Not a loss
# whose connection closed: the consumer hears of the close (at once, or once a cut link heals:
# `sim.core.connections`) and asks again, as after a crash it sees.
CONSUMER_REQUESTS = frozenset({"Fetch", "Metadata", "OffsetsForLeaderEpoch", "ListOffsets"})
HEARD_OF = frozenset({"dst_down", "refused", "connection_closed", "connection_reset"})
CONSUMER_ANSWERS = frozenset({"FetchResponse", "MetadataResponse", "OffsetsForLeaderEpochResponse",
                              "ListOffsetsResponse"})
CATCH_UP_US = 2_000_000  # two retry.backoff.max.ms: a rest after an error, then a validation


class ConsumeStalledAfterHeal(AfterHeal):
    """Liveness: after the faults heal, a consumer catches up. At the end of a judged run, a
    consumer's position on each partition of its topic whose replicas are all up is at least
    the leader's HW at `cutoff` = end - (the consumer's fetch wait + 2 s), provided the quiet
    time had passed by `cutoff`. A request or answer of the kinds a consumer uses, lost on a
    live link, holds the judgement off for the consumer's request timeout (its
    `request_timeout_ms`, 30 s by default); so does a topic deleted during the run
    (positions are not kept per topic id)."""

    name = "consume_stalled_after_heal"
    unit = "consumer-partitions"
    handlers = {"drop": "on_drop", "hw": "on_hw", "consume": "on_consume",
                "validate_position": "on_position", "fetch_error": "on_position",
                "reset_position": "on_position",
                "topic_deleted": "on_deleted"}

    def __init__(self, ctx):
        super().__init__(ctx)
        consumers = ctx.header["options"].get("consumers", [])
        self.consumers = {c["name"]: c for c in consumers if "name" in c}
        self.hws: dict[str, list] = {}  # tp -> [(t, hw, seq)] of leader HW moves
        self.position: dict[tuple, tuple] = {}  # (consumer, tp) -> (offset, seq)
        self.client_drop = None  # t of the last consumer request or answer lost on a live link
        self.deleted_topics: set[str] = set()

    def on_drop(self, ev):
        if ev["reason"] in HEARD_OF:
            return
        msg, dst = ev.get("msg"), ev.get("dst")
        # an answer counts only on its way to a consumer (any answer, in a trace whose drops
        # do not name their destination)
        if (msg in CONSUMER_ANSWERS and (dst is None or dst in self.consumers)) \
                or (msg in CONSUMER_REQUESTS and ev["node"] in self.consumers):
            self.client_drop = ev["t"]

    def on_hw(self, ev):
        if ev["role"] == "leader" and self.consumers:
            for tp, _topic_id, hw, _epoch in ev["hws"]:
                self.hws.setdefault(tp, []).append((ev["t"], hw, ev["seq"]))

    def on_consume(self, ev):
        self.position[(ev["node"], ev["tp"])] = (ev["next_offset"], ev["seq"])

    def on_position(self, ev):
        self.position[(ev["node"], ev["tp"])] = (ev["position"], ev["seq"])

    def on_deleted(self, ev):
        self.deleted_topics.add(ev["topic"])

    def finish(self):
        judged = self.healed()
        if judged is None:
            return
        if not self.consumers:
            self.note = "not judged: the scenario has no consumers"
            return
        last, healed = judged
        lost = ""
        if self.client_drop is not None:
            timeout_ms = max(c.get("request_timeout_ms", CONSUMER_REQUEST_TIMEOUT_MS)
                             for c in self.consumers.values())
            healed = max(healed, self.client_drop + timeout_ms * 1000)
            lost = (f"; a consumer's request or answer lost at {self.client_drop / 1e6:g} s "
                    f"costs it its {timeout_ms / 1000:g} s request timeout")
        end = self.ctx.truth.end
        bound = recovery_us(self.ctx.header["options"].get("cluster", {}))
        for name in sorted(self.consumers):
            spec = self.consumers[name]
            cutoff = end["t"] - spec.get("fetch_max_wait_ms", 500) * 1000 - CATCH_UP_US
            started = spec.get("start_ms", 0) * 1000
            if cutoff < max(healed, started) + bound or spec.get("topic") in self.deleted_topics:
                continue
            for tp in sorted(self.ctx.truth.parts):
                if tp.rpartition("-")[0] == spec.get("topic"):
                    self._judge(name, tp, cutoff, last)
        self.judged_note(f"no consumer had committed records to reach after the quiet time "
                         f"(from {(healed + bound) / 1e6:g} s) and {CATCH_UP_US / 1e6:g} s + its "
                         f"fetch wait before the end{lost}", healed + bound, why=lost)

    def _judge(self, name: str, tp: str, cutoff: int, last: int) -> None:
        st = self.ctx.truth.parts[tp]
        committed = [(hw, seq) for t, hw, seq in self.hws.get(tp, ()) if t <= cutoff]
        if not committed or not self.all_up(st):
            return
        self.judged += 1
        hw, hw_seq = committed[-1]
        position, seq = self.position.get((name, tp), (0, None))
        if position < hw:
            self.violate(self.ctx.truth.end["t"], f"{name} ends at offset {position} of {tp} "
                         f"although its leader had committed up to {hw} by {cutoff / 1e6:g} s; "
                         f"the last fault or controller election was at {last / 1e6:g} s",
                         hw_seq, seq, self.ctx.truth.end["seq"])


# The after-heal rules in the order reports show them (U/P/C: under-replicated, produce, consume).
AFTER_HEAL = (UnderReplicatedAfterHeal.name, ProduceStalledAfterHeal.name,
              ConsumeStalledAfterHeal.name)


def judged_summary(counts: dict) -> str:
    """'U/P/C' from {rule: runs (or items) it judged}; '-' for a rule not checked."""
    return "/".join(str(counts[rule]) if rule in counts else "-" for rule in AFTER_HEAL)


def judged_shares(cell_metrics: dict) -> str:
    """'U/P/C' percentages from a sweep cell's `mean_judged_<rule>` metrics: the share of its
    runs in which each rule judged something ('-' for a rule not checked)."""
    shares = [cell_metrics.get(f"mean_judged_{rule}") for rule in AFTER_HEAL]
    return "/".join("-" if s is None else f"{100 * s:.0f}" for s in shares)
