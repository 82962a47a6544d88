"""KIP-966's eligible leader replicas in the KRaft controller (`rules.kraft_elr`) against the
ELR cases of Kafka's `PartitionChangeBuilderTest` (read at 3.9.0-rc3, PartitionChangeRecord
version 2, leader epoch 100, partition epoch 200, replicas [1, 2, 3, 4], min ISR 3). Kafka's
ReplicationControlManager always builds with `useLastKnownLeaderInBalancedRecovery` true,
which the model follows: the cases that set it false are checked for their ELR, and their
LastKnownElr is the one the controller's setting gives (said at each)."""

from __future__ import annotations

from sim.kafka.messages import PartitionState
from sim.kafka.profiles import resolve_protocol
from sim.kafka.rules import kraft_elr

P41 = resolve_protocol("4.1")
ALL = (1, 2, 3, 4)


def _st(isr, elr=(), lke=(), leader=1) -> PartitionState:
    return PartitionState("foo-0", 1, leader, 100, 200, tuple(isr), ALL, elr=tuple(elr),
                          last_known_elr=tuple(lke))


def _build(st, usable, target_isr=None, unclean_shutdown=(), min_isr=3):
    return kraft_elr.elr_change(P41, st, usable, st.isr if target_isr is None else target_isr,
                                st.replicas, (), (), False, ((), ()), min_isr, unclean_shutdown)


def test_41_has_elr_and_40_has_not():
    assert P41.eligible_leader_replicas and not resolve_protocol("4.0").eligible_leader_replicas


def test_isr_shrink_below_min_isr_puts_the_removed_members_in_the_elr():
    """testEligibleLeaderReplicas_IsrShrinkBelowMinISR: ISR [1, 2, 3, 4] -> [1, 2]."""
    c = _build(_st(ALL), (1, 2, 4), (1, 2))
    assert (c.leader, c.leader_epoch, c.isr, c.elr, c.last_known_elr) == (1, 100, (1, 2), (3, 4), ())


def test_isr_expand_to_min_isr_clears_elr_and_last_known_elr():
    """testEligibleLeaderReplicas_IsrExpandAboveMinISR: ISR [1, 2] ELR [3] LKE [4] -> [1, 2, 3]."""
    c = _build(_st((1, 2), (3,), (4,)), (1, 2, 4), (1, 2, 3))
    assert (c.isr, c.elr, c.last_known_elr, c.partition_epoch) == ((1, 2, 3), (), (), 201)


def test_a_new_isr_member_not_in_the_elr_leaves_the_elr_alone():
    """testEligibleLeaderReplicas_IsrAddNewMemberNotInELR: ISR [1] ELR [3] -> ISR [1, 4]: ELR
    stays [3]. Kafka's test keeps LastKnownElr [2] (the flag false); with the controller's
    setting a change that keeps a leader clears it."""
    c = _build(_st((1,), (3,), (2,)), (1, 2, 4), (1, 4))
    assert (c.isr, c.elr, c.last_known_elr) == ((1, 4), (3,), ())


def test_an_unclean_shutdown_replica_leaves_the_elr():
    """testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr: ISR [1] ELR [2, 3],
    replica 3 shut down uncleanly: ELR [2] (Kafka's test, with the flag false, also puts 3 in
    LastKnownElr; the controller's setting does not)."""
    c = _build(_st((1,), (2, 3)), (1, 2, 4), unclean_shutdown=(3,))
    assert (c.leader, c.isr, c.elr, c.last_known_elr) == (1, (1,), (2,), ())


def test_an_elr_member_is_elected_when_the_isr_empties():
    """testEligibleLeaderReplicas_ElrCanBeElected: ISR [1] ELR [3], 1 offline, ISR -> []:
    3 leads an ISR of itself, 1 joins the ELR."""
    c = _build(_st((1,), (3,)), (2, 3, 4), ())
    assert (c.leader, c.leader_epoch, c.isr, c.elr, c.last_known_elr) == (3, 101, (3,), (1,), ())


def test_the_isr_can_shrink_to_nothing_and_keeps_the_last_known_leader():
    """testEligibleLeaderReplicas_IsrCanShrinkToZero (flag true): every replica offline, ISR
    -> []: no leader, ELR [1, 2, 3, 4], LastKnownElr [1]; a later change with replica 2's
    unclean shutdown leaves LastKnownElr as it is."""
    c = _build(_st(ALL), (), ())
    assert (c.leader, c.isr, c.elr, c.last_known_elr) == (-1, (), ALL, (1,))
    st = _st((), c.elr, c.last_known_elr, leader=-1)
    again = _build(st, (), unclean_shutdown=(2,))
    assert again.elr == (1, 3, 4) and again.last_known_elr == (1,)


def test_the_last_known_leader_is_elected_when_isr_and_elr_are_empty():
    """testEligibleLeaderReplicas_ElectLastKnownLeader: ISR [] ELR [] LKE [1], all usable:
    1 leads an ISR of itself (an unclean election) and LastKnownElr empties."""
    c = _build(_st((), (), (1,), leader=-1), ALL)
    assert (c.leader, c.leader_epoch, c.isr, c.elr, c.last_known_elr) == (1, 101, (1,), (), ())


def test_no_last_known_leader_while_the_elr_has_a_member():
    """testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail: ISR [] ELR [3] (fenced) LKE
    [1]: no change."""
    assert _build(_st((), (3,), (1,), leader=-1), (1, 2, 4)) is None


def test_a_fenced_last_known_leader_is_not_elected():
    """KAFKA-19522 (4.1.0): `canElectLastKnownLeader` asks `isAcceptableLeader` (3.7-4.0 did
    not, and elected it fenced)."""
    assert _build(_st((), (), (1,), leader=-1), (2, 3, 4)) is None


def test_effective_min_isr_is_at_most_the_replication_factor():
    """testEligibleLeaderReplicas_EffectiveMinIsr: min.insync.replicas 5 on RF 3 counts 3."""
    assert kraft_elr.effective_min_isr(5, 3) == 3 and kraft_elr.effective_min_isr(2, 3) == 2


def test_clean_shutdown_needs_the_registered_epoch():
    assert kraft_elr.clean_shutdown(42, 42)
    assert not kraft_elr.clean_shutdown(42, -1) and not kraft_elr.clean_shutdown(None, -1)


def test_a_completed_reassignment_leaves_its_removed_replicas_in_kafkas_elr():
    """foo-0 on [1, 2, 3] with ISR [1, 2, 3] reassigned to [3] (adding none, removing 1 and 2)
    completes with ISR [3], below min ISR 2: Kafka's `maybePopulateTargetElr` keeps 1 and 2 in
    the ELR though no longer replicas (finding-elr-removed-replica-elected); the proposal
    `elr_assigned_replicas_only` keeps only the assignment's."""
    st = PartitionState("foo-0", 1, 3, 5, 7, (1, 2, 3), (1, 2, 3))
    kafka = kraft_elr.elr_change(P41, st, (1, 2, 3), (1, 2, 3), (1, 2, 3), (), (1, 2), False,
                                 ((), (1, 2)), 2)
    assert (kafka.replicas, kafka.isr, kafka.elr) == ((3,), (3,), (1, 2))
    proposed = kraft_elr.elr_change(resolve_protocol("proposed"), st, (1, 2, 3), (1, 2, 3),
                                    (1, 2, 3), (), (1, 2), False, ((), (1, 2)), 2)
    assert (proposed.replicas, proposed.isr, proposed.elr) == ((3,), (3,), ())
