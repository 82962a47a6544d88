"""A probe whose peers run other releases (`[protocol.brokers]`, a client's `profile`): a field
reaches the node under test only at a version both ends know, and the node reads a peer's
release as its ApiVersions answer."""

from __future__ import annotations

from tests.conftest import scenario_path
from tests.probe.helpers import assert_refused, consumer_probe, probe_checks


def _case(name: str) -> str:
    with open(scenario_path(f"conformance/{name}.toml")) as f:
        return f.read()


HINT_CASE = "kip951-hint-keeps-other-partitions-3.7"


def test_a_hint_from_a_broker_before_kip951_is_refused():
    """A 3.6 broker answers Produce below v10: no CurrentLeader, no NodeEndpoints."""
    text = _case(HINT_CASE).replace("[cluster]\n", '[protocol.brokers]\nb1 = "3.6"\n\n[cluster]\n',
                                    1)
    text = text.replace('profile = "3.7"', 'profile = "3.7"\ninter_broker_protocol = "3.6"', 1)
    assert_refused(text, "probe.steps[0].body")


def test_a_hint_to_a_client_before_kip951_is_refused():
    """A 3.6 producer sends Produce below v10, so a 3.7 broker answers without a hint."""
    text = _case(HINT_CASE).replace('topic = "input-topic"\n', 'topic = "input-topic"\n'
                                    'profile = "3.6"\n', 1)
    assert_refused(text, "probe.steps[0].body")


def test_the_hint_case_still_loads_with_both_ends_on_3_7():
    checks = probe_checks(_case(HINT_CASE))
    assert all(k == m for k, m in checks.values())


def _validation(broker: str) -> dict:
    head = consumer_probe("OffsetFetcherTest.testOffsetValidationSkippedForOldBroker")
    head = head.replace('[protocol]\nprofile = "3.7"',
                        f'[protocol]\nprofile = "3.7"\ninter_broker_protocol = "{broker}"\n'
                        f'[protocol.brokers]\nb1 = "{broker}"')
    return probe_checks(head + """[probe.state]
metadata = [{ tp = "t-0", leader = 1, leader_epoch = 1 }]
positions = [{ tp = "t-0", offset = 0, offset_epoch = 1, leader = 1, leader_epoch = 1, awaiting_validation = true }]
metadata_in_flight_to = 1
[[probe.steps]]
deliver = "MetadataResponse"
from = "b1"
body = { partitions = [{ tp = "t-0", leader = 1, leader_epoch = 2 }] }
expect = { "awaiting_validation:t-0" = false, "sent_count:OffsetsForLeaderEpoch" = 0 }
""")


def test_a_probe_broker_named_in_protocol_brokers_answers_apiversions_as_its_release():
    """b1 on 2.2 is not asked; on 2.3 (OffsetsForLeaderEpoch v3) it is, so the same checks
    then disagree: the peer's release, not the run's, decides."""
    assert all(k == m for k, m in _validation("2.2").values())
    assert _validation("2.3") == {"awaiting_validation:t-0": (False, True),
                                  "sent_count:OffsetsForLeaderEpoch": (0, 1)}
