"""voter_changes_one_at_a_time (KIP-853) on hand-built traces, and its planted bug in a run."""

from __future__ import annotations

from tests.conftest import run_cached
from tests.invariants.tracebuilder import TraceBuilder

VOTERS_123 = {"kind": "VotersRecord", "voters": ["c1", "c2", "c3"]}
VOTERS_12 = {"kind": "VotersRecord", "voters": ["c1", "c2"]}
NOOP = {"kind": "NoOpRecord"}


def _append(tb, node, epoch, offset, record):
    return tb.add(node, "metadata_append", offset=offset, epoch=epoch, record=record)


def _commit(tb, node, epoch, hw):
    return tb.add(node, "metadata_commit", epoch=epoch, high_watermark=hw, records=[])


def _changes(commit_between: bool, epoch_between: int = 1):
    tb = TraceBuilder()
    _append(tb, "c1", 1, 2, VOTERS_123)
    _append(tb, "c1", 1, 3, NOOP)
    if commit_between:
        _commit(tb, "c1", 1, 3)  # offset 2 committed
    tb.t += 1000
    _append(tb, "c1", epoch_between, 4, VOTERS_12)
    return tb


def test_voter_changes_one_at_a_time_holds_for_a_change_after_the_last_committed():
    assert _changes(commit_between=True).violations("voter_changes_one_at_a_time") == []


def test_voter_changes_one_at_a_time_holds_per_leader_and_epoch():
    """Another epoch's leader judges its own changes (Kafka's new leader checks its own high
    watermark against the last VotersRecord; its own appends are what this invariant sees)."""
    assert _changes(False, epoch_between=2).violations("voter_changes_one_at_a_time") == []


def test_voter_changes_one_at_a_time_violated_by_a_change_over_an_uncommitted_one():
    tb = _changes(commit_between=False)
    assert tb.violations("voter_changes_one_at_a_time") == [
        ("voter_changes_one_at_a_time", 1000, (0, 2))]
    assert "while its VotersRecord at 2 was not committed" in \
        tb.check("voter_changes_one_at_a_time")[0][0].message


def test_voter_changes_one_at_a_time_catches_its_planted_bug_and_the_model_holds():
    name = "kraft-voters-concurrent-changes-mutant"
    assert "voter_changes_one_at_a_time" in run_cached(name, 1)["violated"]
    clean = run_cached(name, 1, (("protocol.mutant", ""),))
    assert clean["violated"] == []
