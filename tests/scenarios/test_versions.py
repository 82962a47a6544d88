"""Per-node versions in scenario files: [protocol.brokers], inter_broker_protocol and each
client's `profile`, their errors, and their round trip through the trace header."""

from __future__ import annotations

import pytest

from scenarios.schema import parse_scenario
from scenarios.writer import scenario_to_toml
from sim.kafka.options import Options
from sim.kafka.profiles import PROFILES
from tests.scenarios.texts import MINIMAL, bad

MIXED = """
expect = "pass"
[protocol]
profile = "2.5"
inter_broker_protocol = "1.0"
produce_epoch_check = true
[protocol.brokers]
b1 = "1.0"
b3 = "2.6"
[[topics]]
name = "t"
[[producers]]
topic = "t"
profile = "3.7"
[[producers]]
topic = "t"
[[consumers]]
topic = "t"
profile = "1.0"
"""


def test_each_node_gets_its_own_profile_and_the_run_overrides():
    o = parse_scenario(MIXED).options
    assert o.nodes == (("b1", "1.0"), ("b3", "2.6"), ("p1", "3.7"), ("k1", "1.0"))
    assert o.ibp == "1.0" and o.inter_broker_protocol == "1.0"
    assert [o.node_profile(n) for n in ("b1", "b2", "b3", "c1", "p1", "p2", "k1")] == \
        ["1.0", "2.5", "2.6", "2.5", "3.7", "2.5", "1.0"]
    b1 = o.protocol_of("b1")
    # the node's own row, with the run's override on top
    assert b1.unknown_producer == "unknown_producer_id" and b1.produce_epoch_check is True
    assert o.protocol_of("p1").leader_discovery == "kip951"
    assert o.protocol_of("b2") == o.protocol


def test_a_run_on_one_version_records_nothing_new_in_the_header():
    o = parse_scenario(MINIMAL).options
    assert o.nodes == () and o.inter_broker_protocol == "" and o.ibp == "proposed"
    assert set(o.to_json()["protocol"]) == set(o.protocol.to_json()) | {"profile"}
    # naming the run's own profile as the IBP changes nothing either
    same = parse_scenario(MINIMAL + '[protocol]\ninter_broker_protocol = "proposed"\n').options
    assert same == o


def test_the_header_records_each_node_on_another_profile_with_its_switches():
    o = parse_scenario(MIXED).options
    protocol = o.to_json()["protocol"]
    assert protocol["inter_broker_protocol"] == "1.0"
    assert list(protocol["nodes"]) == ["b1", "b3", "p1", "k1"]
    assert protocol["nodes"]["b1"] == {"profile": "1.0", **o.protocol_of("b1").to_json()}
    assert Options.from_json(o.to_json()) == o


def test_per_node_versions_survive_writing_the_scenario_back_out():
    sc = parse_scenario(MIXED)
    again = parse_scenario(scenario_to_toml(sc), "again.toml")
    assert again.options == sc.options


@pytest.mark.parametrize("text, key, words", [
    (MINIMAL + '[protocol.brokers]\nb9 = "1.0"\n', "protocol.brokers.b9",
     ["no broker 'b9'", "b1..b3"]),
    (MINIMAL + '[protocol.brokers]\nb1 = "9.9"\n', "protocol.brokers.b1",
     ["unknown profile '9.9'"]),
    (MINIMAL + '[protocol.brokers]\nb1 = 2.5\n', "protocol.brokers.b1",
     ["expected a profile name", 'quote it, e.g. "2.5"']),
    (MINIMAL + '[protocol]\nbrokers = "1.0"\n', "protocol.brokers", ["expected a table"]),
    (MINIMAL + '[protocol]\nprofile = "2.5"\n[protocol.brokers]\nb2 = "1.0"\n',
     "protocol.brokers.b2", ["'1.0' is older than inter_broker_protocol '2.5'",
                             'inter_broker_protocol = "1.0"']),
    (MINIMAL + '[protocol]\nprofile = "2.5"\ninter_broker_protocol = "2.6"\n',
     "protocol.inter_broker_protocol", ["newer than the controllers' profile '2.5'"]),
    (MINIMAL + '[protocol]\ninter_broker_protocol = "9.9"\n', "protocol.inter_broker_protocol",
     ["unknown profile '9.9'"]),
    (MINIMAL + '[[producers]]\ntopic = "t"\nprofile = "2.55"\n', "producers[0].profile",
     ["unknown profile '2.55'", "did you mean"]),
    (MINIMAL + '[[consumers]]\ntopic = "t"\nprofile = 1\n', "consumers[0].profile",
     ["expected a profile name"]),
    # an idempotent producer needs brokers that know producer ids (KIP-98, 0.11)
    (MINIMAL + '[protocol]\nprofile = "0.10.2"\n[[producers]]\ntopic = "t"\nprofile = "2.5"\n'
     "enable_idempotence = true\n", "producers[0].enable_idempotence",
     ["b1 runs '0.10.2'", "no idempotent producer"]),
    (MINIMAL + '[protocol]\nprofile = "0.10.2"\n[[producers]]\ntopic = "t"\nprofile = "3.7"\n',
     "producers[0].enable_idempotence", ["'default' turns idempotence on"]),
])
def test_bad_per_node_versions_are_one_line_errors(text, key, words):
    message = bad(text)
    assert f": {key}: " in message
    for word in words:
        assert word in message


