"""`sim.kafka.rules.mutants`: every planted bug is a swap of named rules, each swap differs from
Kafka's rule on some input, and no actor asks which mutant is planted."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from sim.kafka import errors as E
from sim.kafka.messages import Batch
from sim.kafka.profiles import MUTANTS, resolve_protocol
from sim.kafka.rules import Rules, rules_named
from sim.kafka.rules.mutants import SWAPS

ROOT = Path(__file__).resolve().parents[3]


def test_every_mutant_swaps_known_rules():
    names = {f.name for f in fields(Rules)}
    assert set(MUTANTS) == set(SWAPS)
    for mutant, swaps in SWAPS.items():
        assert swaps and set(swaps) <= names, mutant
        rules = rules_named(mutant)
        for name, fn in swaps.items():
            assert getattr(rules, name) is fn
            assert getattr(Rules(), name) is not fn


def _names_mutant(compare: ast.Compare) -> bool:
    """`x.mutant == "name"` (or !=, in, ...) in either order."""
    sides = [compare.left, *compare.comparators]
    reads = any(isinstance(n, ast.Attribute) and n.attr == "mutant" for s in sides
                for n in ast.walk(s))
    return reads and any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value
                         for s in sides for n in ast.walk(s))


def test_the_mutant_check_sees_a_comparison():
    assert _names_mutant(ast.parse('proto.mutant == "x"').body[0].value)
    assert _names_mutant(ast.parse('"x" != self.protocol.mutant').body[0].value)
    assert not _names_mutant(ast.parse('f.name != "mutant"').body[0].value)


def test_no_mutant_comparison_outside_the_swap_table():
    """A planted bug is a rule swap: no model code compares `mutant` with a name."""
    offenders = []
    for path in sorted(p for top in ("sim", "scenarios", "invariants", "reports", "epochsim")
                       for p in (ROOT / top).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and _names_mutant(node):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


_PROTO = resolve_protocol("proposed")
_BATCH = Batch("b", "p", 5, 0, pid=7, producer_epoch=0, base_seq=5)


@pytest.mark.parametrize("mutant,rule,args,right", [
    ("no_produce_epoch_check", "produce_local_log", (_PROTO, 5, True, 6), E.UNKNOWN_LEADER_EPOCH),
    ("no_stop_replica_epoch_check", "stop_replica_epoch_allowed", (_PROTO, 4, 5), False),
    ("stop_replica_equal_epoch_flipped", "stop_replica_epoch_allowed", (_PROTO, 5, 5), True),
    ("controller_reuses_leader_epoch", "bumps_leader_epoch", (True, True, "elect:offline"), True),
    ("follower_skips_truncation", "fetch_last_fetched_epoch", (_PROTO, False, 4), 4),
    ("requested_as_required", "idempotence_mode", (_PROTO, "requested", True, 3), "requested"),
    ("consumer_skips_validation", "validates_positions", (_PROTO,), True),
    ("alter_partition_not_resent", "controller_channel_resends", (_PROTO,), True),
    ("consumer_rests_for_good", "rest_after_fetch_error", ("retry", 0, 10, 3), None),
    ("spurious_out_of_order", "check_producer_append", (_PROTO, None, _BATCH), (E.NONE, None)),
    ("hint_accepts_equal_epoch", "update_partition_leadership", (_PROTO, 6, 3, 6, True), False),
    ("client_keeps_first_leader", "update_partition_leadership", (_PROTO, 6, 3, 7, True), True),
    ("raft_commits_without_majority", "raft_high_watermark", ([9, 4, 2], 2, 3), 4),
    ("broker_applies_uncommitted", "publishable_metadata", (((5, 1, "r"), (6, 1, "s")), 6), 1),
    ("leader_counts_pending_shrink", "maximal_isr", ((1, 2, 3), (1,)), (1, 2, 3)),
])
def test_each_swap_answers_otherwise_than_kafka(mutant, rule, args, right):
    assert getattr(Rules(), rule)(*args) == right
    assert getattr(rules_named(mutant), rule)(*args) != right
