"""A probe's checks of a leader's ISR against its replicas and min.insync.replicas
(`under_replicated`, `under_min_isr`, `at_min_isr`), and a partition offline from the start
(`offline`, Kafka's `markPartitionOffline`)."""

from tests.probe.helpers import broker_probe, partition_state, probe_checks

ALL_THREE = """
[[probe.steps]]
wait_ms = 1
expect = { "under_replicated:t-0" = true, "under_min_isr:t-0" = false, "at_min_isr:t-0" = true }
"""


def _leader(isr: list, min_isr: int) -> str:
    head = broker_probe("PartitionTest.probe", "b1", 3).replace(
        "brokers = 3\n", f"brokers = 3\nmin_insync_replicas = {min_isr}\n")
    return head + partition_state("t-0", leader=1, leader_epoch=0, replicas=[1, 2, 3],
                                  isr=isr) + ALL_THREE


def test_a_leader_s_isr_against_its_replicas_and_min_isr():
    checks = probe_checks(_leader([1, 2], min_isr=2))
    assert checks == {"under_replicated:t-0": (True, True), "under_min_isr:t-0": (False, False),
                      "at_min_isr:t-0": (True, True)}
    checks = probe_checks(_leader([1], min_isr=2))
    assert checks["under_min_isr:t-0"] == (False, True)
    assert checks["at_min_isr:t-0"] == (True, False)
    checks = probe_checks(_leader([1, 2, 3], min_isr=3))
    assert checks["under_replicated:t-0"] == (True, False)


def test_a_follower_or_a_missing_replica_is_none_of_them():
    checks = probe_checks(broker_probe("PartitionTest.probe", "b1", 2) + partition_state(
        "t-0", leader=2, leader_epoch=0, replicas=[1, 2], isr=[2], fetching=False) + """
[[probe.steps]]
wait_ms = 1
expect = { "under_replicated:t-0" = false, "at_min_isr:t-0" = false, "under_min_isr:t-1" = false }
""")
    assert all(kafka == model for kafka, model in checks.values()), checks


def _stop_replica(**offline) -> str:
    return broker_probe("ReplicaManagerTest.probe", "b1", 2) + partition_state(
        "t-0", leader=1, leader_epoch=1, replicas=[1, 2], **offline) + """
[[probe.steps]]
deliver = "StopReplica"
body = { controller_epoch = 0, partitions = [{ tp = "t-0", leader_epoch = 1, delete = false }] }
expect = { "error:t-0" = "KAFKA_STORAGE_ERROR", "hosted:t-0" = false }
"""


def test_an_offline_partition_answers_kafka_storage_error():
    checks = probe_checks(_stop_replica(offline=True))
    assert all(kafka == model for kafka, model in checks.values()), checks
    assert probe_checks(_stop_replica())["error:t-0"] == ("KAFKA_STORAGE_ERROR", "NONE")
