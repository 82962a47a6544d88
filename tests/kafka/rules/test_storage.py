"""`sim.kafka.rules.storage` and the controller's offline-replica rule: a broker's log
directories (`ReplicaManager.getPartitionOrError`, `LogManager.nextLogDirs` and
`handleLogDirFailure`, `KafkaController.processLeaderAndIsrResponseReceived`, read at 2.6.0 and
3.7.0). Only whether a broker survives a failed directory differs by profile: JBOD's
failure handling came with KIP-112 in 1.0; before, any I/O error halted the broker."""

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


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_broker_halts_when_no_log_dir_is_left_or_before_kip_112(profile):
    proto = PROFILES[profile]
    assert S.halts_on_log_dir_failure(proto, 0)
    assert S.halts_on_log_dir_failure(proto, 1) is (profile in ("0.10.2", "0.11"))
    assert proto.survives_log_dir_failure is (profile not in ("0.10.2", "0.11"))


def test_leader_and_isr_answers_mark_replicas_offline_and_online_again():
    """KAFKA_STORAGE_ERROR marks a replica offline, NONE online; another error (an ignored
    equal epoch: STALE_CONTROLLER_EPOCH) changes nothing; only new ones start
    `onReplicasBecomeOffline`."""
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


@pytest.mark.parametrize("error,kip_320,expected", [
    (E.NOT_LEADER_OR_FOLLOWER, True, E.NOT_LEADER_OR_FOLLOWER),   # 2.1+: the metadata cache
    (E.NOT_LEADER_OR_FOLLOWER, False, E.UNKNOWN_TOPIC_OR_PARTITION),  # 2.0: none read
    (E.KAFKA_STORAGE_ERROR, False, E.KAFKA_STORAGE_ERROR),
    (E.UNKNOWN_TOPIC_OR_PARTITION, True, E.UNKNOWN_TOPIC_OR_PARTITION),
])
def test_epoch_lookup_of_a_partition_not_hosted(error, kip_320, expected):
    assert S.epoch_lookup_not_hosted_error(error, kip_320) == expected
