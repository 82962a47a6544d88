"""Typed options: the JSON codec, each limit written once (the loader's check, the model's
assertion and the trace reader's bound all read it), and the edits that make new options."""

import json
from dataclasses import MISSING, fields, replace

import pytest

from scenarios.schema import ScenarioError, load_scenario, parse_scenario
from sim.kafka.defaults import RELEASE_DEFAULTS, release_default
from sim.kafka.options import (
    MAX_NUMBER,
    ClusterOptions,
    ConsumerOptions,
    LinkOptions,
    NetworkOptions,
    Options,
    ProducerOptions,
    RunOptions,
    TopicOptions,
    default,
    limit,
)
from tests.conftest import scenario_path
from tests.scenarios.texts import FULL, MINIMAL

CLIENTS = MINIMAL + '[[producers]]\ntopic = "t"\n[[consumers]]\ntopic = "t"\n'
# where each options class sits in a scenario file, as a dotted key for an override
SECTIONS = {RunOptions: "run", ClusterOptions: "cluster", TopicOptions: "topics.0",
            ProducerOptions: "producers.0", ConsumerOptions: "consumers.0",
            NetworkOptions: "network"}


def _bounded():
    """(class, field, the first value below its limit, the first above) for every numeric
    field with a limit; None where that side is open."""
    for cls in SECTIONS:
        for f in fields(cls):
            lim = limit(cls, f.name)
            if f.type not in ("int", "int | float") or (lim.lo, lim.hi, lim.above) == (None,) * 3:
                continue
            low = lim.lo - 1 if lim.lo is not None else lim.above
            high = lim.hi + 1 if lim.hi is not None and lim.hi < MAX_NUMBER else None
            yield cls, f.name, low, high


BOUNDED = list(_bounded())


def test_every_shipped_scenario_round_trips_through_json():
    for name in ("smoke", "kip951-lagging-broker", "mix-delayed-metadata",
                 "kip359-stale-leader-legacy"):
        options = load_scenario(scenario_path(name)).options
        data = json.loads(json.dumps(options.to_json()))
        assert Options.from_json(data) == options
        assert Options.from_json(data).to_json() == options.to_json()


def test_the_json_keeps_field_order_and_numbers_as_written():
    o = parse_scenario(FULL, "full.toml").options.to_json()
    assert list(o) == ["run", "protocol", "cluster", "topics", "producers", "consumers",
                       "network"]
    assert list(o["protocol"])[-2:] == ["mutant", "profile"]
    assert list(o["producers"][0]) == [f.name for f in fields(ProducerOptions)]
    assert o["producers"][0]["records_per_sec"] == 250.5
    assert o["producers"][1]["records_per_sec"] == 1000  # an int stays an int: "1000", not "1000.0"
    assert o["network"]["links"][0] == {"src": "c1", "dst": "b2",
                                        "latency": {"dist": "constant", "ms": 40.0},
                                        "jitter_ms": 0, "drop": 0.01, "duplicate": 0.0}


_SECTION = {ClusterOptions: "cluster", ProducerOptions: "producers",
            ConsumerOptions: "consumers"}


def test_the_loaders_defaults_are_the_fields_defaults():
    o = parse_scenario(CLIENTS, "c.toml").options
    for cls, record in ((RunOptions, o.run), (ClusterOptions, o.cluster),
                        (ProducerOptions, o.producers[0]), (ConsumerOptions, o.consumers[0]),
                        (NetworkOptions, o.network)):
        for f in fields(cls):
            if (cls, f.name) == (ClusterOptions, "mode"):
                # "" means the profile's default, which the loader resolves (test_kraft_mode)
                assert record.mode == "zk"
            elif (_SECTION.get(cls), f.name) in RELEASE_DEFAULTS:
                # Kafka changed it between releases (test_release_defaults)
                assert getattr(record, f.name) == release_default(_SECTION[cls], f.name,
                                                                  o.profile), f.name
            elif default(cls, f.name) is not MISSING:
                assert getattr(record, f.name) == default(cls, f.name), (cls.__name__, f.name)


@pytest.mark.parametrize("cls,name,low,high", BOUNDED,
                         ids=[f"{c.__name__}.{n}" for c, n, _, _ in BOUNDED])
def test_the_loader_and_the_model_check_the_same_limit(cls, name, low, high):
    """Just outside a field's limit the loader refuses the value with a one-line error naming
    the key, and building the record with it fails the model's assertion."""
    key = f"{SECTIONS[cls]}.{name}"
    shown = key.replace(".0.", "[0].")
    base = parse_scenario(CLIENTS, "c.toml").options
    record = {RunOptions: base.run, ClusterOptions: base.cluster, TopicOptions: base.topics[0],
              ProducerOptions: base.producers[0], ConsumerOptions: base.consumers[0],
              NetworkOptions: base.network}[cls]
    for value in (low, high):
        if value is None:
            continue
        with pytest.raises(ScenarioError) as info:
            parse_scenario(CLIENTS, "c.toml", {key: value})
        assert info.value.key == shown and "\n" not in str(info.value)
        with pytest.raises(ValueError, match=f"{cls.__name__}.{name} = "):
            replace(record, **{name: value})


def test_links_share_the_networks_limits():
    for name in ("jitter_ms", "drop", "duplicate"):
        assert limit(LinkOptions, name) == limit(NetworkOptions, name)


def test_choices_are_asserted_too():
    producer = parse_scenario(CLIENTS, "c.toml").options.producers[0]
    for name, value in (("acks", -1), ("acks", True), ("enable_idempotence", True),
                        ("leader_discovery", "x")):
        with pytest.raises(ValueError, match=f"ProducerOptions.{name} = "):
            replace(producer, **{name: value})


def test_the_trace_reader_bounds_the_broker_count_as_the_loader_does():
    from invariants.registry import MAX_BROKERS, options_problem
    assert MAX_BROKERS == limit(ClusterOptions, "brokers").hi
    header = parse_scenario(MINIMAL, "m.toml").options.to_json()
    assert options_problem(header) is None
    header["cluster"]["brokers"] = MAX_BROKERS + 1
    assert "1..64" in options_problem(header)


def test_edits_make_new_typed_options():
    from epochsim.explore.selftest import without_mutant
    from epochsim.explore.strategies import apply_workload
    from epochsim.study import with_mode
    sc = parse_scenario(FULL, "full.toml")
    edited = apply_workload(sc, (("legacy", "max_in_flight", 1), ("legacy", "acks", "all")))
    assert (edited.options.producers[1].max_in_flight, edited.options.producers[1].acks) == (1, "all")
    assert edited.options.producers[0] == sc.options.producers[0]
    assert sc.options.producers[1].max_in_flight == 5  # the original is untouched
    moded = with_mode(sc, "metadata").options
    assert moded.protocol.leader_discovery == "metadata"
    assert {c.leader_discovery for c in moded.producers + moded.consumers} == {""}
    assert without_mutant(sc).options.protocol.mutant == ""
