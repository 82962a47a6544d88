"""The controller's epoch rule for a partition state change.

Contract: pure function of plain values (ref §1.4 table, ZK column).
"""

from __future__ import annotations


def bumps_leader_epoch(bump_epoch: bool, state_written: bool, reason: str) -> bool:
    """A partition state the controller writes takes a new leader epoch when the change asks
    for one (an election, a new ISR in ZK mode, a reassignment step); an assignment-only
    change writes no partition state and bumps nothing."""
    return bump_epoch and state_written
