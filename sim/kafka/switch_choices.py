"""The values each protocol switch may take: `CHOICES` for the multi-valued ones (oldest
release's first), `BOUNDS` for the integer ones, and `switch_names()` in `Protocol`'s order.
A pure module beside `sim.kafka.switches`, read by the profiles and the scenario loader.
"""

from __future__ import annotations

from dataclasses import fields

from sim.kafka.switches import Protocol

# the values of each multi-valued switch, oldest release's first
CHOICES = {
    "stop_replica_equal_epoch": ("reject", "accept"),
    "client_accepts_recreated_topic": ("off", "both_ids", "new_id"),
    "leader_discovery": ("metadata", "kip951", "refresh_no_backoff"),
    "client_backoff": ("constant", "exponential"),
    "least_loaded_node": ("fewest_in_flight", "established_first", "oldest_attempt"),
    "unknown_producer": ("out_of_order", "unknown_producer_id", "accept"),
    "old_duplicate": ("duplicate_sequence", "out_of_order"),
    "fetch_session_rotation": ("responded", "records"),
    "follower_truncation": ("high_watermark", "kip101", "kip279_leader_change", "kip279",
                            "diverging_epoch"),
    "list_offsets_max_timestamp": ("none", "first_record", "last_offset", "batch_epoch"),
    "admin_elect_leaders": ("none", "preferred", "typed"),
    "kraft_reregistration": ("new_epoch", "keeps_state", "keeps_epoch"),
}

# the range of each integer switch
BOUNDS = {"idempotent_batches": (1, 5), "producer_id_expiration_ms": (1, 2**53)}


def elect_leaders_refused(mode: str, election_type: str) -> str | None:
    """Why an admin cannot send a controller whose `admin_elect_leaders` is `mode` this
    election by request (a probe's ElectLeaders step, a run's `elect_leaders` fault), or None:
    no request before 2.2 (only the PreferredReplicaElection znode), and no election type
    before ElectLeaders v1 (KIP-460, 2.4)."""
    if mode == "none":
        return ("no ElectLeaders request before 2.2 (KIP-183); a preferred election goes "
                "through the PreferredReplicaElection znode")
    if mode == "preferred" and election_type != "PREFERRED":
        return ("ElectPreferredLeaders (2.2-2.3) elects preferred leaders only; UNCLEAN comes "
                "with ElectLeaders v1 (KIP-460, 2.4)")
    return None


def switch_names() -> list[str]:
    """The switches' names in `Protocol`'s order, the planted-bug field left out."""
    return [f.name for f in fields(Protocol) if f.name != "mutant"]
