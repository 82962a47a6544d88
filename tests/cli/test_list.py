"""`epochsim list`: profiles, invariants, mutants and event kinds, from the code."""

from __future__ import annotations

from epochsim.cli import main
from invariants.registry import INVARIANTS
from sim.kafka.profiles import MUTANTS, PROFILES, switch_names
from sim.kafka.vocab import ALL_KINDS
from tests.cli.test_bad_input_edges import one_line_error


def listed(capsys, *args) -> list[str]:
    assert main(["list", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_two_profiles_show_only_the_switches_they_differ_in(capsys):
    rows = [line.split() for line in listed(capsys, "profiles", "2.5", "2.6")]
    assert rows[0] == ["switch", "2.5", "2.6"]
    differing = [n for n in switch_names()
                 if getattr(PROFILES["2.5"], n) != getattr(PROFILES["2.6"], n)]
    assert [r[0] for r in rows[1:]] == differing
    assert ["stop_replica_epoch", "off", "on"] in rows  # KIP-570 came in 2.6
    assert all(r[1] != r[2] for r in rows[1:])


def test_every_switch_of_every_profile_by_default(capsys):
    rows = [line.split() for line in listed(capsys, "profiles")]
    assert rows[0] == ["switch", *PROFILES]
    assert [r[0] for r in rows[1:]] == switch_names()
    one = [line.split() for line in listed(capsys, "profiles", "3.7", "0.11", "--all")]
    assert len(one) == len(rows) and one[0] == ["switch", "3.7", "0.11"]


def test_a_profile_named_twice_is_one_column(capsys):
    assert listed(capsys, "profiles", "3.7", "3.7") == [
        line for line in listed(capsys, "profiles", "3.7")]
    assert len(listed(capsys, "profiles", "3.7")) == len(switch_names()) + 1


def test_invariants_mutants_and_kinds(capsys):
    text = "\n".join(listed(capsys, "invariants"))
    for name, cls in INVARIANTS.items():
        assert f"\n{name} ({cls.rule})\n    " in f"\n{text}"
    mutants = [line.split() for line in listed(capsys, "mutants")[1:]]
    assert dict(mutants) == MUTANTS
    assert listed(capsys, "kinds") == sorted(ALL_KINDS)


def test_bad_names_are_one_line(capsys):
    one_line_error(capsys, ["list", "profiles", "2.5", "9.9"], "unknown profile '9.9'", "3.7")
    one_line_error(capsys, ["list", "mutants", "x"], "takes no names")
    one_line_error(capsys, ["list", "switches"], "invalid choice")
    # only WHAT is required: the optional profile names are not asked for
    err = one_line_error(capsys, ["list"], "required: WHAT;")
    assert "PROFILE" not in err.split(";")[0], err


def test_every_fault_action_with_its_target_and_params(capsys):
    from sim.kafka.faults import ACTIONS

    lines = listed(capsys, "actions")
    assert lines[0].split()[0] == "action"
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == list(ACTIONS)
    assert "peer" in rows["reset_connections"] and "node or role" in rows["reset_connections"]
    assert "unflushed_ms=30000" in rows["power_loss"] and "replicas*" in rows["reassign"]
    assert rows["partition"].split()[1] == "-"  # no target


def test_defaults_list_each_release_dependent_option_by_profile(capsys):
    from sim.kafka.defaults import RELEASE_DEFAULTS
    rows = [line.split() for line in listed(capsys, "defaults", "2.4", "2.5", "3.7")]
    assert rows[0] == ["option", "2.4", "2.5", "3.7"]
    assert [r[0] for r in rows[1:len(RELEASE_DEFAULTS) + 1]] == [
        f"{s}.{k}" for s, k in RELEASE_DEFAULTS]
    assert ["cluster.replica_lag_time_max_ms", "10000", "30000", "30000"] in rows
    assert ["producers.acks", "1", "1", '"all"'] in rows
    assert rows[-1][-3:] == ["-", "-", "9000"]  # KRaft's session, on the profiles with KRaft
    assert len(listed(capsys, "defaults")[0].split()) == len(PROFILES) + 1


def test_defaults_refuse_an_unknown_profile(capsys):
    one_line_error(capsys, ["list", "defaults", "2.5", "9.9"], "unknown profile '9.9'", "3.7")
