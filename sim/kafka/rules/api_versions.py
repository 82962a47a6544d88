"""What a client reads from a broker's ApiVersions answer: which request versions it takes.

Contract: `broker_takes(broker_profile, api, version)` says whether a broker of release
`broker_profile` answers request `api` at `version` or later, from the release each version
arrived in (`SINCE`, read from the request schemas at the release tags). A Kafka client asks
every broker it connects to for its versions (`NetworkClient`'s ApiVersions round trip, kept
in `ApiVersions`) and picks what it sends, or whether it sends at all, from them; this is
what the model's clients decide by. Pure: profile names in, a decision out.
"""

from __future__ import annotations

from sim.kafka.profiles import newer

# (request, version) -> the first release whose broker takes it
SINCE = {
    # v3 adds ReplicaId (OffsetsForLeaderEpochRequest.schemaVersions: v0-v2 at 2.2.0, v0-v3 at
    # 2.3.0); a consumer validates only against a broker that takes it, since older ones may
    # demand CLUSTER_ACTION for the request (`OffsetsForLeaderEpochRequest.
    # supportsTopicPermission`, 2.3.0)
    ("OffsetsForLeaderEpoch", 3): "2.3",
}


def broker_takes(broker_profile: str, api: str, version: int) -> bool:
    """Whether a broker on `broker_profile` answers `api` at `version` (a pair `SINCE` names)."""
    return not newer(SINCE[(api, version)], broker_profile)
