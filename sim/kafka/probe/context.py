"""What a probe's hand-written message leaves to the harness: correlation ids, topic ids, the
sender, the node's sessions and registrations (`sim.kafka.probe.kind.Context`).

Contract: `Context(probe_run)` answers a message builder's questions about the running probe
(`sim.kafka.probe.run.ProbeRun`); `src` is the sender of the message being built. It reads
the run's store, node and what the node sent; it changes only what a step's notification
writes to ZooKeeper (registrations, the /controller znode).
"""

from __future__ import annotations

from sim.kafka.probe.wire_zk import write_controller_znode
from sim.kafka.rules.inter_broker import control_carries_broker_epoch


class Context:
    """What a hand-written message leaves to the harness (see `kind.Context`)."""

    def __init__(self, probe_run):
        self.run = probe_run
        self.src = ""
        self._corr = 1000
        self._bid = 0

    def corr(self, kind: str) -> int:
        """The correlation id of the node's last `kind` request to the sender, if it sent one
        (an answer's default); else a fresh one (a request's)."""
        last = self.run.last_request(self.src, kind)
        if last is not None:
            return last.corr
        preset = self.run.preset_corr(self.src, kind)
        if preset is not None:
            return preset
        self._corr += 1
        return self._corr

    def sent_request(self, kind: str, corr: int):
        """The body of the node's `kind` request to the sender under `corr`, or None."""
        for dst, sent_kind, body in self.run.node_sent:
            if dst == self.src and sent_kind == kind and body.corr == corr:
                return body
        return None

    def topic_id(self, tp: str) -> int:
        topic_id = self.run.store.topic_id(tp)
        return topic_id if topic_id is not None else 1

    def alter_partition_topic_id(self, tp: str) -> int:
        """The TopicId a leader of this run's profile puts in its AlterPartition: 0 before
        KIP-841 (v0-v1 name the topic), else the id the node holds for the topic, or one no
        topic has when it holds none (Kafka's tests send a random one)."""
        if not self.run.options.protocol.alter_partition_topic_ids:
            return 0
        image = self.metadata_image()
        ids = dict(image.topics) if image is not None else {
            name: t.topic_id for name, t in self.run.store.topics.items()}
        return ids.get(tp.rpartition("-")[0], max(ids.values(), default=0) + 1000)

    def metadata_offset(self) -> int:
        """The offset the KRaft broker's last Fetch of the metadata log to the sender asked
        from (0 if it asked none): where the records of an answer start."""
        last = self.run.last_request(self.src, "QuorumFetch")
        return last.fetch_offset if last is not None else 0

    def metadata_image(self):
        """The KRaft broker's metadata image (None for a ZooKeeper-mode node)."""
        return getattr(self.run.node, "image", None)

    def registered_epoch(self, broker: int) -> int:
        """The broker epoch the node holds for `broker` (-1: none): a KRaft node's metadata
        image registration, a ZooKeeper-mode controller's live broker."""
        image = self.metadata_image()
        if image is not None:
            reg = image.brokers.get(broker)
            return reg.epoch if reg is not None else -1
        return getattr(self.run.node, "live", {}).get(broker, -1)

    def alive(self) -> tuple:
        return tuple(range(1, self.run.options.cluster.brokers + 1))

    def quorum_voters(self) -> tuple:
        """The quorum's voter set as the node under test knows it (every controller unless
        the probe's state names fewer)."""
        return tuple(getattr(self.run.node, "voters", None) or self.controllers())

    def controllers(self) -> tuple:
        return tuple(f"c{i}" for i in range(1, self.run.options.cluster.controllers + 1))

    def set_registrations(self, brokers: list) -> None:
        """ZooKeeper's /brokers/ids made `brokers` ({id, epoch}), each session renewed now: a
        broker left out is gone; one listed keeps its registration unless `epoch` says
        otherwise, and one not registered registers (its epoch the new zxid unless given)."""
        store, now = self.run.store, self.run.kernel.now_us
        for b in [b for b in store.brokers if b not in {r["id"] for r in brokers}]:
            del store.brokers[b]
        for r in brokers:
            if r["id"] not in store.brokers:
                store.register_broker(r["id"], now,
                                      self.run.options.cluster.broker_session_timeout_ms * 1000)
            session = store.brokers[r["id"]]
            session.renewed_us = now
            if r["epoch"] != -1:
                session.epoch = r["epoch"]

    def set_controller_znode(self, controller: str, epoch: int) -> str:
        return write_controller_znode(self.run.store, controller, epoch)

    def expire_controller_session(self) -> None:
        """The node's session is gone, and with it its ephemeral /controller."""
        if self.run.store.active == self.run.probe.node:
            self.run.store.active = None

    def sends_broker_epoch(self) -> bool:
        """Whether a broker of this run's profile and IBP puts its broker epoch in its
        ControlledShutdown (v2, KIP-380)."""
        return control_carries_broker_epoch(self.run.options.protocol, self.run.store.ibp)

    def last_session_id(self) -> int:
        """The last session a Fetch answer of the node to the sender carried (0: none): an
        error answer, which carries none, leaves the session the sender knows as it was."""
        for dst, kind, body in reversed(self.run.node_sent):
            if dst == self.src and kind == "FetchResponse" and body.session_id:
                return body.session_id
        return 0

    def batch_id(self) -> str:
        self._bid += 1
        return f"probe#{self._bid}"

    def order_like_request(self, kind: str, parts: tuple) -> tuple:
        """Answer partitions in the order of the node's last `kind` request, as the model's
        fetcher reads them; the partitions the answer leaves out come back empty."""
        last = self.run.last_request(self.src, kind)
        if last is None:
            return parts
        given = {p.tp: p for p in parts}
        out = [given.pop(fp.tp, None) or _empty(fp.tp) for fp in last.partitions]
        return tuple(out) + tuple(given.values())


def _empty(tp: str):
    from sim.kafka.messages import FetchPartitionData
    return FetchPartitionData(tp, 0)
