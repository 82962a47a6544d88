"""KIP-853's requests a probe can deliver to a Raft node under test (3.9+, `raft_dynamic_voters`).

Contract: `VOTER_CHANGE_KINDS` (joined into `sim.kafka.probe.wire_raft.RAFT_KINDS`) holds
`AddRaftVoter` and `RemoveRaftVoter`, an admin client's requests (the `admin` pseudo-sender,
`ADMIN_VOTER_KINDS`) naming the controller to add or remove (`voter`): the node answers
`AddRaftVoterResponse` / `RemoveRaftVoterResponse` to `admin`, at once for a refusal, else once
the new voter set commits, so a later step reads it with `answer_to = "admin"`; and
`QuorumApiVersionsResponse`, a controller's answer to the leader's ApiVersions (`error`, and
`kraft_max`, the highest kraft.version it supports, from 0: -1 leaves the feature out).
Not expressible: the requests' cluster id, directory id and listeners (every node has one id
and one endpoint), so Kafka's INCONSISTENT_CLUSTER_ID and INVALID_REQUEST cases are not posed.
"""

from __future__ import annotations

from sim.kafka.kraft_messages import QuorumApiVersionsResponse, RaftVoterChange
from sim.kafka.probe.fields import Field
from sim.kafka.probe.kind import Kind

ADMIN_VOTER_KINDS = ("AddRaftVoter", "RemoveRaftVoter")


def _api_versions_response(f: dict, ctx) -> QuorumApiVersionsResponse:
    kraft = (0, f["kraft_max"]) if f["kraft_max"] >= 0 else None
    return QuorumApiVersionsResponse(f["error"], kraft)


VOTER_CHANGE_KINDS: dict[str, Kind] = {
    "AddRaftVoter": Kind(("voter",), (Field("voter", "str"),),
                         lambda f, ctx: RaftVoterChange(f["voter"]),
                         "an admin client's AddRaftVoter of a controller (KIP-853)"),
    "RemoveRaftVoter": Kind(("voter",), (Field("voter", "str"),),
                            lambda f, ctx: RaftVoterChange(f["voter"]),
                            "an admin client's RemoveRaftVoter of a controller (KIP-853)"),
    "QuorumApiVersionsResponse": Kind(
        ("voter",), (Field("error", "error", 0), Field("kraft_max", "int", 1)),
        _api_versions_response, "a controller's ApiVersions answer to the quorum leader "
        "adding it (its kraft.version range 0..kraft_max)", from_voter=True),
}
