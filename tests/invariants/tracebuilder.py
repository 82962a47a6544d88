"""A tiny builder for hand-built traces: a header plus events with a dense `seq`.

Contract: `TraceBuilder` records events exactly as the harness writes them (`seq`, `t`, `node`,
`kind`, then the kind's fields) and only of kinds that `sim.kafka.vocab` defines, so a test
cannot invent vocabulary. The helpers fill in the fields real traces carry (see docs/trace.md);
`check(name)` runs `invariants.registry.check_events` over the trace for one invariant. It
knows no invariant's rules.
"""

from __future__ import annotations

from sim.core.trace import FORMAT
from sim.kafka import vocab

VOCAB_KINDS = frozenset(v for k, v in vars(vocab).items() if k.isupper() and isinstance(v, str))


class TraceBuilder:
    def __init__(self, brokers: int = 3):
        self.header = {"type": "header", "format": FORMAT, "scenario": "hand-built", "seed": 0,
                       "options": {"cluster": {"brokers": brokers}}, "schedule": [],
                       "invariants": [], "expect": "pass", "harness_version": "test"}
        self.events: list[dict] = []
        self.t = 0

    # -- core -----------------------------------------------------------------------------
    def at(self, t_us: int) -> TraceBuilder:
        """Set the time of the following events (never backwards, as in a real trace)."""
        assert t_us >= self.t, "time runs forwards"
        self.t = t_us
        return self

    def add(self, node: str, kind: str, **fields) -> int:
        """Record one event at the current time and return its seq."""
        assert kind in VOCAB_KINDS, f"{kind!r} is not a trace kind of sim.kafka.vocab"
        ev = {"seq": len(self.events), "t": self.t, "node": node, "kind": kind, **fields}
        self.events.append(ev)
        return ev["seq"]

    def check(self, name: str) -> tuple[list, dict]:
        from invariants.registry import check_events
        return check_events(self.header, self.events, [name])

    def judged(self, name: str) -> tuple[int, str]:
        """What the after-heal rule `name` judged: (its count, its note)."""
        from invariants.registry import check_events
        notes: dict = {}
        metrics = check_events(self.header, self.events, [name], notes=notes)[1]
        return metrics["liveness_judged"][name], notes[name]

    def violations(self, name: str) -> list[tuple]:
        """(invariant, t_us, seqs) of each violation of `name`."""
        return [(v.invariant, v.t_us, v.seqs) for v in self.check(name)[0]]

    # -- controller truth -------------------------------------------------------------------
    def controller(self, node: str = "c1", controller_epoch: int = 1) -> int:
        return self.add(node, vocab.CONTROLLER_ELECTED, controller_epoch=controller_epoch)

    def partition_state(self, tp: str, leader: int, leader_epoch: int, replicas: list[int],
                        isr: list[int] | None = None, topic_id: int = 1,
                        reason: str = "controller_failover") -> int:
        return self.add("c1", vocab.PARTITION_STATE, tp=tp, topic_id=topic_id, leader=leader,
                        leader_epoch=leader_epoch, partition_epoch=leader_epoch,
                        isr=list(replicas if isr is None else isr), replicas=list(replicas),
                        reason=reason, controller_epoch=1)

    def end(self, settled: bool = True) -> int:
        return self.add("harness", vocab.END, end_us=self.t, events=len(self.events),
                        stopped_by="until", settled=settled)

    # -- brokers ----------------------------------------------------------------------------
    def replica_state(self, node: str, tp: str, role: str, leader: int, leader_epoch: int,
                      topic_id: int = 1) -> int:
        return self.add(node, vocab.REPLICA_STATE, tp=tp, topic_id=topic_id, role=role,
                        leader=leader, leader_epoch=leader_epoch, partition_epoch=leader_epoch,
                        isr=[1, 2, 3], controller_epoch=1)

    def log_created(self, node: str, tp: str, topic_id: int = 1) -> int:
        return self.add(node, vocab.LOG_CREATED, tp=tp, topic_id=topic_id)

    def log_deleted(self, node: str, tp: str, topic_id: int = 1) -> int:
        return self.add(node, vocab.LOG_DELETED, tp=tp, topic_id=topic_id)

    def stop_replica(self, node: str, tp: str, issued_epoch: int, local_epoch: int,
                     result: str = "applied", delete: bool = True, req_epoch: int | None = None,
                     topic_id: int = 1) -> int:
        return self.add(node, vocab.STOP_REPLICA, tp=tp, topic_id=topic_id, delete=delete,
                        req_epoch=issued_epoch if req_epoch is None else req_epoch,
                        issued_epoch=issued_epoch, local_epoch=local_epoch, controller_epoch=1,
                        result=result, error=74 if result == "fenced" else 0)

    def append(self, node: str, producer: str, *batches: dict, acks: int = -1) -> int:
        """A leader append; each batch is `batch(...)`."""
        return self.add(node, vocab.APPEND, producer=producer, corr=1, acks=acks,
                        batches=list(batches))

    def replicate(self, node: str, leader: int, *rows: tuple) -> int:
        """A follower append; rows are (tp, base_offset, count, leader_epoch, bid), topic id 1."""
        return self.add(node, vocab.REPLICATE, leader=leader,
                        batches=[[tp, 1, base, count, epoch, bid] for tp, base, count, epoch, bid in rows])

    def hw(self, node: str, role: str, tp: str, hw: int, leader_epoch: int = 0,
           topic_id: int = 1) -> int:
        return self.add(node, vocab.HW, role=role, hws=[[tp, topic_id, hw, leader_epoch]])

    def truncate(self, node: str, tp: str, to_offset: int, topic_id: int = 1) -> int:
        return self.add(node, vocab.TRUNCATE, tp=tp, topic_id=topic_id, to_offset=to_offset,
                        reason="diverging_epoch")

    def log_start(self, node: str, tp: str, log_start_offset: int, topic_id: int = 1) -> int:
        return self.add(node, vocab.LOG_START, tp=tp, topic_id=topic_id,
                        log_start_offset=log_start_offset)

    # -- clients ----------------------------------------------------------------------------
    def client_config(self, node: str, idempotence: str, acks="all") -> int:
        return self.add(node, vocab.CLIENT_CONFIG, idempotence=idempotence, acks=acks,
                        leader_discovery="kip951")

    def ack(self, node: str, bid: str, tp: str, base_offset: int, count: int = 4,
            acks="all") -> int:
        return self.add(node, vocab.ACK, bid=bid, tp=tp, base_offset=base_offset, count=count,
                        acks=acks, latency_us=1000, has_offset=base_offset >= 0)

    def consume(self, node: str, tp: str, *read: tuple, count: int = 4) -> int:
        """A consumer took batches `read` = (base_offset, bid), each `count` records long."""
        return self.add(node, vocab.CONSUME, tp=tp, offset=read[0][0],
                        next_offset=read[-1][0] + count, batches=len(read),
                        count=count * len(read), leader_epoch=0, end_to_end_us=[0] * len(read),
                        read=[list(r) for r in read])

    def validate_position(self, node: str, tp: str, offset: int, end_offset: int,
                          action: str) -> int:
        position = end_offset if action == "truncate" else (0 if action == "reset" else offset)
        return self.add(node, vocab.VALIDATE_POSITION, tp=tp, broker=2, leader_epoch=1,
                        offset=offset, offset_epoch=0, error=0, end_epoch=0,
                        end_offset=end_offset, action=action, position=position)

    def produce_failed(self, node: str, tp: str, error: int, bid: str | None = None) -> int:
        return self.add(node, vocab.PRODUCE_FAILED, bid=bid, tp=tp, error=error,
                        error_name=vocab.outcome_name(error))

    def client_epoch(self, node: str, tp: str, leader: int, leader_epoch: int, topic_id: int = 1,
                     source: str = "metadata", previous_epoch: int | None = None) -> int:
        fields = {"tp": tp, "topic_id": topic_id, "leader": leader, "leader_epoch": leader_epoch,
                  "source": source, "from": "b1"}
        if previous_epoch is not None:
            fields["previous_epoch"] = previous_epoch
        return self.add(node, vocab.CLIENT_EPOCH, **fields)


def batch(tp: str, base_offset: int, bid: str, leader_epoch: int = 0, count: int = 4,
          sender_epoch: int | None = None, pid: int | None = None, producer_epoch: int = 0,
          base_seq: int | None = None, topic_id: int = 1) -> dict:
    """One row of an `append` event; `pid` makes it an idempotent batch."""
    row = {"tp": tp, "topic_id": topic_id, "base_offset": base_offset, "count": count,
           "leader_epoch": leader_epoch, "bid": bid,
           "sender_epoch": leader_epoch if sender_epoch is None else sender_epoch}
    if pid is not None:
        row.update(pid=pid, producer_epoch=producer_epoch,
                   base_seq=base_offset if base_seq is None else base_seq)
    return row
