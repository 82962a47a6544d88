"""What a profile's request versions cannot carry: the fields a probe may not set on it.

Contract: `off_the_wire(kind, body, protocol)` names the first request-level or partition field
of a probe step's `body` that the request version the profile sends has no room for, and what
brings it (an answer's too: a broker answers at the request's version, so a KIP-951 hint comes
only at the version that brought it); likewise a ListOffsets timestamp that only a later version may send (-3, -4), or
that no version may (below -4). `sim.kafka.probe.spec` refuses such a step, since the node
could never receive it.
"""

from __future__ import annotations

NO = -1


# A field that the request version a profile sends does not carry: (kind, partition field) ->
# (whether the profile's version carries it, which version and KIP bring it).
GATES = {
    ("StopReplica", "leader_epoch"): (lambda p: p.stop_replica_epoch, "StopReplica v3 (KIP-570, 2.6)"),
    ("Produce", "current_leader_epoch"): (lambda p: p.produce_epoch_check, "KIP-359 (never shipped)"),
    ("Fetch", "current_leader_epoch"): (lambda p: p.fetch_epoch_check, "Fetch v9 (KIP-320, 2.1)"),
    ("Fetch", "last_fetched_epoch"): (lambda p: p.follower_truncation == "diverging_epoch",
                                      "Fetch v12 (KIP-595, 2.7)"),
    ("OffsetsForLeaderEpoch", "current_leader_epoch"): (lambda p: p.fetch_epoch_check,
                                                        "OffsetsForLeaderEpoch v2 (KIP-320, 2.1)"),
    ("ListOffsets", "current_leader_epoch"): (lambda p: p.fetch_epoch_check,
                                              "ListOffsets v4 (KIP-320, 2.1)"),
}


# A field of an answer's partitions, which the broker sets only at the version the client's
# request was sent at: (kind, list of partitions) -> its gated fields.
ANSWER_GATES = {
    # (not its diverging epoch: before Fetch v12 it stands for the follower's folded
    # OffsetsForLeaderEpoch answer, `epoch-follower-*`)
    ("FetchResponse", "partitions"): {
        "current_leader": (lambda p: p.leader_discovery == "kip951", "Fetch v16 (KIP-951, 3.7)")},
    ("ProduceResponse", "results"): {
        "current_leader": (lambda p: p.leader_discovery == "kip951",
                           "Produce v10 (KIP-951, 3.7)")},
}


# The same for a request-level field, set when true or not -1.
REQUEST_GATES = {
    ("Fetch", "client_metadata"): (lambda p: p.follower_fetch, "Fetch v11 (KIP-392, 2.4)"),
    ("Fetch", "session_epoch"): (lambda p: p.fetch_sessions, "Fetch v7 (KIP-227, 1.1)"),
    ("Fetch", "forgotten"): (lambda p: p.fetch_sessions, "Fetch v7 (KIP-227, 1.1)"),
    ("Fetch", "replica_epoch"): (lambda p: p.kraft_isr_broker_epoch_check,
                                 "Fetch v15 (KIP-903, 3.5)"),
    ("ControlledShutdown", "broker_epoch"): (lambda p: p.broker_epoch_check,
                                             "ControlledShutdown v2 (KIP-380, 2.2)"),
    ("QuorumFetch", "high_watermark"): (lambda p: p.kraft_fetch_completes_on_hw,
                                        "Fetch v18 (KIP-1166, 4.1)"),
    ("Vote", "pre_vote"): (lambda p: p.raft_pre_vote, "Vote v2's PreVote (KIP-996, 4.0)"),
    ("ProduceResponse", "node_endpoints"): (lambda p: p.leader_discovery == "kip951",
                                            "Produce v10 (KIP-951, 3.7)"),
}


# A ListOffsets timestamp only a later version may send: value -> (whether the profile sends
# that version, the version and KIP, its name). A broker of any release takes any number, but
# a client asks these at the version that defines them or later (3.7.0
# `ListOffsetsRequest.Builder.forConsumer`: `requireMaxTimestamp` makes 7 the least version).
TIMESTAMP_GATES = {
    -3: (lambda p: p.list_offsets_max_timestamp != "none", "ListOffsets v7 (KIP-734, 3.0)",
         "MAX_TIMESTAMP"),
    -4: (lambda p: p.list_offsets_earliest_local, "ListOffsets v8 (KIP-405, 3.5)",
         "EARLIEST_LOCAL_TIMESTAMP"),
}
LOWEST_TIMESTAMP = -4


def off_the_wire(kind: str, body: dict, protocol) -> tuple[str, str] | None:
    """(field, what brings it) of the first request or partition field `body` sets that the
    profile's request version cannot carry, or None. A ListOffsets timestamp is named as
    `timestamp -3 (MAX_TIMESTAMP)`."""
    for (k, name), (carried, since) in REQUEST_GATES.items():
        value = body.get(name, NO)  # 0 is a value given, not false
        if k == kind and not carried(protocol) and value is not False and value != NO \
                and value not in ([], ()):
            return name, since
    for (k, name), (carried, since) in GATES.items():
        if k != kind or carried(protocol):
            continue
        for part in body.get("partitions", ()):
            if isinstance(part, dict) and name in part and part[name] != NO:
                return name, since
    return _answer_gate(kind, body, protocol) or _timestamp_gate(kind, body, protocol)


def _answer_gate(kind: str, body: dict, protocol) -> tuple[str, str] | None:
    for (k, parts), fields in ANSWER_GATES.items():
        if k != kind:
            continue
        for part in body.get(parts, ()):
            for name, (carried, since) in fields.items():
                if isinstance(part, dict) and part.get(name) not in (None, NO) \
                        and not carried(protocol):
                    return name, since
    return None


def _timestamp_gate(kind: str, body: dict, protocol) -> tuple[str, str] | None:
    if kind != "ListOffsets":
        return None
    for part in body.get("partitions", ()):
        ts = part.get("timestamp") if isinstance(part, dict) else None
        if ts in TIMESTAMP_GATES and not TIMESTAMP_GATES[ts][0](protocol):
            return f"timestamp {ts} ({TIMESTAMP_GATES[ts][2]})", TIMESTAMP_GATES[ts][1]
    return None


def bad_timestamp(kind: str, body: dict) -> int | None:
    """The index of the first ListOffsets partition whose timestamp no version defines (an
    integer below -4), or None."""
    if kind != "ListOffsets":
        return None
    for i, part in enumerate(body.get("partitions", ())):
        ts = part.get("timestamp") if isinstance(part, dict) else None
        if isinstance(ts, int) and ts < LOWEST_TIMESTAMP:
            return i
    return None
