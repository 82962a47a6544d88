"""Fault targets and links: zk as a link end, cut names, rules between a node and itself."""

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, parse_scenario
from tests.scenarios.texts import MINIMAL, bad


def test_zk_is_a_link_end_but_not_a_node():
    """zk, the metadata store's place on the network, may be cut off (a partition group, a
    block's dst), so a broker can lose its session while it still reaches its clients."""
    sc = parse_scenario(MINIMAL + '[[faults]]\nat_ms = 1\naction = "partition"\n'
                        'groups = [["b1"], ["b2", "b3", "c1", "c2", "zk"]]\n'
                        '[[faults]]\nat_ms = 2\naction = "block"\ntarget = "b2"\ndst = "zk"\n')
    assert [s.params.get("dst") for s in sc.steps] == [None, "zk"]
    for fault, key in (('action = "crash"\ntarget = "zk"', "faults[0].target"),
                       ('action = "block"\ntarget = "b1"\ndst = "zz"', "faults[0].dst")):
        with pytest.raises(ScenarioError) as info:
            parse_scenario(MINIMAL + f"[[faults]]\nat_ms = 1\n{fault}\n")
        assert info.value.key == key


def test_a_broker_cut_from_zk_loses_leadership_but_keeps_its_clients():
    text = ('expect = "pass"\n[run]\nduration_ms = 12000\nsettle_ms = 1000\n'
            '[cluster]\nbroker_session_timeout_ms = 6000\n'
            '[[topics]]\nname = "t"\nassignment = [[1, 2, 3]]\n'
            '[[producers]]\ntopic = "t"\nrecords_per_sec = 100\n'
            '[[faults]]\nat_ms = 1000\naction = "block"\ntarget = "b1"\ndst = "zk"\n')
    verdict = run_scenario(parse_scenario(text), 1, keep_events=True)
    states = [e for e in verdict["_events"] if e["kind"] == "partition_state"]
    moved = [e for e in states if e["leader"] != 1]
    # the session times out (broker_session_timeout_ms 6 s after its last renewal) and the
    # controller elects another leader; until then b1 still serves the producer
    assert moved and moved[0]["reason"] == "elect:broker_failure"
    assert 6_000_000 <= moved[0]["t"] <= 8_000_000
    assert any(e["kind"] == "append" and e["node"] == "b1" and 2_000_000 < e["t"] < 6_000_000
               for e in verdict["_events"])


def test_a_cut_and_its_heal_may_share_a_name_and_a_bad_name_is_refused():
    text = MINIMAL + """
[[faults]]
at_ms = 100
action = "isolate"
target = "b1"
cut = "a"

[[faults]]
at_ms = 200
action = "heal"
cut = "a"
"""
    sc = parse_scenario(text, "cut.toml")
    assert [(s.action, s.params) for s in sc.steps] == [("isolate", {"cut": "a"}),
                                                         ("heal", {"cut": "a"})]
    message = bad(text.replace('cut = "a"\n\n', 'cut = "a b"\n\n'))
    assert "faults[0].cut" in message and "no cut name" in message


@pytest.mark.parametrize("fault, key", [
    ('action = "rule"\nrule = "drop"\nsrc = "b1"\ndst = "b1"', "faults[0].dst"),
    ('action = "rule"\ntarget = "b2"\nrule = "drop"\nsrc = "b2"', "faults[0].src"),
])
def test_a_rule_from_a_node_to_itself_is_refused(fault, key):
    """A node sends itself no message: such a rule would silently match nothing."""
    message = bad(MINIMAL + f"\n[[faults]]\nat_ms = 100\n{fault}\n")
    assert message.startswith(f"scen.toml: {key}: ") and "itself" in message


def test_a_rule_whose_target_is_only_its_source_loads():
    """With dst named, the target is not the rule's destination: src = target is fine."""
    sc = parse_scenario(MINIMAL + '\n[[faults]]\nat_ms = 100\naction = "rule"\ntarget = "b1"\n'
                        'rule = "drop"\nsrc = "b1"\ndst = "b2"\n', "ok.toml")
    assert sc.steps[0].params["src"] == "b1"
