"""The cluster's durable metadata store (ZooKeeper's role): linearizable, not on the network.

Contract: holds the controller epoch and the active controller, broker registrations with
broker epochs and session renewals, topics with their topic ids and per-partition state
(replicas, ISR, leader, leader epoch, partition epoch), and reassignments in progress. A deleted topic leaves
`topics` at once and waits in `deleting` until every replica confirmed its deletion. Only the
active controller mutates partition state; sessions are renewed by nodes that can reach the
"zk" network node. A topic recreated under the same name gets a new topic id (ref §4 row 10).
It also holds the inter-broker protocol version the cluster runs (`ibp_profile`, named by a
profile, and its switches `ibp`): in ZK mode that is each broker's config, set alike on every
broker and changed by a rolling restart; the model keeps one cluster-wide value, as KRaft keeps
`metadata.version`, and the `bump_ibp` action changes it at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.kafka.rules.producer_ids import next_zk_block


@dataclass
class PState:
    replicas: tuple
    isr: tuple
    leader: int
    leader_epoch: int = 0  # INITIAL_LEADER_EPOCH
    partition_epoch: int = 0


@dataclass
class TopicState:
    topic_id: int
    partitions: dict
    message_format: int = 2
    retention_ms: int = 0
    segment_ms: int = 10000


@dataclass
class TopicDeletion:
    """A topic queued for deletion (ZooKeeper's /admin/delete_topics/<topic>) and its state;
    with what the controller holds of it in memory (its `ControllerContext`, set anew by each
    controller that takes over): each replica's (broker id, tp) state in the deletion
    (`sim.kafka.rules.topic_deletion`), and whether the topic is ineligible for deletion for
    now (`topicsIneligibleForDeletion`)."""

    topic: TopicState
    states: dict
    ineligible: bool = False


@dataclass
class BrokerSession:
    epoch: int
    renewed_us: int
    timeout_us: int  # the session timeout its broker asked for (its zookeeper.session.timeout.ms)


@dataclass
class Store:
    controller_epoch: int = 0
    active: str | None = None
    controller_renewed_us: int = 0
    brokers: dict = field(default_factory=dict)  # id -> BrokerSession
    topics: dict = field(default_factory=dict)  # name -> TopicState
    reassignments: dict = field(default_factory=dict)  # tp -> (target, original)
    deleting: dict = field(default_factory=dict)  # name -> TopicDeletion
    next_topic_id: int = 1
    zxid: int = 0
    ibp_profile: str = ""
    ibp: object = None  # `profiles.ibp_protocol` of `ibp_profile`, with the run's overrides
    # /log_dir_event_notification: the ids of brokers that lost a log directory, in the
    # order they wrote them, until the active controller reads them
    log_dir_events: list = field(default_factory=list)
    # /latest_producer_id_block: the last block of producer ids a ZooKeeper-mode broker took
    # (first, last), None before the first (`sim.kafka.producer_ids`)
    latest_producer_id_block: tuple | None = None

    def register_broker(self, broker_id: int, now_us: int, timeout_us: int) -> int:
        """A (re)starting broker registers, in a session of `timeout_us`; its new broker epoch
        is the registration zxid."""
        self.zxid += 1
        self.brokers[broker_id] = BrokerSession(self.zxid, now_us, timeout_us)
        return self.zxid

    def claim_producer_id_block(self) -> tuple[int, int]:
        """A broker's conditional update of /latest_producer_id_block: the block after the
        one there (`rules.producer_ids.next_zk_block`), now its own."""
        self.latest_producer_id_block = next_zk_block(self.latest_producer_id_block)
        return self.latest_producer_id_block

    def session_expired(self, broker_id: int, broker_epoch: int, now_us: int) -> bool:
        """Whether the session holding registration `broker_epoch` is gone: silent for longer
        than its timeout (ZooKeeper expired it and deleted the ephemeral znode), closed, or
        replaced. The controllers judge liveness by the same test (`renewed_us`)."""
        session = self.brokers.get(broker_id)
        return (session is None or session.epoch != broker_epoch
                or now_us - session.renewed_us > session.timeout_us)

    def renew_broker(self, broker_id: int, broker_epoch: int, now_us: int) -> None:
        session = self.brokers.get(broker_id)
        if session is not None and session.epoch == broker_epoch:
            session.renewed_us = now_us

    def close_session(self, broker_id: int, broker_epoch: int) -> None:
        """A broker shutting down cleanly closes its session: its registration (an ephemeral
        znode) goes at once, where a crashed broker's lingers until the session times out."""
        session = self.brokers.get(broker_id)
        if session is not None and session.epoch == broker_epoch:
            del self.brokers[broker_id]

    def create_topic(self, name: str, assignment: list, message_format: int = 2,
                     retention_ms: int = 0, segment_ms: int = 10000) -> TopicState:
        parts = {i: PState(tuple(r), tuple(r), r[0]) for i, r in enumerate(assignment)}
        topic = TopicState(self.next_topic_id, parts, message_format, retention_ms, segment_ms)
        self.next_topic_id += 1
        self.topics[name] = topic
        return topic

    def partition(self, tp: str) -> tuple[TopicState, PState] | None:
        topic, _, index = tp.rpartition("-")
        t = self.topics.get(topic)
        if t is None or not (index.isascii() and index.isdigit()) or int(index) not in t.partitions:
            return None
        return t, t.partitions[int(index)]

    def topic_id(self, tp: str) -> int | None:
        """The id of the topic of partition `tp`'s name (None: no such topic, or queued for
        deletion)."""
        t = self.topics.get(tp.rpartition("-")[0])
        return t.topic_id if t is not None else None

    def all_tps(self) -> list[str]:
        return [f"{name}-{i}" for name in sorted(self.topics) for i in sorted(self.topics[name].partitions)]
