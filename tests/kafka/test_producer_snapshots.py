"""A broker's producer-state snapshots and what a restart loads (`Log.loadProducerState` at
0.11.0.0/2.4.0, `UnifiedLog.rebuildProducerState` at 3.7.0): the snapshots a restart keeps, the
entries it loads from the latest, the replay above it, and the probe's `Restart` that poses it."""

from __future__ import annotations

import pytest

from sim.kafka.idempotence import (
    MAX_SNAPSHOTS,
    producers_of,
    record_append,
    reload_producer_state,
    take_snapshot,
)
from sim.kafka.log import Log
from sim.kafka.messages import Batch
from sim.kafka.rules.producer_state import loaded_from_snapshot, snapshots_kept
from tests.probe.helpers import assert_refused, probe_checks

S = 1_000_000
DAY_MS = 86_400_000


def _append(log: Log, pid: int, seq: int, at_s: float, epoch: int = 0) -> None:
    batch = Batch(f"b{log.leo}", "p1", 1, int(at_s * S), pid, epoch, seq)
    base = log.append(1, 0, batch, int(at_s * S))
    record_append(log, batch, base, int(at_s * S))


@pytest.mark.parametrize("offsets, start, end, recovery_point, kept", [
    ([2, 4], 0, 4, 4, [2, 4]),  # a clean shutdown: the log is flushed to its end
    ([2, 4], 0, 3, 4, [2]),     # above the log end (truncateAndReload)
    ([2, 4], 2, 4, 4, [4]),     # at the log start (truncateAndReload: `<= logStartOffset`)
    ([2, 4], 0, 4, 3, [2]),     # above the recovery point: recovery deleted it
    ([2, 4], 0, 4, 0, []),      # nothing flushed: the log is replayed from its start
])
def test_a_restart_keeps_the_snapshots_between_the_log_start_and_the_recovery_point(
        offsets, start, end, recovery_point, kept):
    assert snapshots_kept(offsets, start, end, recovery_point) == kept


def test_a_snapshot_entry_loads_unless_expired_and_before_2_4_unless_below_the_log_start():
    log = Log()
    _append(log, 1, 0, at_s=0)
    entry = producers_of(log)[1]  # last offset 0, last appended at 0
    assert loaded_from_snapshot(entry, 59 * S, 60_000, 0, drops_non_retained=False)
    assert not loaded_from_snapshot(entry, 60 * S, 60_000, 0, drops_non_retained=False)
    assert loaded_from_snapshot(entry, S, 60_000, 1, drops_non_retained=False)  # 2.4+
    assert not loaded_from_snapshot(entry, S, 60_000, 1, drops_non_retained=True)  # 0.11-2.3


def test_a_snapshot_is_taken_only_past_the_last_and_keeps_each_producers_last_batch():
    log = Log()
    take_snapshot(log)
    assert log.snapshots == []  # nothing past the log start yet
    for seq in range(3):
        _append(log, 1, seq, at_s=seq)
    take_snapshot(log)
    take_snapshot(log)  # testSkipSnapshotIfOffsetUnchanged
    assert [o for o, _ in log.snapshots] == [3]
    assert [b[0] for b in log.snapshots[0][1][1].batches] == [2]  # the last batch only
    assert len(producers_of(log)[1].batches) == 3  # the live state keeps its five
    for seq in range(3, 3 + MAX_SNAPSHOTS):
        _append(log, 1, seq, at_s=seq)
        take_snapshot(log)
    assert [o for o, _ in log.snapshots] == [4, 5]  # the latest two


def test_a_reload_loads_the_latest_kept_snapshot_and_replays_the_log_above_it():
    log = Log()
    _append(log, 1, 0, at_s=0)
    _append(log, 1, 1, at_s=1)
    take_snapshot(log)  # at 2: producer 1's batch of sequence 1 only
    log.flush()
    _append(log, 1, 2, at_s=2)  # above the snapshot, not flushed
    _append(log, 2, 0, at_s=3)
    reload_producer_state(log, 10 * S, DAY_MS, 5, drops_non_retained=False)
    one, two = producers_of(log)[1], producers_of(log)[2]
    assert [b[0] for b in one.batches] == [1, 2]  # the snapshot's batch, then the replay's
    assert (one.last_us, two.last_us) == (2 * S, 3 * S)  # dated by the batches' timestamps
    assert [o for o, _ in log.snapshots] == [2, 4] and log.recovery_point == 4


