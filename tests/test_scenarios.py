"""Scenario tests: every shipped scenario meets its declared expectation at its pinned seed,
and the planted mutants turn the fixed scenarios into failures of the invariant that guards them."""

from __future__ import annotations

import glob
import os

import pytest

from tests.conftest import ROOT, run_cached

SHIPPED = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "scenarios", "*.toml")))
# Cases a search of the correct model found and nobody has yet classified (docs/selftest.md):
# each must still reproduce, so that whoever classifies it starts from the run that was found.
UNCLASSIFIED = sorted("unclassified/" + os.path.basename(p)[:-5]
                      for p in glob.glob(os.path.join(ROOT, "scenarios", "unclassified", "*.toml")))


@pytest.mark.parametrize("name", SHIPPED + UNCLASSIFIED)
def test_scenario_meets_expectation(name):
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    seed = load_scenario(scenario_path(name)).seed
    verdict = run_cached(name, seed)
    assert verdict["expectation_met"], (name, verdict["expect"], verdict["violations"][:3])


# A search's finding that breaks an invariant: the README's main job runs the suite at three
# seeds (its own and the next two), so its story must break the invariant at each, not only
# at the seed it was found at.
FINDINGS = sorted(os.path.basename(p)[:-5]
                  for p in glob.glob(os.path.join(ROOT, "scenarios", "finding-*.toml"))
                  if 'expect = "violation:' in open(p, encoding="utf-8").read())


@pytest.mark.parametrize("name", FINDINGS)
def test_a_finding_reproduces_at_the_suites_three_seeds(name):
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    seed = load_scenario(scenario_path(name)).seed
    for s in (seed + 1, seed + 2):
        verdict = run_cached(name, s)
        assert verdict["expectation_met"], (name, s, verdict["expect"], verdict["violations"][:3])


@pytest.mark.parametrize("name,mutant,invariant", [
    ("kip359-stale-leader-fixed", "no_produce_epoch_check", "stale_leader_append"),
    ("kip570-stop-replica-reorder-fixed", "no_stop_replica_epoch_check", "stop_replica_out_of_order"),
    ("kafka13972-stray-replica-fixed", "stop_replica_equal_epoch_flipped", "stray_replica"),
    ("smoke", "hw_not_monotonic", "high_watermark_monotonic"),
])
def test_planted_mutant_is_caught(name, mutant, invariant):
    verdict = run_cached(name, 1, (("protocol.mutant", mutant),))
    assert invariant in verdict["violated"], verdict["violated"]


@pytest.mark.parametrize("mutant, invariant", [
    ("", None), ("consumer_rests_for_good", "consume_stalled_after_heal"),
    ("client_keeps_first_leader", "produce_stalled_after_heal")])
def test_the_liveness_mix_gives_every_liveness_rule_something_to_judge(mutant, invariant):
    """mix-client-liveness exists so that the after-heal rules judge something: at its pinned
    seed all three do, and the clients' planted liveness bugs fail it."""
    verdict = run_cached("mix-client-liveness", 2, (("protocol.mutant", mutant),))
    judged = verdict["metrics"]["liveness_judged"]
    if invariant is None:
        assert verdict["violated"] == [] and all(judged.values()), (verdict["violated"], judged)
    else:
        # (client_keeps_first_leader stalls the consumer too: it is a client-side bug)
        assert invariant in verdict["violated"], verdict["violated"]
        assert set(verdict["violated"]) <= set(judged), verdict["violated"]


def test_an_alter_partition_never_resent_leaves_the_partition_under_replicated():
    """The self-test base's scripted faults: the controller dies while b1's AlterPartition
    that adds b3 back is on its way. Kafka sends it again to the next controller and the ISR
    is whole by the end; with the planted bug it never is."""
    name = "selftest/alter_partition_not_resent"
    planted = run_cached(name, 1)
    assert planted["violated"] == ["under_replicated_after_heal"], planted["violated"]
    assert "ISR [1, 2] short of replicas [1, 2, 3]" in planted["violations"][0]["message"]
    clean = run_cached(name, 1, (("protocol.mutant", ""),))
    assert clean["violated"] == [], clean["violated"]


