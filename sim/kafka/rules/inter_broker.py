"""What the inter-broker protocol version (IBP) decides: the fields inter-broker requests carry.

Contract: pure functions of a node's own switches (`proto`) and the switches of the cluster's
IBP (`ibp`, `sim.kafka.profiles.node_protocol` of the IBP's profile), returning a decision.
In ZK mode the controller picks the version of LeaderAndIsr, UpdateMetadata and StopReplica,
and a follower the version of Fetch and OffsetsForLeaderEpoch, from
`inter.broker.protocol.version`, not from the receiver (`ControllerChannelManager`,
`ReplicaFetcherThread` at 2.6.0); the receiver checks only what a request carries. So during
a rolling upgrade brokers on new code send what the old IBP allows until the IBP is bumped.
A node never runs an IBP newer than its own code (Kafka refuses such a config at startup),
which the loader and the `upgrade` and `bump_ibp` actions keep.
"""

from __future__ import annotations

from dataclasses import replace

from sim.kafka.profiles import CHOICES

# follower_truncation's modes in the order of the releases that brought them
_TRUNCATION_ORDER = CHOICES["follower_truncation"]


def stop_replica_carries_epoch(proto, ibp) -> bool:
    """Whether the controller's StopReplica carries the leader epoch (v3, KIP-570): only from
    IBP 2.6 (`KAFKA_2_6_IV0` in `sendStopReplicaRequests`); older versions read as -1 and a
    broker applies them whatever its own epoch."""
    return proto.stop_replica_epoch and ibp.stop_replica_epoch


def control_carries_broker_epoch(proto, ibp) -> bool:
    """Whether LeaderAndIsr, UpdateMetadata and StopReplica carry the receiver's broker epoch,
    and a broker's ControlledShutdown its own (KIP-380): from IBP 2.2 (LeaderAndIsr v2 at
    `KAFKA_2_2_IV0`; ControlledShutdown v2, `KafkaServer.controlledShutdown`); without it the
    receiver reads -1 and checks nothing."""
    return proto.broker_epoch_check and ibp.broker_epoch_check


def update_metadata_carries_offline_replicas(proto, ibp) -> bool:
    """Whether UpdateMetadata names each partition's offline replicas: v4, from IBP 1.0
    (`IBP_1_0_IV0` in `ControllerChannelManager.sendUpdateMetadataRequests` at 3.7.0), added
    with KIP-112's log directory failures (`survives_log_dir_failure`); v0-v3 carry none."""
    return proto.survives_log_dir_failure and ibp.survives_log_dir_failure


def follower_fetch_carries_epoch(proto, ibp) -> bool:
    """Whether a follower's Fetch carries CurrentLeaderEpoch (KIP-320): from IBP 2.1
    (`fetchRequestVersion` 10 at `KAFKA_2_1_IV2`)."""
    return proto.fetch_epoch_check and ibp.fetch_epoch_check


def truncation_mode(proto, ibp) -> str:
    """How a follower finds where to truncate, and how a leader answers it: the older of the
    broker's own `follower_truncation` and the IBP's. A 0.11+ broker at an older IBP
    truncates to its HW (`brokerSupportsLeaderEpochRequest`), OffsetsForLeaderEpoch answers
    name an epoch only from IBP 2.0 (v1), and truncation moves into Fetch (DivergingEpoch)
    only from IBP 2.7 (`isTruncationOnFetchSupported`). The model's modes bundle these with
    the code changes of the same releases (KAFKA-7164's truncation on every epoch change
    comes with `kip279`), so a broker on new code at an old IBP acts as the IBP's release,
    with one exception: at IBP 2.0 a 2.1+ broker still asks on every epoch change, since
    KAFKA-7164 changed `Partition.makeFollower` and no request (OffsetsForLeaderEpoch v1
    answers alike at 2.0.0 and 2.1.0). The IBP's switches are `profiles.ibp_protocol`'s:
    IBP 2.7 allows DivergingEpoch, which only 2.8 code uses."""
    own, wire = proto.follower_truncation, ibp.follower_truncation
    mode = min(own, wire, key=_TRUNCATION_ORDER.index)
    if mode == "kip279_leader_change" and own != mode:
        return "kip279"
    return mode


def replication_view(proto, ibp):
    """`proto` with `follower_truncation` as `truncation_mode` has it: the switches a broker
    replicates by under `ibp` (the same object when the IBP bounds nothing)."""
    mode = truncation_mode(proto, ibp)
    return proto if mode == proto.follower_truncation else replace(proto, follower_truncation=mode)


def follower_fetch_sessions(proto, ibp) -> bool:
    """Whether a follower fetches in a KIP-227 session: Fetch v7 from IBP 1.1 (`KAFKA_1_1_IV0`
    in `ReplicaFetcherThread.fetchRequestVersion`). Below it the request carries no session
    fields and the leader answers without a session, so each Fetch stays full."""
    return proto.fetch_sessions and ibp.fetch_sessions
