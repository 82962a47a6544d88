"""KRaft's messages: metadata records, the quorum's Vote and Fetch, broker registration and
heartbeats.

Contract: immutable named tuples like `sim.kafka.messages`, each with `brief()` for the trace's
`send` event. A `MetadataRecord` is one record of the `__cluster_metadata` log: its Kafka
record type (`kind`: RegisterBrokerRecord, BrokerRegistrationChangeRecord, TopicRecord,
PartitionRecord, PartitionChangeRecord, RemoveTopicRecord, or the quorum's own LeaderChange
control record) and its fields as sorted (name, value) pairs, so two records compare equal
exactly when their contents do. Controllers (voters) and brokers (observers) send the same
`QuorumFetch`; its answer carries the records after the fetch offset, with their epochs.
"""

from __future__ import annotations

from typing import NamedTuple

# record kinds (`metadata/src/main/resources/common/metadata/*.json`)
REGISTER_BROKER = "RegisterBrokerRecord"
BROKER_CHANGE = "BrokerRegistrationChangeRecord"
TOPIC = "TopicRecord"
PARTITION = "PartitionRecord"
PARTITION_CHANGE = "PartitionChangeRecord"
REMOVE_TOPIC = "RemoveTopicRecord"
UNREGISTER_BROKER = "UnregisterBrokerRecord"  # a broker's registration removed (UnregisterBroker)
NO_OP = "NoOpRecord"  # KIP-835: the active controller's heartbeat in the log; changes nothing
LEADER_CHANGE = "LeaderChange"  # the control record a new quorum leader writes first
PRODUCER_IDS = "ProducerIdsRecord"  # the next producer id block's first id (KIP-730)
# KIP-853's control records (kraft.version 1): the finalized kraft.version, and the voter set
# (`voters`, controller names), which takes effect where it is appended
KRAFT_VERSION = "KRaftVersionRecord"
VOTERS = "VotersRecord"


class MetadataRecord(NamedTuple):
    kind: str
    fields: tuple  # sorted (name, value) pairs; lists as tuples

    @classmethod
    def of(cls, kind: str, **fields) -> MetadataRecord:
        return cls(kind, tuple(sorted(fields.items())))

    def get(self, name: str, default=None):
        for key, value in self.fields:
            if key == name:
                return value
        return default

    def to_json(self) -> dict:
        return {"kind": self.kind, **{k: list(v) if isinstance(v, tuple) else v
                                      for k, v in self.fields}}


class Vote(NamedTuple):
    epoch: int
    candidate: str
    last_epoch: int
    last_offset: int  # the candidate's log end offset
    pre_vote: bool = False  # KIP-996 (4.0+): a prospective's pre-vote, at its own epoch

    def brief(self) -> dict:
        out = {"epoch": self.epoch, "last_epoch": self.last_epoch, "last_offset": self.last_offset}
        if self.pre_vote:
            out["pre_vote"] = True
        return out


class VoteResponse(NamedTuple):
    epoch: int
    granted: bool
    error: int = 0  # FENCED_LEADER_EPOCH for a Vote of an older epoch
    leader: str | None = None  # the leader the voter knows in its epoch (LeaderId)

    def brief(self) -> dict:
        out = {"epoch": self.epoch, "granted": self.granted}
        if self.error:
            out["error"] = self.error
        return out


class BeginQuorumEpoch(NamedTuple):
    epoch: int
    leader: str | None  # None: no leader named (Kafka's LeaderId -1, INVALID_REQUEST)

    def brief(self) -> dict:
        return {"epoch": self.epoch}


class EndQuorumEpoch(NamedTuple):
    """A resigning leader's word to the other voters (KIP-595): it gives up `epoch`, and
    names its preferred successors, the furthest fetched first."""

    epoch: int
    leader: str | None
    preferred_successors: tuple = ()

    def brief(self) -> dict:
        return {"epoch": self.epoch, "preferred_successors": list(self.preferred_successors)}


class DescribeQuorumResponse(NamedTuple):
    """The quorum leader's answer to DescribeQuorum (`LeaderState.describeQuorum`): each voter's
    and each observer's state as `(replica, log_end_offset, last_fetch_timestamp_ms,
    last_caught_up_timestamp_ms)`, -1 where unknown; a node that does not lead answers
    NOT_LEADER_OR_FOLLOWER with the rest empty."""

    error: int
    leader: str | None = None
    epoch: int = 0
    high_watermark: int = 0
    voters: tuple = ()
    observers: tuple = ()

    def brief(self) -> dict:
        return {"error": self.error, "epoch": self.epoch, "high_watermark": self.high_watermark}


class QuorumAnswer(NamedTuple):
    """A voter's answer to a BeginQuorumEpoch or an EndQuorumEpoch: its error, and the epoch
    and leader it knows once it has acted on the request (`buildBeginQuorumEpochResponse`,
    `buildEndQuorumEpochResponse`)."""

    epoch: int
    leader: str | None
    error: int = 0

    def brief(self) -> dict:
        out = {"epoch": self.epoch}
        if self.error:
            out["error"] = self.error
        return out