@pytest.mark.parametrize("name", ["kip279-fast-failover-fixed",
                                  "kafka7164-same-leader-truncation-fixed"])
def test_kip101_truncation_brings_the_divergence_back(name):
    """The fixed truncation scenarios are the legacy ones with follower_truncation = kip279:
    KIP-101's rule on the fixed scenario diverges again."""
    verdict = run_cached(name, 1, (("protocol.follower_truncation", "kip101"),))
    assert verdict["violated"] == ["log_divergence"], verdict["violated"]


def test_high_watermark_truncation_alone_loses_the_acked_batch():
    """The KIP-101 pair differs by profile (0.10.2 / 0.11); on the fixed one, the truncation
    switch alone brings the loss back."""
    verdict = run_cached("kip101-hw-truncation-fixed", 1,
                         (("protocol.follower_truncation", "high_watermark"),))
    assert "acked_write_lost" in verdict["violated"], verdict["violated"]
    clean = run_cached("kip101-hw-truncation-fixed", 1)
    assert clean["violated"] == [], clean["violated"]


@pytest.mark.parametrize("overrides,violated", [
    ((), []),
    ((("protocol.fetch_epoch_check", False),), ["log_divergence"]),
    # from 2.8 every Fetch names the follower's last epoch: the zombie truncates even unfenced
    ((("protocol.profile", "3.7"), ("protocol.fetch_epoch_check", False)), []),
])
def test_kip320_fetch_epochs_alone_fence_the_zombie_follower_on_2_4(overrides, violated):
    """The KAFKA-6880 pair differs by profile (1.0 / 2.4); on 2.4, where a follower checks for
    divergence only after an epoch change, turning KIP-320's fetch epochs off brings the
    divergence back."""
    verdict = run_cached("kafka6880-zombie-follower-fixed", 1, overrides)
    assert verdict["violated"] == violated, verdict["violated"]


@pytest.mark.parametrize("name,on,violated", [
    ("kafka14704-follower-hw-before-truncation-legacy", False, []),
    ("kafka14704-follower-hw-before-truncation-fixed", True, ["log_divergence"]),
])
def test_the_hw_before_truncation_switch_alone_decides_kafka14704(name, on, violated):
    """The KAFKA-14704 pair differs by profile (3.4.0 / 3.7); the switch alone flips each."""
    verdict = run_cached(name, 1, (("protocol.hw_before_diverging_truncation", on),))
    assert verdict["violated"] == violated, verdict["violated"]


def test_legacy_profiles_differ_only_by_the_switch():
    """The fixed KIP-359 scenario is the legacy one plus produce_epoch_check: flipping the
    switch off on the fixed scenario brings the violation back."""
    verdict = run_cached("kip359-stale-leader-fixed", 1, (("protocol.produce_epoch_check", False),))
    assert "stale_leader_append" in verdict["violated"]


def test_one_request_in_flight_keeps_an_idempotent_producer_on_one_leader():
    """max.in.flight.requests.per.connection = 1 mutes a partition while one of its batches
    is out, to any broker (Kafka's guaranteeMessageOrder): the split across an old and a new
    leader that writes batches twice (the finding scenario) cannot happen."""
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    from tests.conftest import scenario_path
    name = "finding-idempotent-duplicate-after-split-leaders"
    text = open(scenario_path(name), encoding="utf-8").read()
    assert "duplicate_append" in run_cached(name, 1)["violated"]
    one = text.replace("delivery_timeout_ms = 4000\n", "delivery_timeout_ms = 4000\nmax_in_flight = 1\n")
    assert one != text
    verdict = run_scenario(parse_scenario(one, "one-in-flight.toml"), 1)
    assert verdict["violated"] == [], verdict["violated"]
