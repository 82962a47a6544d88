"""KIP-853's reconfiguration invariant: a quorum leader changes its voter set one change at a
time.

Contract: a fold over `metadata_append` (the leader's writes, with their record kind) and
`metadata_commit` (its high watermark), per leader and epoch; nothing else. A ZooKeeper-mode
trace, or a KRaft one with static voters, has no VotersRecord: it holds vacuously.
"""

from __future__ import annotations

from invariants.base import Invariant

VOTERS_RECORD = "VotersRecord"  # `sim.kafka.kraft_messages.VOTERS`, as the trace writes it


class VoterChangesOneAtATime(Invariant):
    """A quorum leader appends a VotersRecord only once the VotersRecord it appended before in
    its epoch is committed (its high watermark past it). Raft's single-server membership
    changes are safe only one at a time (any majority of the old set meets any majority of the
    new one only when they differ by one voter), which Kafka enforces by answering
    REQUEST_TIMED_OUT while a change is pending or the last VotersRecord is uncommitted
    (`AddVoterHandler`, `RemoveVoterHandler`, 3.9.0-rc3); two uncommitted voter sets in a row
    let majorities that need not meet decide. Planted bug `raft_concurrent_voter_changes`."""

    name = "voter_changes_one_at_a_time"
    handlers = {"metadata_append": "on_append", "metadata_commit": "on_commit"}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.last: dict[tuple[str, int], tuple[int, int]] = {}  # (leader, epoch) -> (offset, seq)
        self.committed: dict[tuple[str, int], int] = {}  # (leader, epoch) -> high watermark

    def on_commit(self, ev):
        self.committed[(ev["node"], ev["epoch"])] = ev["high_watermark"]

    def on_append(self, ev):
        if ev["record"].get("kind") != VOTERS_RECORD:
            return
        key = (ev["node"], ev["epoch"])
        before = self.last.get(key)
        if before is not None and self.committed.get(key, 0) <= before[0]:
            self.violate(ev["t"], f"{ev['node']} appended a VotersRecord at metadata offset "
                         f"{ev['offset']} in epoch {ev['epoch']} while its VotersRecord at "
                         f"{before[0]} was not committed (high watermark "
                         f"{self.committed.get(key, 0)})", before[1], ev["seq"])
        self.last[key] = (ev["offset"], ev["seq"])
