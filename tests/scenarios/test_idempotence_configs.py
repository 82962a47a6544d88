"""Producer configs Kafka refuses, and the idempotence a producer gets without asking."""

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from tests.scenarios.texts import MINIMAL, bad


@pytest.mark.parametrize("mode", ['"required"', '"requested"', "true"])
def test_a_profile_without_kip98_refuses_an_idempotent_producer(mode):
    text = MINIMAL + f'[protocol]\nprofile = "0.10.2"\n[[producers]]\ntopic = "t"\nenable_idempotence = {mode}\n'
    message = bad(text)
    assert "producers[0].enable_idempotence" in message and "0.10.2" in message
    assert "KIP-98" in message


def test_without_kip98_a_default_producer_is_not_idempotent():
    """`default` means idempotent under a profile whose default is on (3.0+, here `proposed`),
    but not once `idempotent_producer` is off."""
    modes = []
    for switch in ("true", "false"):
        text = (MINIMAL + '[run]\nduration_ms = 300\nsettle_ms = 100\n[protocol]\n'
                f'profile = "proposed"\nidempotent_producer = {switch}\n[[producers]]\ntopic = "t"\n')
        events = run_scenario(parse_scenario(text), 1, keep_events=True)["_events"]
        modes.append(next(e["effective_idempotence"] for e in events if e["kind"] == "client_config"))
    assert modes == ["required", "off"]


@pytest.mark.parametrize("profile,mode,setting,key", [
    ("3.7", "true", "acks = 1", "producers[0].acks"),
    ("0.11", '"required"', "acks = 0", "producers[0].acks"),
    ("2.5", '"requested"', "acks = 1", "producers[0].acks"),  # no modes: requested is true
    ("3.7", "true", "retries = 0", "producers[0].retries"),
])
def test_kafka_refuses_an_explicit_idempotent_producer_without_acks_all_or_retries(
        profile, mode, setting, key):
    """ProducerConfig's ConfigException: idempotence asked for explicitly needs acks=all
    and retries > 0, in every release since 0.11."""
    text = (MINIMAL + f'[protocol]\nprofile = "{profile}"\n[[producers]]\ntopic = "t"\n'
            f"enable_idempotence = {mode}\n{setting}\n")
    message = bad(text)
    assert message.startswith(f"scen.toml: {key}: ") and "Kafka refuses" in message, message


@pytest.mark.parametrize("profile,mode,setting,expected", [
    ("3.7", '"default"', "retries = 0", "off"),  # KIP-679: quietly off
    ("3.7", '"default"', "acks = 1", "off"),
    ("3.7", '"default"', "retries = 3", "required"),
    ("proposed", '"requested"', "acks = 1", "off"),  # KIP-185's best effort
    ("proposed", '"requested"', "retries = 0", "off"),
    ("proposed", '"requested"', "retries = 3", "requested"),
])
def test_an_idempotence_nobody_insisted_on_is_quietly_off_without_acks_all_or_retries(
        profile, mode, setting, expected):

    text = (MINIMAL + f'[run]\nduration_ms = 300\nsettle_ms = 100\n[protocol]\nprofile = "{profile}"\n'
            f'[[producers]]\ntopic = "t"\nenable_idempotence = {mode}\n{setting}\n')
    events = run_scenario(parse_scenario(text), 1, keep_events=True)["_events"]
    assert next(e["effective_idempotence"] for e in events if e["kind"] == "client_config") == expected

