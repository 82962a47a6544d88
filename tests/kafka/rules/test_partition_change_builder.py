"""The KRaft controller's partition changes against Kafka's own cases:
`PartitionChangeBuilderTest` (metadata/src/test/java/org/apache/kafka/controller, read at
3.7.0), at PartitionChangeRecord versions 0 and 1 (MetadataVersion 3.7; version 2 is ELR,
KIP-966, which the model has from 4.1: its cases are `test_kraft_elr.py`). Its partitions, as the test builds them (leader
epoch 100, partition epoch 200):

- FOO: replicas [2, 1, 3], ISR [2, 1, 3], leader 1; broker 3 is not an acceptable leader.
- BAR: replicas [1, 2, 3, 4], ISR [1, 2, 3], removing [1], adding [4], leader 1; 3 not
  acceptable.
- BAZ: replicas [2, 1, 3], ISR [1, 3], leader 3; every broker acceptable.
- OFFLINE: replicas [2, 1, 3], ISR [3], no leader; only broker 1 acceptable.

Not posed: Election.PREFERRED (the model's preferred election is the operator's action,
`KraftAdmin.preferred_election`), leader recovery states, directories, ELR."""

from __future__ import annotations

import pytest

from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules import kraft

P37 = resolve_protocol("3.7")
USABLE = (1, 2, 4)  # brokers 1-4 but 3 (`r -> r != 3`)
FOO = dict(leader=1, leader_epoch=100, partition_epoch=200, isr=(2, 1, 3), replicas=(2, 1, 3))
BAR = dict(leader=1, leader_epoch=100, partition_epoch=200, isr=(1, 2, 3),
           replicas=(1, 2, 3, 4))
BAZ = dict(leader=3, leader_epoch=100, partition_epoch=200, isr=(1, 3), replicas=(2, 1, 3))
OFFLINE = dict(leader=-1, leader_epoch=100, partition_epoch=200, isr=(3,), replicas=(2, 1, 3))
MOVING = {"FOO": ((), ()), "BAR": ((4,), (1,)), "BAZ": ((), ()), "OFFLINE": ((), ())}
PARTS = {"FOO": FOO, "BAR": BAR, "BAZ": BAZ, "OFFLINE": OFFLINE}


def _build(name: str, usable=USABLE, target_isr=None, target_replicas=None, moving=None,
           unclean: bool = False, proto=P37):
    """`createXBuilder(version)[.setTarget...].build()`: the change, or None for no record."""
    p = PARTS[name]
    adding, removing = MOVING[name] if moving is None else moving
    return kraft.assignment_change(
        proto, p["leader"], p["leader_epoch"], p["partition_epoch"], p["isr"], p["replicas"],
        usable, p["isr"] if target_isr is None else target_isr,
        p["replicas"] if target_replicas is None else target_replicas, adding, removing,
        unclean, MOVING[name])


def _leader(name: str, **kw) -> int:
    change = _build(name, **kw)
    return PARTS[name]["leader"] if change is None else change.leader


@pytest.mark.parametrize("name,kw,leader", [
    ("FOO", {}, 1),
    ("FOO", dict(unclean=True), 1),
    ("FOO", dict(target_isr=(1, 3)), 1),
    ("FOO", dict(target_isr=(1, 3), unclean=True), 1),
    ("FOO", dict(target_isr=(3,)), -1),
    ("FOO", dict(target_isr=(3,), unclean=True), 2),  # unclean: an ISR of itself
    ("FOO", dict(target_isr=(4,), target_replicas=(2, 1, 3, 4), unclean=True), 4),
    ("BAZ", dict(usable=(1, 2, 3)), 3),
    ("BAZ", dict(usable=(1, 2, 3), unclean=True), 3),
])
def test_elect_leader(name, kw, leader):
    """testElectLeader (its Election.PREFERRED rows aside)."""
    assert _leader(name, **kw) == leader


@pytest.mark.parametrize("name,kw", [
    ("FOO", {}), ("FOO", dict(unclean=True)), ("BAR", {}), ("BAR", dict(unclean=True)),
])
def test_no_change(name, kw):
    """testNoChange: no record, though FOO's ISR holds broker 3, which may not lead."""
    assert _build(name, **kw) is None