class QuorumFetch(NamedTuple):
    """A voter's or an observer's (broker's) Fetch of the metadata log."""

    epoch: int  # the fetcher's quorum epoch (0: it knows none yet)
    replica: str
    fetch_offset: int
    last_fetched_epoch: int
    voter: bool
    # the request's correlation id, which its answer carries back: the fetcher takes only the
    # answer to the Fetch it has in flight, as `NetworkClient` matches answers to requests
    # (an answer on a connection closed since, say the sender's before a restart, is lost)
    corr: int = 0
    # the high watermark the fetcher knows (-1: none), sent from Fetch v18 (KIP-1166, 4.1);
    # None where the sender's version lacks the field (Kafka's default there is Long.MAX_VALUE)
    high_watermark: int | None = None
    # MaxWaitMs: how long the leader may park a Fetch that finds nothing new; None: the
    # fetchers' own (`metadata_fetch_wait_ms`, Kafka's quorum fetch max wait)
    max_wait_ms: int | None = None

    def brief(self) -> dict:
        return {"epoch": self.epoch, "fetch_offset": self.fetch_offset}


class QuorumFetchResponse(NamedTuple):
    epoch: int
    leader: str | None  # the leader the answering node knows (None: none)
    error: int
    entries: tuple  # (offset, epoch, MetadataRecord) after the fetch offset
    high_watermark: int
    diverging: tuple | None  # (epoch, end offset) to truncate to, or None
    corr: int = 0  # the answered QuorumFetch's

    def brief(self) -> dict:
        return {"epoch": self.epoch, "error": self.error, "records": len(self.entries),
                "high_watermark": self.high_watermark}


class BrokerRegistration(NamedTuple):
    broker: int
    incarnation: int
    # PreviousBrokerEpoch (v2+, KIP-966): the broker epoch its last clean shutdown wrote, -1
    # after any other stop (`LogManager.readBrokerEpochFromCleanShutdownFiles`)
    previous_broker_epoch: int = -1

    def brief(self) -> dict:
        return {"broker": self.broker}


class BrokerRegistrationResponse(NamedTuple):
    error: int
    broker_epoch: int
    incarnation: int

    def brief(self) -> dict:
        return {"error": self.error, "broker_epoch": self.broker_epoch}


class BrokerHeartbeat(NamedTuple):
    broker: int
    broker_epoch: int
    # CurrentMetadataOffset: the offset of the last metadata record the broker applied, -1
    # for none (`MetadataLoader.lastAppliedOffset`, 3.7.0)
    metadata_offset: int
    want_shutdown: bool = False  # WantShutDown: the broker asks for a controlled shutdown
    # set by a probe only: the request waited in the controller's event queue past its
    # deadline (the model's controller has no queue; KAFKA-15019)
    expired: bool = False

    def brief(self) -> dict:
        out = {"broker_epoch": self.broker_epoch, "metadata_offset": self.metadata_offset}
        if self.want_shutdown:
            out["want_shutdown"] = True
        return out


class BrokerHeartbeatResponse(NamedTuple):
    error: int
    fenced: bool
    leader: str | None
    should_shutdown: bool = False  # ShouldShutDown: the controller lets it stop now
    # IsCaughtUp: its metadata offset reached its RegisterBrokerRecord's (`registerBrokerRecordOffset`)
    is_caught_up: bool = False

    def brief(self) -> dict:
        out = {"error": self.error, "fenced": self.fenced}
        if self.should_shutdown:
            out["should_shutdown"] = True
        return out


class AllocateProducerIds(NamedTuple):
    """A broker's request for a block of producer ids (KIP-730), with its broker epoch."""

    corr: int
    broker: int
    broker_epoch: int

    def brief(self) -> dict:
        return {"corr": self.corr, "broker_epoch": self.broker_epoch}


class AllocateProducerIdsResponse(NamedTuple):
    corr: int
    error: int
    start: int  # ProducerIdStart
    length: int  # ProducerIdLen

    def brief(self) -> dict:
        return {"corr": self.corr, "error": self.error, "start": self.start}


class RaftVoterChange(NamedTuple):
    """An admin's AddRaftVoter (API 80) or RemoveRaftVoter (API 81) of `voter` (KIP-853), sent
    to the quorum leader; the cluster id, directory id and listeners are not modelled."""

    voter: str

    def brief(self) -> dict:
        return {"voter": self.voter}


class RaftVoterChangeResponse(NamedTuple):
    """The leader's answer to AddRaftVoter or RemoveRaftVoter: its error (NONE once the new
    voter set committed)."""

    voter: str
    error: int = 0

    def brief(self) -> dict:
        return {"voter": self.voter, "error": self.error}


class QuorumApiVersions(NamedTuple):
    """The quorum leader's ApiVersions to a voter it is adding (`AddVoterHandler`)."""

    def brief(self) -> dict:
        return {}


class QuorumApiVersionsResponse(NamedTuple):
    """A Raft node's ApiVersions answer, as the leader adding it reads it: its error and the
    kraft.version range it supports (`(min, max)`; None: the feature not listed)."""

    error: int = 0
    kraft_versions: tuple | None = (0, 1)

    def brief(self) -> dict:
        out = {"error": self.error}
        if self.kraft_versions is not None:
            out["kraft_versions"] = list(self.kraft_versions)
        return out
