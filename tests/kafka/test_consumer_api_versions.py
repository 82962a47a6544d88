"""A consumer against an older broker: KIP-320's position validation needs OffsetsForLeaderEpoch
v3 (2.3), which a consumer reads from the leader's ApiVersions answer; an older leader is not
asked and the position is fetched from as it stands (`Fetcher.validateOffsetsAsync` at 2.4.0,
`SubscriptionState.maybeValidatePositionForCurrentLeader` at 2.6.0 and 3.7.0)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.rules.client_consumer import leader_validates
from tests.conftest import scenario_path


@pytest.mark.parametrize(("profile", "asked"), [("0.11", False), ("2.0", False), ("2.2", False),
                                                ("2.3", True), ("3.7", True), ("proposed", True)])
def test_only_a_leader_that_takes_offsets_for_leader_epoch_v3_is_asked(profile, asked):
    assert leader_validates(profile) is asked


def _kip320_run(brokers: str, consumer: str) -> list[dict]:
    """kip320-consumer-truncation-fixed (b1 crashes; k1's position, past b2's log, follows b2
    in a new epoch) with its brokers on `brokers` and k1 on `consumer`."""
    with open(scenario_path("kip320-consumer-truncation-fixed.toml")) as f:
        text = f.read()
    for old, new in (('[protocol]\nprofile = "2.5"', f'[protocol]\nprofile = "{brokers}"'),
                     ('name = "k1"\ntopic = "t"',
                      f'name = "k1"\ntopic = "t"\nprofile = "{consumer}"')):
        assert text.count(old) == 1
        text = text.replace(old, new)
    return run_scenario(parse_scenario(text, "k.toml"), 1, keep_events=True)["_events"]


def _k1(evs: list[dict]) -> tuple[list, list]:
    sent = [e for e in evs if e["node"] == "k1" and e["kind"] == "send"
            and e["msg"] == "OffsetsForLeaderEpoch"]
    actions = [e["action"] for e in evs if e["node"] == "k1" and e["kind"] == "validate_position"]
    return sent, actions


def test_a_2_5_consumer_does_not_validate_against_2_2_brokers():
    """The leader change reaches k1, which does not ask b2 (2.2) and fetches on from its
    position: no truncation is detected, as with a 2.2 consumer."""
    sent, actions = _k1(_kip320_run("2.2", "2.5"))
    assert sent == []
    assert actions and set(actions) == {"skipped"}


def test_a_2_5_consumer_validates_against_2_3_brokers():
    """The control: the same run on 2.3 brokers asks b2 and detects the truncation."""
    sent, actions = _k1(_kip320_run("2.3", "2.5"))
    assert sent and "truncate" in actions and "skipped" not in actions