def test_a_client_on_an_old_profile_may_leave_idempotence_to_its_default():
    o = parse_scenario(MINIMAL + '[protocol]\nprofile = "0.10.2"\n[[producers]]\ntopic = "t"\n'
                       'profile = "2.5"\n').options
    assert o.node_profile("p1") == "2.5"


def test_the_fault_params_name_a_profile():
    step = '\n[[faults]]\nat_ms = 1000\naction = "upgrade"\ntarget = "b1"\n'
    sc = parse_scenario(MINIMAL + step + 'profile = "2.6"\n')
    assert sc.steps[0].params == {"profile": "2.6"}
    message = bad(MINIMAL + step + "profile = 2.6\n")
    assert ": faults[0].profile: " in message and "is not a profile" in message
    message = bad(MINIMAL + step.replace('"b1"', '"c1"') + 'profile = "2.6"\n')
    assert ": faults[0].target: 'c1' is not a broker" in message
    message = bad(MINIMAL + '\n[[faults]]\nat_ms = 1000\naction = "bump_ibp"\n')
    assert ": faults[0].version: missing" in message
    assert list(PROFILES)[0] in bad(MINIMAL + '\n[[faults]]\nat_ms = 1\naction = "bump_ibp"\n'
                                    'version = "x"\n')


def test_the_cli_refuses_a_bad_per_node_profile_with_exit_2(tmp_path, capsys):
    from epochsim.cli import main
    path = tmp_path / "bad.toml"
    path.write_text(MINIMAL + '[protocol.brokers]\nb1 = "9.9"\n')
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-plot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "protocol.brokers.b1: unknown profile '9.9'" in err


def test_set_reads_a_node_profile_as_a_name():
    from epochsim.common import parse_sets
    sets = ["protocol.brokers.b1=2.5", "producers.0.profile=1.0",
            "protocol.inter_broker_protocol=2.6", "run.duration_ms=2000"]
    assert parse_sets(sets) == {"protocol.brokers.b1": "2.5", "producers.0.profile": "1.0",
                                "protocol.inter_broker_protocol": "2.6", "run.duration_ms": 2000}


@pytest.mark.parametrize("kind,key,name", [("producers", "producers[0].profile", "p1"),
                                           ("consumers", "consumers[0].profile", "k1")])
def test_kafka_4_brokers_refuse_a_client_older_than_0_11(kind, key, name):
    """KIP-896: 4.0 brokers take Produce from v3 and Fetch from v4, which 0.10.2 clients lack;
    a 0.11 client, and a 0.10.2 client of 3.9 brokers, are taken."""
    def text(run, client):
        return (MINIMAL + f'[protocol]\nprofile = "{run}"\n[cluster]\nmode = "kraft"\n'
                f'[[{kind}]]\ntopic = "t"\nprofile = "{client}"\n')
    message = bad(text("4.0", "0.10.2"))
    assert f": {key}: '0.10.2' clients" in message and "KIP-896" in message
    assert 'profile "0.11" or newer' in message
    for run, client in (("4.1", "0.11"), ("3.9", "0.10.2")):
        assert parse_scenario(text(run, client)).options.node_profile(name) == client
