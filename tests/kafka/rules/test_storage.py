"""`sim.kafka.rules.storage` and the controller's offline-replica rule: a broker's log
directories (`ReplicaManager.getPartitionOrError`, `LogManager.nextLogDirs` and
`handleLogDirFailure`, `KafkaController.processLeaderAndIsrResponseReceived`, read at 2.6.0 and
3.7.0). None of them differs by profile; they are asked under every one all the same."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.profiles import PROFILES
from sim.kafka.rules import storage as S
from sim.kafka.rules.controller import offline_replicas_after_leader_and_isr


@pytest.mark.parametrize("hosted,known,expected", [
    (S.ONLINE, True, E.NONE),
    (S.OFFLINE, True, E.KAFKA_STORAGE_ERROR),
    (S.OFFLINE, False, E.KAFKA_STORAGE_ERROR),
    (S.NOT_HOSTED, True, E.NOT_LEADER_OR_FOLLOWER),
    (S.NOT_HOSTED, False, E.UNKNOWN_TOPIC_OR_PARTITION),
])
def test_get_partition_or_error(hosted, known, expected):
    assert S.get_partition_or_error(hosted, known) == expected


@pytest.mark.parametrize("counts,expected", [
    ({0: 0}, 0), ({0: 3, 1: 1}, 1), ({0: 2, 1: 2, 2: 2}, 0), ({1: 4, 2: 4}, 1),
    ({0: 5, 2: 1}, 2),  # dir 1 failed: not a candidate
])
def test_a_new_log_goes_to_the_live_dir_with_the_fewest_logs(counts, expected):
    assert S.next_log_dir(counts) == expected


def test_a_broker_halts_only_when_no_log_dir_is_left():
    assert S.halts_on_log_dir_failure(0)
    assert not S.halts_on_log_dir_failure(1)


@pytest.mark.parametrize("profile", list(PROFILES))
def test_leader_and_isr_answers_mark_replicas_offline_and_online_again(profile):
    """KAFKA_STORAGE_ERROR marks a replica offline, NONE online; another error (an ignored
    equal epoch: STALE_CONTROLLER_EPOCH) changes nothing; only new ones start
    `onReplicasBecomeOffline`."""
    assert PROFILES[profile] is not None
    none = frozenset()
    current, new = offline_replicas_after_leader_and_isr(
        none, {"t-0": E.KAFKA_STORAGE_ERROR, "t-1": E.NONE, "t-2": E.STALE_CONTROLLER_EPOCH})
    assert (current, new) == ({"t-0"}, {"t-0"})
    again = offline_replicas_after_leader_and_isr(current, {"t-0": E.KAFKA_STORAGE_ERROR})
    assert again == ({"t-0"}, none)
    kept = offline_replicas_after_leader_and_isr(current, {"t-0": E.STALE_CONTROLLER_EPOCH})
    assert kept == ({"t-0"}, none)
    back = offline_replicas_after_leader_and_isr(current, {"t-0": E.NONE, "t-3": E.KAFKA_STORAGE_ERROR})
    assert back == ({"t-3"}, {"t-3"})
