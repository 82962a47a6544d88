"""[live] and [[live_clients]] in scenario files, and `epochsim serve`'s bad input: one line,
exit 2."""

from __future__ import annotations

import pytest

from epochsim.cli import main
from scenarios.schema import ScenarioError, parse_scenario
from tests.conftest import scenario_path

BASE = """
name = "x"
expect = "pass"
[cluster]
brokers = 3
[[topics]]
name = "t"
partitions = 2
replication_factor = 3
"""


def test_a_scenario_without_live_sections_has_none():
    assert parse_scenario(BASE, "x.toml").live is None


def test_live_clients_take_their_defaults():
    sc = parse_scenario(BASE + '[[live_clients]]\nname = "rd1"\nkind = "confluent-kafka"\n'
                        'topic = "t"\n', "x.toml")
    (c,) = sc.live.clients
    assert (c.kind, c.records, c.acks, c.enable_idempotence, c.read_back) == \
        ("confluent-kafka", 200, "all", True, True)
    assert (sc.live.slowdown, sc.live.hint) == (1.0, "replica")


@pytest.mark.parametrize("extra, key", [
    ('[live]\nslowdown = 0\n', "live.slowdown"),
    ('[live]\nhint = "fresh"\n', "live.hint"),
    ('[live]\nspeed = 2\n', "live.speed"),
    ('[[live_clients]]\nname = "rd1"\nkind = "java"\ntopic = "t"\n', "live_clients[0].kind"),
    ('[[live_clients]]\nname = "rd1"\nkind = "kafka-python"\ntopic = "u"\n',
     "live_clients[0].topic"),
    ('[[live_clients]]\nname = "b1"\nkind = "kafka-python"\ntopic = "t"\n',
     "live_clients[0].name"),
    ('[[live_clients]]\nname = "rd1"\nkind = "kafka-python"\ntopic = "t"\nacks = 2\n',
     "live_clients[0].acks"),
])
def test_bad_live_sections_name_the_key(extra, key):
    with pytest.raises(ScenarioError) as err:
        parse_scenario(BASE + extra, "x.toml")
    assert err.value.key == key
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("args, words", [
    (["--slowdown", "0"], "must be between 0.1 and 100"),
    (["--slowdown", "fast"], "not a number"),
    (["--seed", "-1"], "--seed"),
])
def test_bad_serve_flags_are_one_line(args, words, capsys, tmp_path):
    path = scenario_path("live/librdkafka-leader-move-fresh-hint")
    assert main(["serve", path, "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err


def test_a_bad_scenario_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE + '[[live_clients]]\nname = "rd1"\nkind = "java"\ntopic = "t"\n')
    assert main(["serve", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "live_clients[0].kind" in err, err
