"""KRaft invariants: the metadata log's safety, brokers applying it in order, a fenced
broker's acknowledgements, a demoted leader's appends, a controller's AlterPartition answers
waiting for their commit, and brokers that reach the quorum leader catching up with it.

Contract: folds over the KRaft trace kinds (`quorum_leader`, `metadata_commit`,
`metadata_apply`, `metadata`, `crash`, `restart`) and, for `fenced_broker_ack` and
`demoted_leader_append`, the data plane's `append`, the ProduceResponse `send` and the shared
folds; a ZooKeeper-mode trace has no metadata log, so they hold there vacuously (a ZooKeeper
broker's `metadata` is UpdateMetadata's, which may run ahead of its LeaderAndIsr by design:
`demoted_leader_append` judges KRaft runs only). What is committed is what a quorum leader's
`metadata_commit` says; `isr_answer_before_commit` reads the controller's `alter_partition`,
`partition_state` (recorded as a partition record commits) and AlterPartitionResponse `send`.
"""

from __future__ import annotations

import json

from invariants.base import Invariant
from sim.kafka.vocab import FETCH_TIMEOUT_US, META_RETRY_BACKOFF_US, broker_id


class MetadataLogSafety(Invariant):
    """Raft's safety for the metadata log (KIP-595; Raft's Election Safety, Leader
    Completeness and State Machine Safety): at most one quorum leader per epoch; a leader
    elected holds at least every record committed before (its log end reaches the highest
    committed offset); and a record committed at an offset is never replaced by another."""

    name = "metadata_log_safety"
    handlers = {"quorum_leader": "on_leader", "metadata_commit": "on_commit"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.leaders: dict[int, tuple[str, int]] = {}  # epoch -> (node, seq)
        self.committed: dict[int, tuple[str, int]] = {}  # offset -> (record text, seq)
        self.high_watermark = (0, None)  # (highest committed end offset, its seq)

    def on_leader(self, ev):
        first = self.leaders.setdefault(ev["epoch"], (ev["node"], ev["seq"]))
        if first[0] != ev["node"]:
            self.violate(ev["t"], f"{first[0]} and {ev['node']} both lead the quorum in "
                         f"epoch {ev['epoch']}", first[1], ev["seq"])
        hw, seq = self.high_watermark
        if ev["end_offset"] < hw:
            self.violate(ev["t"], f"{ev['node']} leads epoch {ev['epoch']} with its log ending "
                         f"at {ev['end_offset']}, below the committed offset {hw}", seq, ev["seq"])

    def on_commit(self, ev):
        for offset, epoch, record in ev["records"]:
            text = json.dumps([epoch, record], sort_keys=True)
            first = self.committed.setdefault(offset, (text, ev["seq"]))
            if first[0] != text:
                self.violate(ev["t"], f"the record committed at metadata offset {offset} "
                             f"changed: {first[0]} became {text}", first[1], ev["seq"])
        if ev["high_watermark"] > self.high_watermark[0]:
            self.high_watermark = (ev["high_watermark"], ev["seq"])


class MetadataAppliedInOrder(Invariant):
    """Each broker applies the metadata log's committed records in log order, from offset 0
    after each start, none skipped and none twice (`MetadataLoader`), and only committed ones
    (below the highest high watermark a quorum leader has recorded)."""

    name = "metadata_applied_in_order"
    handlers = {"metadata_apply": "on_apply", "metadata_commit": "on_commit",
                "crash": "on_restart", "restart": "on_restart"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.expected: dict[str, tuple[int, int | None]] = {}  # broker -> (next offset, seq)
        self.high_watermark = 0

    def on_commit(self, ev):
        self.high_watermark = max(self.high_watermark, ev["high_watermark"])

    def on_restart(self, ev):
        self.expected.pop(ev["node"], None)

    def on_apply(self, ev):
        node = ev["node"]
        expected, seq = self.expected.get(node, (0, None))
        if ev["from_offset"] != expected:
            self.violate(ev["t"], f"{node} applied metadata records from offset "
                         f"{ev['from_offset']} when its next record was {expected}",
                         seq, ev["seq"])
        if ev["to_offset"] > self.high_watermark:
            self.violate(ev["t"], f"{node} applied metadata records up to {ev['to_offset']}, "
                         f"beyond the committed {self.high_watermark}", ev["seq"])
        self.expected[node] = (ev["to_offset"], ev["seq"])


class FencedBrokerAck(Invariant):
    """A broker the controller has fenced and taken out of a partition's ISR acknowledges no
    acks=all write of that partition that a replica of the ISR the controller committed
    lacks. Kafka: the old leader, still believing it leads, counts its maximal ISR for the
    high watermark (`Partition.maximalIsr`: a shrink counts only once committed), a superset
    of the ISR the controller committed without it; so it can only acknowledge what those
    replicas already fetched from it, and once they apply the new leadership its high
    watermark stops and its acks=all requests wait until they time out. It may still answer
    after the removal committed (the followers apply it at their own pace): that is harmless
    and allowed. Fencing is read from the committed metadata log (`metadata_commit`), the ISR
    from `partition_state`, an acknowledgement from the broker's ProduceResponse to an acks=all
    `append` (by producer and correlation id), the replicas' logs from the shared fold. Not
    judged with unclean leader election (the option on, where the controller reads it), which
    may rebuild the ISR from a replica that lacks acknowledged writes by design."""

    name = "fenced_broker_ack"
    handlers = {"metadata_commit": "on_commit", "append": "on_append", "send": "on_send",
                "crash": "on_crash"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fenced: dict[int, int] = {}  # broker -> seq of the committed record fencing it
        self.applied = -1  # the highest metadata offset folded
        self.pending: dict[tuple[str, str, int], tuple[list, int]] = {}  # -> (rows, seq)
        options = ctx.header["options"]
        # KRaft reads the option only from 3.9 (`kraft_unclean_election_config`; a trace
        # written before the switch existed is taken as reading it)
        unclean = (options["cluster"].get("unclean_leader_election", False)
                   and options.get("protocol", {}).get("kraft_unclean_election_config", True))
        self.judged = not unclean

    def on_commit(self, ev):
        for offset, _epoch, record in ev["records"]:
            if offset <= self.applied:
                continue
            self.applied = offset
            if record.get("kind") in ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord"):
                if record.get("fenced"):
                    self.fenced[record["broker"]] = ev["seq"]
                else:
                    self.fenced.pop(record["broker"], None)

    def on_append(self, ev):
        if ev["acks"] == -1 and ev["batches"]:
            self.pending[(ev["node"], ev["producer"], ev["corr"])] = (ev["batches"], ev["seq"])

    def on_crash(self, ev):
        self.pending = {k: v for k, v in self.pending.items() if k[0] != ev["node"]}

    def on_send(self, ev):
        if ev["msg"] != "ProduceResponse":
            return
        found = self.pending.pop((ev["node"], ev["dst"], ev.get("corr")), None)
        if found is None or not self.judged:
            return
        broker = broker_id(ev["node"])
        if broker not in self.fenced:
            return
        failed = {tp for tp, _error in ev.get("errs", ())}
        rows, append_seq = found
        for row in rows:
            if row["tp"] not in failed:
                self._check(ev, broker, row, append_seq)

    def _check(self, ev, broker: int, row: dict, append_seq: int) -> None:
        st = self.ctx.truth.parts.get(row["tp"])
        if st is None or broker in st["isr"] or st["topic_id"] != row["topic_id"]:
            return
        lacking = [r for r in st["isr"] if not _holds(self.ctx.logs.get(f"b{r}", row["tp"]),
                                                      row["bid"])]
        if lacking:
            self.violate(ev["t"], f"{ev['node']}, fenced and out of {row['tp']}'s ISR "
                         f"{st['isr']} (partition epoch {st['partition_epoch']}), acknowledged "
                         f"acks=all batch {row['bid']} (offset {row['base_offset']}) that "
                         f"{', '.join(f'b{r}' for r in lacking)} of that ISR lack",
                         self.fenced[broker], self.ctx.truth.state_seq.get(row["tp"]),
                         append_seq, ev["seq"])


def _holds(log, bid: str) -> bool:
    return log is not None and any(row[3] == bid for row in log.rows)


class MetadataLag:
    """Run metrics of a KRaft run (none in ZooKeeper mode): the committed high watermark of
    the metadata log, and for each broker its final metadata offset and how long committed
    records waited before it applied them (commit to apply, ms: p50 and max), the lag that
    lets a broker answer Metadata with a leader the controller already replaced."""

    KINDS = frozenset({"metadata_commit", "metadata_apply", "crash", "restart"})

    def __init__(self):
        self.committed_at: dict[int, int] = {}  # offset -> when it first committed
        self.high_watermark = 0
        self.applied: dict[str, int] = {}
        self.waits: dict[str, list[int]] = {}

    def step(self, ev: dict) -> None:
        kind = ev["kind"]
        if kind == "metadata_commit":
            for offset, _epoch, _record in ev["records"]:
                self.committed_at.setdefault(offset, ev["t"])
            self.high_watermark = max(self.high_watermark, ev["high_watermark"])
        elif kind == "metadata_apply":
            node = ev["node"]
            waits = self.waits.setdefault(node, [])
            for offset in range(ev["from_offset"], ev["to_offset"]):
                if offset in self.committed_at:
                    waits.append(ev["t"] - self.committed_at[offset])
            self.applied[node] = ev["to_offset"]
        elif kind in ("crash", "restart") and ev["node"] in self.applied:
            self.applied[ev["node"]] = 0

    def result(self) -> dict:
        """{} without KRaft events; else `metadata_high_watermark` and `metadata_lag`."""
        if not self.committed_at:
            return {}
        lag = {}
        for node in sorted(self.applied, key=lambda n: (len(n), n)):
            waits = sorted(self.waits.get(node, ()))
            lag[node] = {"applied_offset": self.applied[node],
                         "p50_ms": round(waits[len(waits) // 2] / 1000, 3) if waits else None,
                         "max_ms": round(waits[-1] / 1000, 3) if waits else None}
        return {"metadata_high_watermark": self.high_watermark, "metadata_lag": lag}


def metadata_catch_up_us(cluster: dict) -> tuple[int, int]:
    """(find, fetch) in µs, from the cluster options (ms): `find` is how long after the last
    fault step or controller election a broker that reaches the quorum leader may take to
    fetch from it: a stale leader it still follows resigns after 1.5 x
    quorum.fetch.timeout.ms (check-quorum), and each voter it tries in turn costs a Fetch's
    wait plus its timeout and a retry backoff; `fetch` is how long it may then take to apply
    what the leader had committed: two Fetch waits (a parked Fetch, then the one that carries
    the high watermark), the leader's append linger, and a second for the apply work and the
    round trips."""
    fetch_wait_us = cluster.get("metadata_fetch_wait_ms", 500) * 1000
    per_voter_us = fetch_wait_us + FETCH_TIMEOUT_US + META_RETRY_BACKOFF_US
    find = (cluster.get("quorum_fetch_timeout_ms", 2000) * 1500
            + cluster.get("controllers", 3) * per_voter_us)
    linger_us = cluster.get("quorum_append_linger_ms", 25) * 1000
    return find, 2 * fetch_wait_us + linger_us + 1_000_000


class DemotedLeaderAppend(Invariant):
    """A KRaft broker appends as leader of a partition only at the leader epoch its own
    metadata image holds: once it has published a newer epoch for the partition (its
    `metadata` event; `BrokerMetadataPublisher` sets the image and applies the delta to the
    replica manager together), an append at an older epoch is a leader its own image says is
    gone, its replica manager having skipped the record (KAFKA-14296: 3.3.0-3.3.1 skipped every
    record that made a shutting-down broker a follower, so it went on taking Produce requests
    as leader at its old epoch until it stopped)."""

    name = "demoted_leader_append"
    handlers = {"metadata": "on_metadata", "append": "on_append", "crash": "on_crash"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.judged = ctx.header["options"]["cluster"].get("mode") == "kraft"
        self.image: dict[tuple[str, str], tuple[int, int, int]] = {}  # -> (leader, epoch, seq)

    def on_metadata(self, ev):
        if not self.judged:
            return
        for tp, leader, epoch in ev["changes"]:
            if epoch < 0:  # the topic is gone from the image
                self.image.pop((ev["node"], tp), None)
            else:
                self.image[(ev["node"], tp)] = (leader, epoch, ev["seq"])

    def on_crash(self, ev):  # the image is built again from the log after a restart
        for key in [k for k in self.image if k[0] == ev["node"]]:
            del self.image[key]

    def on_append(self, ev):
        for b in ev["batches"]:
            held = self.image.get((ev["node"], b["tp"]))
            if held is not None and held[1] > b["leader_epoch"]:
                self.violate(ev["t"], f"{ev['node']} appended {b['bid']} to {b['tp']} as leader "
                             f"at epoch {b['leader_epoch']} though its own metadata image has "
                             f"b{held[0]} leading at epoch {held[1]}", held[2], ev["seq"])
                return


class IsrAnswerBeforeCommit(Invariant):
    """A KRaft controller answers an AlterPartition with NONE only once the partition state it
    reports is committed: after the last request it accepted for a partition, it has committed
    a state of that partition (its `partition_state`), or the last it committed already has
    the ISR asked for (a change with nothing to write). Kafka answers when the write's offset
    commits (`ControllerWriteEvent`); an answer sooner hands the leader an ISR and partition
    epoch the quorum may never commit: a leader cut off with it is refused from then on."""

    name = "isr_answer_before_commit"
    handlers = {"alter_partition": "on_request", "partition_state": "on_commit",
                "send": "on_send"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.asked: dict[tuple[str, str], tuple[list, int]] = {}  # -> (isr, seq)
        self.committed: dict[tuple[str, str], tuple[list, int]] = {}

    def on_request(self, ev):
        if ev["error"] == 0:
            self.asked[(ev["node"], ev["tp"])] = (ev["isr"], ev["seq"])

    def on_commit(self, ev):
        self.committed[(ev["node"], ev["tp"])] = (ev["isr"], ev["seq"])

    def on_send(self, ev):
        if ev.get("msg") != "AlterPartitionResponse" or ev.get("error") != 0:
            return
        asked = self.asked.get((ev["node"], ev["tp"]))
        isr, seq = self.committed.get((ev["node"], ev["tp"]), (None, -1))
        if asked is not None and seq < asked[1] and isr != asked[0]:
            self.violate(ev["t"], f"{ev['node']} answered {ev['dst']}'s AlterPartition of "
                         f"{ev['tp']} (ISR {asked[0]}) before committing it; its last committed "
                         f"ISR is {isr}", asked[1], ev["seq"])


class BrokerMetadataStalled(Invariant):
    """Liveness (KRaft): a live broker that reaches the quorum leader both ways applies what
    that leader committed. At the end of a settled run, for each such broker (not slowed by
    `slow_metadata`), once the leader has led and the faults have been quiet for
    `metadata_catch_up_us`'s `find + fetch` (plus the apply time of the records), the broker's
    metadata offset reaches the leader's high watermark of `fetch` before the end. The leader
    is the harness's (`metadata_reach`: the live quorum leader of the highest epoch). Not
    judged when a drop, hold, delay or reorder rule is in force at the end, or in a
    ZooKeeper-mode run. KAFKA-15489's split brain is what it catches: before check-quorum a
    leader cut from the other voters stays leader, and the brokers that follow it never
    fetch from the leader the others elected."""

    name = "broker_metadata_stalled"
    rule = "liveness"
    handlers = {"quorum_leader": "on_leader", "metadata_commit": "on_commit",
                "metadata_apply": "on_apply", "restart": "on_restart",
                "unhealed": "on_unhealed", "metadata_reach": "on_reach"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.led_since: dict[tuple[str, int], int] = {}  # (voter, epoch) -> t it won
        self.commits: dict[str, list[tuple[int, int, int]]] = {}  # voter -> [(t, hw, seq)]
        self.applied: dict[str, tuple[int, int]] = {}  # broker -> (metadata offset, seq)
        self.rules_in_force = False
        self.reach: dict | None = None
        self.note = "not judged: the run has not ended"

    def on_leader(self, ev):
        self.led_since.setdefault((ev["node"], ev["epoch"]), ev["t"])
        self.commits[ev["node"]] = []  # a new epoch: its own high watermark from here

    def on_commit(self, ev):
        self.commits.setdefault(ev["node"], []).append((ev["t"], ev["high_watermark"], ev["seq"]))

    def on_apply(self, ev):
        self.applied[ev["node"]] = (ev["to_offset"], ev["seq"])

    def on_restart(self, ev):
        self.applied.pop(ev["node"], None)

    def on_unhealed(self, ev):
        self.rules_in_force = bool(ev["rules"])

    def on_reach(self, ev):
        self.reach = ev

    def finish(self):
        why = self._why_not()
        if why:
            self.note = f"not judged: {why}"
            return
        reach, end = self.reach, self.ctx.truth.end
        leader = reach["leader"]
        cluster = self.ctx.header["options"].get("cluster", {})
        find, fetch = metadata_catch_up_us(cluster)
        start = max(self.ctx.quiet.quiet_from, self.led_since.get((leader, reach["epoch"]), 0))
        cutoff = end["t"] - fetch
        hw, seq = 0, None
        for t, mark, s in self.commits.get(leader, []):
            if t <= cutoff:
                hw, seq = mark, s
        apply_us = hw * cluster.get("metadata_apply_us", 100)
        if end["t"] - start < find + fetch + apply_us:
            self.note = (f"not judged: the quorum leader {leader} and the faults were quiet for "
                         f"{(end['t'] - start) / 1e6:g} s before the end, less than the "
                         f"{(find + fetch + apply_us) / 1e6:g} s a broker may need to catch up")
            return
        judged = [b for b, reaches, slowed in reach["brokers"] if reaches and not slowed]
        self.note = f"judged {len(judged)} broker{'s' if len(judged) != 1 else ''}"
        for b in judged:
            offset, applied_seq = self.applied.get(b, (0, None))
            if offset < hw:
                self.violate(end["t"], f"{b} applied the metadata log only up to offset {offset} "
                             f"though it reaches the quorum leader {leader}, which had committed "
                             f"up to {hw} by {cutoff / 1e6:g} s", seq, applied_seq, reach["seq"])

    def _why_not(self) -> str | None:
        end = self.ctx.truth.end
        if end is None or not end.get("settled"):
            return "the run was cut off before its end"
        if self.reach is None:
            return "not a KRaft run (no metadata log)"
        if self.reach["leader"] is None:
            return "no quorum leader at the end"
        if self.rules_in_force or self.reach["slowed"]:
            return "a network rule (drop, hold, delay or reorder) was in force at the end"
        return None
