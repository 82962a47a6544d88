"""What a profile's request versions cannot carry: the fields a probe may not set on it.

Contract: `off_the_wire(kind, body, protocol)` names the first request-level or partition field
of a probe step's `body` that the request version the profile sends has no room for, and what
brings it; `sim.kafka.probe.spec` refuses such a step, since the node could never receive it.
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
}


def off_the_wire(kind: str, body: dict, protocol) -> tuple[str, str] | None:
    """(field, what brings it) of the first request or partition field `body` sets that the
    profile's request version cannot carry, or None."""
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
    return None