def test_isr_change_doesnt_bump_leader_epoch():
    assert _build("FOO", target_isr=(2, 1)) == kraft.AssignmentChange(
        1, 100, 201, (2, 1), (2, 1, 3), (), ())


def test_an_isr_shrink_bumps_the_leader_epoch_at_metadata_version_3_5():
    """testTriggerLeaderEpochBumpIfNeeded's last case (IBP_3_5_IV2, KAFKA-15021)."""
    change = _build("FOO", target_isr=(2, 1), proto=resolve_protocol("3.5"))
    assert (change.leader, change.leader_epoch) == (1, 101)


def test_adding_replicas_does_not_bump_the_leader_epoch():
    """testTriggerLeaderEpochBumpIfNeeded: target replicas [2, 1, 3, 4], no leader change."""
    assert _build("FOO", target_replicas=(2, 1, 3, 4)).leader_epoch == 100


def test_isr_change_and_leader_change():
    """The ISR keeps broker 3, which may not lead: the builder does not filter it."""
    assert _build("FOO", target_isr=(2, 3)) == kraft.AssignmentChange(
        2, 101, 201, (2, 3), (2, 1, 3), (), ())


def test_reassignment_rearranges_replicas():
    assert _build("FOO", target_replicas=(3, 2, 1)) == kraft.AssignmentChange(
        1, 100, 201, (2, 1, 3), (3, 2, 1), (), ())


def test_isr_enlargement_completes_reassignment():
    assert _build("BAR", target_isr=(1, 2, 3, 4)) == kraft.AssignmentChange(
        2, 101, 201, (2, 3, 4), (2, 3, 4), (), ())


def test_revert_reassignment():
    """PartitionReassignmentRevert(BAR): replicas and ISR [1, 2, 3]; the change removes
    replica 4, so the leader epoch moves (the record sets leader 1)."""
    original, isr, unclean = kraft.reverted_reassignment(BAR["replicas"], (4,), BAR["isr"])
    assert (original, isr, unclean) == ((1, 2, 3), (1, 2, 3), False)
    assert _build("BAR", target_isr=isr, target_replicas=original, moving=((), ())) == \
        kraft.AssignmentChange(1, 101, 201, (1, 2, 3), (1, 2, 3), (), ())


def test_removing_replica_reassignment():
    replicas, adding, removing = kraft.reassignment_target(FOO["replicas"], (1, 2))
    assert (replicas, adding, removing) == ((1, 2, 3), (), (3,))
    assert _build("FOO", target_replicas=replicas, moving=(adding, removing)) == \
        kraft.AssignmentChange(1, 101, 201, (2, 1), (1, 2), (), ())


def test_adding_replica_reassignment():
    replicas, adding, removing = kraft.reassignment_target(FOO["replicas"], (1, 2, 3, 4))
    assert (replicas, adding, removing) == ((1, 2, 3, 4), (4,), ())
    assert _build("FOO", target_replicas=replicas, moving=(adding, removing)) == \
        kraft.AssignmentChange(1, 100, 201, (2, 1, 3), (1, 2, 3, 4), (4,), ())


@pytest.mark.parametrize("name,target_isr,usable,expected", [
    ("FOO", (3,), USABLE, (2, 101, (2,))),
    ("OFFLINE", None, (1,), (1, 101, (1,))),
    ("OFFLINE", (2,), (1,), (1, 101, (1,))),
])
def test_unclean_leader_election(name, target_isr, usable, expected):
    change = _build(name, target_isr=target_isr, usable=usable, unclean=True)
    assert (change.leader, change.leader_epoch, change.isr) == expected


def test_stopped_leader_is_demoted_after_reassignment_completes_even_if_no_new_eligible_leaders():
    """A reassignment from [0, 1] to [2, 3] (replicas [2, 3, 0, 1], ISR [0, 1], leader 0,
    epochs 0) completes once [0, 1, 2, 3] is the target ISR; with no acceptable leader
    (`l -> false`) the partition is left without one, not led by a replica it just removed."""
    change = kraft.assignment_change(P37, 0, 0, 0, (0, 1), (2, 3, 0, 1), (), (0, 1, 2, 3),
                                     (2, 3, 0, 1), (2, 3), (0, 1), False, ((2, 3), (0, 1)))
    assert change == kraft.AssignmentChange(-1, 1, 1, (2, 3), (2, 3), (), ())