def test_a_reload_drops_the_expired_producers_of_the_snapshot_but_not_of_the_replay():
    log = Log()
    _append(log, 1, 0, at_s=0)
    log.flush()
    take_snapshot(log)
    _append(log, 2, 0, at_s=1)
    reload_producer_state(log, 70 * S, 60_000, 5, drops_non_retained=False)
    assert sorted(producers_of(log)) == [2]  # 69 s old too, but replayed from the log


def test_only_a_kept_snapshot_brings_back_a_producer_whose_batches_are_gone():
    # 2.4+: moving the log start keeps the producer state; a restart keeps it only if a snapshot
    # above the log start holds it (a clean shutdown's), not after a crash with nothing flushed
    for clean, expected in ((True, [1, 2]), (False, [2])):
        log = Log()
        _append(log, 1, 0, at_s=0)
        _append(log, 2, 0, at_s=1)
        log.set_hw(2)
        log.advance_start(1)
        if clean:
            log.flush()
            take_snapshot(log)
        reload_producer_state(log, 2 * S, DAY_MS, 5, drops_non_retained=False)
        assert sorted(producers_of(log)) == expected


def test_truncation_deletes_the_snapshots_above_the_new_log_end():
    log = Log()
    for seq in range(2):
        _append(log, 1, seq, at_s=seq)
        take_snapshot(log)
    log.truncate_to(1)
    assert [o for o, _ in log.snapshots] == [1] and log.recovery_point == 0
    log.truncate_fully_and_start_at(5)
    assert log.snapshots == [] and log.recovery_point == 5


RESTART = """
[protocol]
profile = "{profile}"
producer_id_expiration_ms = 60000
[cluster]
brokers = 1
[probe]
kafka_test = "ProducerStateManagerTest.testRemoveExpiredPidsOnReload"
kafka_tag = "{profile}.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 0
replicas = [1]
log = [{{ leader_epoch = 0, producer_id = 1, producer_epoch = 0, base_sequence = 0, timestamp = {ts} }}]
{state}
[[probe.steps]]
wait_ms = {wait}
[[probe.steps]]
deliver = "Restart"
from = "operator"
body = {{ clean = {clean} }}
expect = {{ "last_sequence:t-0/1" = 0, "producer_snapshots:t-0" = [1], "hosted:t-0" = false }}
"""


def _restart(clean: str = "true", wait: int = 100, ts: int = 0, state: str = "",
             profile: str = "2.4") -> dict:
    text = RESTART.format(profile=profile, clean=clean, wait=wait, ts=ts, state=state)
    return {check: model for check, (_kafka, model) in probe_checks(text).items()}


def test_a_restarted_broker_loads_its_producers_and_hosts_no_partition_until_told():
    assert _restart() == {"last_sequence:t-0/1": 0, "producer_snapshots:t-0": [1],
                          "hosted:t-0": False}


def test_a_clean_restart_drops_a_producer_expired_by_then_before_any_expiration_check():
    # the expiration check runs every 10 minutes by default: only the reload drops it at 70 s
    assert _restart(wait=70_000)["last_sequence:t-0/1"] == "none"


def test_an_unclean_restart_replays_the_log_dating_the_producer_by_its_batch():
    # no snapshot survives (nothing flushed): the replay keeps the producer, however old
    seen = _restart(clean="false", wait=70_000, state="recovery_point = 0")
    assert seen["last_sequence:t-0/1"] == 0 and seen["producer_snapshots:t-0"] == [1]


def test_a_restart_step_is_the_operators_and_snapshots_must_be_batch_ends():
    text = RESTART.format(profile="2.4", clean="true", wait=100, ts=0, state="")
    assert_refused(text.replace('from = "operator"', 'from = "p1"'), "from")
    assert_refused(text.replace("replicas = [1]\n", "replicas = [1]\nproducer_snapshots = [0]\n", 1),
                   "producer_snapshots")


def test_a_follower_truncation_ends_with_a_snapshot_at_the_new_log_end():
    # UnifiedLogTest.testProducerIdMapTruncateTo (3.7.0): snapshots at 2 and 3, truncations to
    # 2, 1, 0 leave [2], [1] (taken at the new end), [] (nothing past the log start)
    text = open("scenarios/conformance/log-producer-state-truncate-to-snapshots-3.7.toml").read()
    seen = probe_checks(text, by_step=True)
    assert [seen[f"{i}:producer_snapshots:t-0"][1] for i in range(3)] == [[2], [1], []]
