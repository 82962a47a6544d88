"""What a real producer saw on its connections, as the trace's client events.

Contract: `ProduceWatch` is fed every Produce request a client wrote (`on_request`) and every
response it read (`on_response`), by connection and wire correlation id. A batch seen for the
first time is a `batch` event (its id from its bytes, `answers.batch_id`); a partition answered
without error is an `ack` of its batch (once per batch: a retry answered as a duplicate acks
nothing new), one answered with an error a `produce_error` with action `seen` (what the client
then does is its own business; its surfaced failures are reported by the caller as
`produce_failed`). So the invariants that read the model's clients' events judge a real
client's history the same way.
"""

from __future__ import annotations

from sim.kafka import vocab as V
from sim.kafka.wire.answers import batch_id
from sim.kafka.wire.records import BadRecords, read_batches


class ProduceWatch:
    def __init__(self, client, acks):
        self.client = client
        self.acks = acks  # as the `ack` event says it: "all", 1 or 0
        self.sent: dict[tuple[int, int], dict] = {}  # (conn, wire corr) -> {tp: batch}
        self.batches: dict[str, list] = {}  # bid -> [count, created_us, attempts, acked]

    def on_request(self, conn: int, corr: int, body) -> None:
        by_tp = {}
        for topic in body.topic_data:
            for part in topic.partition_data:
                tp = f"{topic.name}-{part.index}"
                try:
                    b = read_batches(part.records or b"")[0]
                except BadRecords:
                    continue
                bid = batch_id(self.client.name, tp, b.producer_id, b.producer_epoch,
                               b.base_sequence, b.crc)
                seen = self.batches.get(bid)
                if seen is None:
                    seen = self.batches[bid] = [b.record_count, self.client.now_us, 0, False]
                    self.client.emit(V.BATCH, {"bid": bid, "tp": tp, "count": b.record_count,
                                               "created_us": seen[1]})
                seen[2] += 1
                by_tp[tp] = bid
        if by_tp and int(body.acks) != 0:
            self.sent[(conn, corr)] = by_tp

    def on_response(self, conn: int, corr: int, body) -> None:
        by_tp = self.sent.pop((conn, corr), None)
        if by_tp is None:
            return
        for topic in body.responses:
            for part in topic.partition_responses:
                tp = f"{topic.name}-{part.index}"
                bid = by_tp.get(tp)
                if bid is not None:
                    self._answer(bid, tp, int(part.error_code), int(part.base_offset))

    def _answer(self, bid: str, tp: str, error: int, base_offset: int) -> None:
        count, created_us, attempts, acked = self.batches[bid]
        if error:
            self.client.emit(V.PRODUCE_ERROR, {"bid": bid, "tp": tp, "error": error,
                                               "action": "seen", "attempts": attempts})
            return
        if acked:
            return
        self.batches[bid][3] = True
        self.client.emit(V.ACK, {"bid": bid, "tp": tp, "base_offset": base_offset,
                                 "count": count, "acks": self.acks,
                                 "latency_us": self.client.now_us - created_us,
                                 "has_offset": base_offset >= 0})

    def connection_closed(self, conn: int) -> None:
        for key in [k for k in self.sent if k[0] == conn]:
            del self.sent[key]


class MetadataWatch:
    """The leader a client takes from each Metadata answer it reads, as `client_epoch` events
    (source `metadata`, `from` the answering broker) when it changes. A client that replaces
    its metadata wholesale with every answer (aiokafka) adopts each answer's leaders, so the
    event's `leader_epoch` is the epoch of the answer it adopted (the frame's truth: the
    answering broker's cache), carried on the wire only from Metadata v7."""

    def __init__(self, client):
        self.client = client
        self.known: dict[str, tuple[int, int, int]] = {}  # tp -> (topic_id, leader, epoch)

    def on_response(self, broker: str, body, truth: tuple) -> None:
        epochs = {tp: (topic_id, epoch) for tp, topic_id, _leader, epoch in truth}
        for topic in body.topics:
            for part in topic.partitions:
                tp = f"{topic.name}-{part.partition_index}"
                if tp not in epochs:
                    continue
                topic_id, epoch = epochs[tp]
                entry = (topic_id, int(part.leader_id), epoch)
                previous = self.known.get(tp)
                if entry == previous:
                    continue
                self.known[tp] = entry
                fields = {"tp": tp, "topic_id": topic_id, "leader": entry[1],
                          "leader_epoch": epoch, "source": "metadata", "from": broker}
                if previous is not None:
                    fields["previous_epoch"] = previous[2]
                self.client.emit(V.CLIENT_EPOCH, fields)


class ConsumeWatch:
    """The records a real consumer's application took, as `consume` events. The batches come
    from the Fetch answers the library read (the frame's truth names each batch's id, record
    count, leader epoch and creation time, which the bytes do not); a batch is reported in the
    first `consume` that takes one of its records, with the range of offsets taken then."""

    def __init__(self, client):
        self.client = client
        self.batches: dict[str, dict[int, tuple]] = {}  # tp -> base_offset -> batch truth
        self.reported: set[tuple[str, int, str]] = set()

    def on_fetch(self, truth: tuple) -> None:
        for tp, base, bid, count, epoch, created_us in truth:
            self.batches.setdefault(tp, {})[base] = (bid, count, epoch, created_us)

    def _batch_of(self, tp: str, offset: int):
        for base, (bid, count, epoch, created_us) in sorted(self.batches.get(tp, {}).items()):
            if base <= offset < base + count:
                return base, bid, count, epoch, created_us
        return None

    def on_records(self, tp: str, offsets: list[int]) -> None:
        taken = []
        for offset in offsets:
            batch = self._batch_of(tp, offset)
            if batch is not None and (tp, batch[0], batch[1]) not in self.reported:
                self.reported.add((tp, batch[0], batch[1]))
                taken.append(batch)
        if not taken:
            return
        now = self.client.now_us
        self.client.emit(V.CONSUME, {"tp": tp, "offset": offsets[0], "next_offset": offsets[-1] + 1,
                                     "batches": len(taken), "count": len(offsets),
                                     "leader_epoch": taken[-1][3],
                                     "end_to_end_us": [now - b[4] for b in taken],
                                     "read": [[b[0], b[1]] for b in taken]})
