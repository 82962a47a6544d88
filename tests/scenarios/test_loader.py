"""The scenario loader: defaults, round-trip through TOML, and one-line errors for bad input."""

import os
import random
from pathlib import Path

import pytest

from scenarios.schema import (
    ALL_INVARIANTS,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_to_toml,
)
from sim.core.faults import FaultStep, materialise_mix

MINIMAL = """
expect = "pass"
[[topics]]
name = "t"
"""

FULL = """
name = "full"
description = "every section"
expect = "violation:stale_leader_append"
seed = 7
invariants = ["stale_leader_append", "acked_write_lost"]

[run]
duration_ms = 20000
settle_ms = 4000

[protocol]
profile = "2.6"
mutant = "no_produce_epoch_check"
leader_discovery = "refresh_no_backoff"

[cluster]
brokers = 4
controllers = 1
unclean_leader_election = true

[[topics]]
name = "t"
partitions = 2
assignment = [[1, 2, 3], [4, 1, 2]]

[[topics]]
name = "old.format"
replication_factor = 2
message_format = 1

[[producers]]
topic = "t"
acks = -1
enable_idempotence = true
records_per_sec = 250.5

[[producers]]
name = "legacy"
topic = "old.format"
acks = 1
enable_idempotence = false
stop_ms = 9000

[[consumers]]
topic = "t"

[network]
latency = { dist = "uniform", min_ms = 1, max_ms = 3 }
drop = 0.01

[[network.links]]
src = "c1"
dst = "b2"
latency = { dist = "constant", ms = 40 }

[[faults]]
at_ms = 9000
action = "heal"

[[faults]]
at_ms = 2000
action = "partition"
groups = [["b1"], ["b2", "b3", "c1"]]

[[faults]]
at_ms = 3000
action = "rule"
rule = "hold"
kind = "StopReplica"
release_kind = "LeaderAndIsr"
dst = "b2"

[[faults]]
at_ms = 3000
action = "crash"
target = "leader:t-1"

[[faults]]
at_ms = 4000
action = "reassign"
target = "t-0"
replicas = [2, 3, 4]

[[faults]]
at_ms = 5000
action = "create_topic"
name = "fresh"
partitions = 3

[[faults]]
at_ms = 6000
action = "retention"
target = "fresh-2"
log_start_offset = 10

[[faults]]
at_ms = 7000
action = "move_leader"
target = "t-0"

[[faults]]
at_ms = 19000
action = "restart"
target = "leader:t-1"

[[mix]]
action = "crash"
every_ms = 1500
targets = ["b1", "controller"]
duration_ms = [200, 800]

[[mix]]
action = "rule"
every_ms = 3000
duration_ms = 500
params = { rule = "delay", kind = "Fetch", delay_ms = 50 }
"""


def bad(text: str, path: str = "scen.toml") -> str:
    """The error message for `text`, checked to be one line naming the file."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


def test_minimal_scenario_resolves_every_default():
    sc = parse_scenario(MINIMAL, "dir/minimal.toml")
    assert (sc.name, sc.path, sc.description, sc.expect, sc.seed) == (
        "minimal", "dir/minimal.toml", "", "pass", 1)
    assert sc.invariants == ALL_INVARIANTS and sc.steps == [] and sc.mixes == []
    o = sc.options
    assert o["run"] == {"duration_ms": 30000, "max_events": 5_000_000, "settle_ms": 5000}
    assert o["protocol"]["profile"] == "proposed" and o["protocol"]["mutant"] == ""
    assert o["protocol"]["produce_epoch_check"] is True
    assert o["cluster"] == {
        "brokers": 3, "controllers": 2, "min_insync_replicas": 1,
        "unclean_leader_election": False, "controller_failover_delay_ms": 2000,
        "zk_session_timeout_ms": 6000, "broker_session_timeout_ms": 6000,
        "replica_lag_time_max_ms": 10000, "replica_fetch_wait_max_ms": 500,
        "controller_request_retry_ms": 3000, "request_service_us": 50,
            "replica_high_watermark_checkpoint_interval_ms": 5000,
        "producer_id_expiration_check_interval_ms": 600000}
    assert o["topics"] == [{"name": "t", "partitions": 1, "replication_factor": 3,
                            "message_format": 2, "retention_ms": 0, "segment_ms": 10000,
                            "assignment": [[1, 2, 3]]}]
    assert o["producers"] == [] and o["consumers"] == []
    assert o["network"] == {"latency": {"dist": "constant", "ms": 1.0}, "jitter_ms": 0,
                            "drop": 0.0, "duplicate": 0.0, "partition": "stall", "links": []}


def test_full_scenario_resolves_clients_network_steps_and_mixes():
    sc = parse_scenario(FULL, "full.toml")
    o = sc.options
    assert o["protocol"]["leader_discovery"] == "refresh_no_backoff"
    assert o["protocol"]["mutant"] == "no_produce_epoch_check"
    assert o["topics"][1]["assignment"] == [[1, 2]]
    p1, legacy = o["producers"]
    assert (p1["name"], p1["acks"], p1["enable_idempotence"]) == ("p1", "all", "required")
    assert (legacy["acks"], legacy["enable_idempotence"], legacy["stop_ms"]) == (1, "off", 9000)
    assert p1["max_in_flight"] == 5 and p1["leader_discovery"] == ""
    assert p1["batch_size"] == 16384 and p1["record_bytes"] == 100
    assert o["consumers"][0]["name"] == "k1"
    link = o["network"]["links"][0]
    assert link["latency"] == {"dist": "constant", "ms": 40.0} and link["drop"] == 0.01
    assert [s.at_us for s in sc.steps] == sorted(s.at_us for s in sc.steps)
    assert sc.steps[1] == FaultStep(3_000_000, "rule", None, {
        "rule": "hold", "kind": "StopReplica", "release_kind": "LeaderAndIsr", "dst": "b2"})
    assert sc.steps[2].target == "leader:t-1"  # same time as the rule: file order kept
    assert next(s for s in sc.steps if s.action == "move_leader").params == {"to": "next"}
    assert sc.mixes[0] == {"action": "crash", "every_ms": 1500, "targets": ["b1", "controller"],
                           "duration_ms": [200, 800], "undo": "restart", "start_ms": 0,
                           "end_ms": 16000, "params": {}}
    assert sc.mixes[1]["undo"] == "lapse"  # a rule mix's rules lapse one by one


def test_round_trip_through_toml():
    sc = parse_scenario(FULL, "full.toml")
    again = parse_scenario(scenario_to_toml(sc), "again.toml")
    assert again.options == sc.options and again.steps == sc.steps
    assert (again.name, again.expect, again.seed, again.invariants) == (
        sc.name, sc.expect, sc.seed, sc.invariants)
    assert again.mixes == []


def test_round_trip_of_materialised_mixes_keeps_microseconds():
    sc = parse_scenario(FULL, "full.toml")
    rng = random.Random(sc.seed)
    until_us = sc.options["run"]["duration_ms"] * 1000
    steps = sc.steps + [s for mix in sc.mixes for s in materialise_mix(mix, rng, until_us)]
    steps.sort(key=lambda s: s.at_us)
    assert any(s.at_us % 1000 for s in steps)
    again = parse_scenario(scenario_to_toml(sc, steps), "replay.toml")
    assert again.steps == steps and again.options == sc.options


def test_round_trip_of_awkward_strings():
    text = 'description = "tab\\t quote\\" nl\\n \\u007f é"\n' + MINIMAL
    sc = parse_scenario(text)
    assert parse_scenario(scenario_to_toml(sc)).description == sc.description


def test_docs_example_loads():
    docs = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"
    example = docs.read_text().split("```toml\n")[-1].split("```")[0]
    sc = parse_scenario(example, "example.toml")
    assert sc.options["protocol"]["produce_epoch_check"] is True and len(sc.mixes) == 1


def test_load_scenario_reads_a_file(tmp_path):
    path = tmp_path / "on_disk.toml"
    path.write_text(MINIMAL)
    assert load_scenario(str(path)).name == "on_disk"


def test_missing_file(tmp_path):
    path = str(tmp_path / "absent.toml")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(f"{path}: file: file not found")


def test_directory_is_not_a_scenario(tmp_path):
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(tmp_path))
    assert str(info.value).startswith(f"{tmp_path}: file: is a directory")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked.toml"
    path.write_text(MINIMAL)
    path.chmod(0)
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert "not readable" in str(info.value) and "\n" not in str(info.value)


def with_topic(extra_top: str = "", after: str = "") -> str:
    """A valid scenario with `extra_top` keys at the top and `after` tables appended."""
    return f'expect = "pass"\n{extra_top}\n[[topics]]\nname = "t"\n{after}'


FAULT = '\n[[faults]]\nat_ms = 1000\n'
BAD_CASES = [
    # (id, text, key path, words the message must contain)
    ("invalid_toml", 'expect = "pass"\nseed = = 3\n', "line 2", ["invalid TOML"]),
    ("unknown_top_key", with_topic(after="\n[[fault]]\nat_ms = 1\n"), "fault",
     ["unknown key", "did you mean 'faults'"]),
    ("unknown_nested_key", with_topic(after="\n[cluster]\nbrokerz = 3\n"), "cluster.brokerz",
     ["did you mean 'brokers'"]),
    ("wrong_type", with_topic(after='\n[cluster]\nbrokers = "3"\n'), "cluster.brokers",
     ["expected an integer", "string"]),
    ("bool_is_not_int", with_topic(after="\n[cluster]\nbrokers = true\n"), "cluster.brokers",
     ["not numbers"]),
    ("float_ms", with_topic(after="\n[run]\nduration_ms = 1500.5\n"), "run.duration_ms",
     ["integers only"]),
    ("negative_delay", with_topic(after=FAULT + 'action = "rule"\nrule = "delay"\ndelay_ms = -5\n'),
     "faults[0].delay_ms", ["negative"]),
    ("negative_mix_duration",
     with_topic(after='\n[[mix]]\naction = "crash"\nevery_ms = 100\ntargets = ["b1"]\n'
                      "duration_ms = -1\n"), "mix[0].duration_ms", ["negative"]),
    ("bad_enum", with_topic(after='\n[[producers]]\ntopic = "t"\nacks = "some"\n'),
     "producers[0].acks", ['"all"']),
    ("missing_broker", with_topic(after=FAULT + 'action = "crash"\ntarget = "b7"\n'),
     "faults[0].target", ["'b7'", "cluster has b1..b3"]),
    ("negative_unflushed", with_topic(after=FAULT + 'action = "power_loss"\ntarget = "b1"\n'
                                                   "unflushed_ms = -1\n"),
     "faults[0].unflushed_ms", ["negative"]),
    ("power_loss_of_a_controller", with_topic(after=FAULT + 'action = "power_loss"\ntarget = "c1"\n'),
     "faults[0].target", ["c1"]),
    ("unknown_action", with_topic(after=FAULT + 'action = "crush"\ntarget = "b1"\n'),
     "faults[0].action", ["did you mean 'crash'"]),
    ("unknown_profile", with_topic(after='\n[protocol]\nprofile = "9.9"\n'), "protocol.profile",
     ["unknown value '9.9'"]),
    ("unknown_switch", with_topic(after="\n[protocol]\nproduce_epoch_chek = true\n"),
     "protocol.produce_epoch_chek", ["did you mean 'produce_epoch_check'"]),
    ("switch_wrong_type", with_topic(after="\n[protocol]\nfetch_epoch_check = 1\n"),
     "protocol.fetch_epoch_check", ["expected bool"]),
    ("switch_out_of_range", with_topic(after="\n[protocol]\nidempotent_batches = 6\n"),
     "protocol.idempotent_batches", ["between 1 and 5"]),
    ("unknown_mutant", with_topic(after='\n[protocol]\nmutant = "no_dedup"\n'),
     "protocol.mutant", ["did you mean 'no_dedup_cache'"]),
    ("rf_above_brokers",
     'expect = "pass"\n[cluster]\nbrokers = 2\n[[topics]]\nname = "t"\nreplication_factor = 3\n',
     "topics[0].replication_factor", ["cluster has 2 brokers"]),
    ("unknown_topic_ref", with_topic(after='\n[[producers]]\ntopic = "tt"\n'),
     "producers[0].topic", ["unknown topic 'tt'", "did you mean 't'"]),
    ("unknown_partition", with_topic(after=FAULT + 'action = "move_leader"\ntarget = "t-4"\n'),
     "faults[0].target", ["has 1 partition"]),
    ("bad_expect", 'expect = "violation:stale_leader"\n[[topics]]\nname = "t"\n', "expect",
     ["did you mean 'stale_leader_append'"]),
    ("duplicate_topic", with_topic(after='\n[[topics]]\nname = "t"\n'), "topics[1].name",
     ["duplicate topic"]),
    ("duplicate_client", with_topic(after='\n[[producers]]\nname = "b2"\ntopic = "t"\n'),
     "producers[0].name", ["already taken"]),
    ("at_beyond_duration", with_topic(after='\n[[faults]]\nat_ms = 30000\naction = "heal"\n'),
     "faults[0].at_ms", ["not before run.duration_ms"]),
    ("fault_in_settle_window",
     with_topic(after='\n[[faults]]\nat_ms = 26000\naction = "crash"\ntarget = "b1"\n'),
     "faults[0].at_ms", ["settle window"]),
    ("missing_expect", '[[topics]]\nname = "t"\n', "expect", ["missing required key"]),
    ("missing_topics", 'expect = "pass"\n', "topics", ["add at least one [[topics]]"]),
    ("missing_param", with_topic(after=FAULT + 'action = "reassign"\ntarget = "t-0"\n'),
     "faults[0].replicas", ["requires replicas"]),
    ("unknown_param", with_topic(after=FAULT + 'action = "crash"\ntarget = "b1"\ngroup = 1\n'),
     "faults[0].group", ["unknown key 'group'"]),
    ("param_of_an_action_without_params",
     with_topic(after='\n[[mix]]\naction = "crash"\nevery_ms = 100\ntargets = ["b1"]\n'
                      'params = { at_ms = 5 }\n'), "mix[0].params.at_ms",
     ["'crash' takes no params", "remove at_ms"]),
    ("target_not_allowed", with_topic(after=FAULT + 'action = "heal"\ntarget = "b9"\n'),
     "faults[0].target", ["does not exist"]),
    ("controller_not_broker",
     with_topic(after=FAULT + 'action = "controlled_shutdown"\ntarget = "c1"\n'),
     "faults[0].target", ["is not a broker"]),
    ("hold_without_release",
     with_topic(after=FAULT + 'action = "rule"\nrule = "hold"\nkind = "StopReplica"\n'),
     "faults[0].release_kind", ["required for hold"]),
    ("bad_latency", with_topic(after='\n[network]\nlatency = { dist = "gauss", ms = 1 }\n'),
     "network.latency.dist", ["unknown distribution"]),
    ("probability_above_one", with_topic(after="\n[network]\ndrop = 1.5\n"), "network.drop",
     ["above the maximum 1"]),
    ("assignment_bad_broker",
     with_topic(after="replication_factor = 2\nassignment = [[1, 5]]\n"),
     "topics[0].assignment[0][1]", ["no broker 5"]),
    ("reassign_duplicate", with_topic(after=FAULT + 'action = "reassign"\ntarget = "t-0"\n'
                                                    "replicas = [1, 1]\n"),
     "faults[0].replicas", ["duplicate broker id"]),
    ("invariant_unknown", with_topic('invariants = ["acked_write_lost", "nope"]'),
     "invariants[1]", ["unknown invariant"]),
    ("expect_not_checked",
     'expect = "violation:log_divergence"\ninvariants = ["acked_write_lost"]\n'
     '[[topics]]\nname = "t"\n', "expect", ["does not check it"]),
    ("settle_not_below_duration", with_topic(after="\n[run]\nduration_ms = 100\n"),
     "run.settle_ms", ["not below run.duration_ms"]),
    ("section_wrong_shape", with_topic(after="\n[producers]\ntopic = \"t\"\n"), "producers",
     ["[[producers]]"]),
    ("mix_no_default_undo",
     with_topic(after='\n[[mix]]\naction = "move_leader"\nevery_ms = 100\ntargets = ["t-0"]\n'
                      "duration_ms = 10\n"), "mix[0].duration_ms", ["no default undo"]),
    ("client_name_reserved", with_topic(after='\n[[producers]]\nname = "nemesis"\ntopic = "t"\n'),
     "producers[0].name", ["reserved"]),
    ("client_named_zk", with_topic(after='\n[[consumers]]\nname = "zk"\ntopic = "t"\n'),
     "consumers[0].name", ["reserved", "metadata store"]),
    ("mix_starts_in_settle_window",
     with_topic(after='\n[[mix]]\naction = "crash"\nevery_ms = 100\ntargets = ["b1"]\n'
                      "start_ms = 26000\n"), "mix[0].start_ms", ["settle period", "below 25000"]),
    ("delivery_timeout_too_small",
     with_topic(after='\n[[producers]]\ntopic = "t"\ndelivery_timeout_ms = 1000\n'),
     "producers[0].delivery_timeout_ms", ["linger_ms + request_timeout_ms"]),
    ("batch_size_negative", with_topic(after='\n[[producers]]\ntopic = "t"\nbatch_size = -1\n'),
     "producers[0].batch_size", ["negative", ">= 0"]),
    ("record_bytes_zero", with_topic(after='\n[[producers]]\ntopic = "t"\nrecord_bytes = 0\n'),
     "producers[0].record_bytes", ["below the minimum 1"]),
    # eight mixes, each under the step cap, held 16 million steps with their undo steps (7 GB)
    ("mixes_beyond_the_step_cap_together",
     with_topic(after="\n[run]\nduration_ms = 1001000\nmax_events = 1000\n"
                + '\n[[mix]]\naction = "crash"\nevery_ms = 1\ntargets = ["b1"]\n'
                  "duration_ms = 0\n" * 8),
     "mix[0].every_ms", ["undo steps included", "more than the 1,000,000 steps"]),
    ("mixes_beyond_the_step_cap_from_the_third",
     with_topic(after="\n[run]\nduration_ms = 505000\n"
                + '\n[[mix]]\naction = "heal"\nevery_ms = 1\n' * 3),
     "mix[2].every_ms", ["brings the mixes' steps to about 1.5e+06", "drop a mix"]),
    # the fix said "add undo = ...", the key that was already there
    ("mix_undo_needs_a_target_the_mix_lacks",
     with_topic(after='\n[[mix]]\naction = "partition"\nevery_ms = 1000\nduration_ms = 100\n'
                      'undo = "restart"\nparams = { groups = [["b1"], ["b2", "b3"]] }\n'),
     "mix[0].undo", ["'restart' needs a target, and a 'partition' mix has none",
                     'use undo = "heal" or "clear_rules"']),
    # DEL and NEL made runs/a<DEL>b<NEL>c/ (only C0 controls were refused)
    ("name_with_del_and_nel", 'name = "a\\u007fb\\u0085c"\n' + with_topic(), "name",
     ["cannot name an output directory"]),
    ("name_with_a_line_separator", 'name = "a\\u2028b"\n' + with_topic(), "name",
     ["cannot name an output directory"]),
    # a link fault between a node and itself did nothing, silently
    ("block_to_itself", with_topic(after=FAULT + 'action = "block"\ntarget = "b1"\ndst = "b1"\n'),
     "faults[0].dst", ["'block' between 'b1' and itself", "name another node as dst"]),
    ("reset_with_itself",
     with_topic(after=FAULT + 'action = "reset_connections"\ntarget = "b2"\npeer = "b2"\n'),
     "faults[0].peer", ["between 'b2' and itself"]),
    ("mix_blocks_a_target_to_itself",
     with_topic(after='\n[[mix]]\naction = "block"\nevery_ms = 100\ntargets = ["b1", "b2"]\n'
                      'params = { dst = "b2" }\n'), "mix[0].targets[1]", ["'b2' and itself"]),
    # a Fetch answered at the instant it is sent: the run spun at t=0 until max_events
    ("replica_fetch_without_time",
     with_topic(after="\n[cluster]\nreplica_fetch_wait_max_ms = 0\nrequest_service_us = 0\n"
                      '[network]\nlatency = { dist = "uniform", min_ms = 0, max_ms = 0.0004 }\n'),
     "cluster.replica_fetch_wait_max_ms", ["no latency between b1 and b2", "time would never pass"]),
    ("consumer_fetch_without_time",
     with_topic(after='\n[[consumers]]\ntopic = "t"\nfetch_max_wait_ms = 0\n'
                      "[cluster]\nrequest_service_us = 0\n"
                      '[network]\nlatency = { dist = "exponential", mean_ms = 0 }\n'
                      '[[network.links]]\nsrc = "b1"\ndst = "k1"\n'
                      'latency = { dist = "constant", ms = 1 }\n'),
     "consumers[0].fetch_max_wait_ms", ["between k1 and b2", "raise it, cluster.request_service_us"]),
    # a linger's batches are made in one step that max_events does not count: the run hung
    ("rate_beyond_any_producer",
     with_topic(after='\n[run]\nmax_events = 1000\n[[producers]]\ntopic = "t"\n'
                      "records_per_sec = 9007199254740992\n"),
     "producers[0].records_per_sec", ["batches every linger_ms = 5", "more than the 10,000",
                                      "lower records_per_sec"]),
    ("no_batching_at_a_high_rate",
     with_topic(after='\n[[producers]]\ntopic = "t"\nrecords_per_sec = 100000\n'
                      "linger_ms = 200\nbatch_size = 0\n"),
     "producers[0].records_per_sec", ["about 20,000 batches", "1 record to a batch"]),
]


@pytest.mark.parametrize("text,key,words", [c[1:] for c in BAD_CASES],
                         ids=[c[0] for c in BAD_CASES])
def test_bad_input_is_one_line_with_file_and_key(text, key, words):
    message = bad(text, "cases/bad.toml")
    assert message.startswith(f"cases/bad.toml: {key}: "), message
    assert "; " in message.split(f"{key}: ", 1)[1], message  # a fix follows the problem
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("after", [
    "\n[cluster]\nreplica_fetch_wait_max_ms = 0\nrequest_service_us = 1\n"
    '[network]\nlatency = { dist = "constant", ms = 0 }\n',
    "\n[cluster]\nreplica_fetch_wait_max_ms = 0\nrequest_service_us = 0\n"
    '[network]\nlatency = { dist = "constant", ms = 0 }\njitter_ms = 0.001\n',
    "\n[cluster]\nreplica_fetch_wait_max_ms = 0\nrequest_service_us = 0\n"
    '[network]\nlatency = { dist = "lognormal", median_ms = 0.1, sigma = 1 }\n',
    "\n[cluster]\nbrokers = 1\nreplica_fetch_wait_max_ms = 0\nrequest_service_us = 0\n"
    '[network]\nlatency = { dist = "constant", ms = 0 }\n'])
def test_a_fetch_wait_of_0_is_fine_where_time_passes(after):
    # request service time, jitter, a latency that can draw 1 µs, or no follower to fetch
    parse_scenario(with_topic(after=after), "ok.toml")


def test_error_carries_its_parts():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(with_topic(after="\n[cluster]\nbrokers = 0\n"), "s.toml")
    err = info.value
    assert (err.file, err.key) == ("s.toml", "cluster.brokers") and isinstance(err, ValueError)


@pytest.mark.parametrize("mode", ['"required"', '"requested"', "true"])
def test_a_profile_without_kip98_refuses_an_idempotent_producer(mode):
    text = MINIMAL + f'[protocol]\nprofile = "0.10.2"\n[[producers]]\ntopic = "t"\nenable_idempotence = {mode}\n'
    message = bad(text)
    assert "producers[0].enable_idempotence" in message and "0.10.2" in message
    assert "KIP-98" in message


def test_without_kip98_a_default_producer_is_not_idempotent():
    """`default` means idempotent under a profile whose default is on (3.0+, here `proposed`),
    but not once `idempotent_producer` is off."""
    from epochsim.runner import run_scenario
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
    from epochsim.runner import run_scenario
    text = (MINIMAL + f'[run]\nduration_ms = 300\nsettle_ms = 100\n[protocol]\nprofile = "{profile}"\n'
            f'[[producers]]\ntopic = "t"\nenable_idempotence = {mode}\n{setting}\n')
    events = run_scenario(parse_scenario(text), 1, keep_events=True)["_events"]
    assert next(e["effective_idempotence"] for e in events if e["kind"] == "client_config") == expected


def test_docs_list_every_invariant_switch_and_message_kind_in_order():
    """docs/scenarios.md's lists are the code's: a new invariant, switch or message kind
    must be documented where scenario writers look for it."""
    import re

    from scenarios.schema import ALL_INVARIANTS
    from sim.kafka.faults.rules import MESSAGE_KINDS
    from sim.kafka.profiles import switch_names

    text = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()

    def names_in(paragraph_start: str) -> list[str]:
        paragraph = text[text.index(paragraph_start):].split("\n\n")[0]
        return re.findall(r"`([A-Za-z_]+)`", paragraph)

    assert names_in("The invariants are, in order:") == ALL_INVARIANTS
    assert names_in("The switches are")[:len(switch_names())] == switch_names()
    kind_row = next(line for line in text.splitlines() if line.startswith("| `kind` |"))
    assert set(re.findall(r"`([A-Za-z]+)`", kind_row)) - {"kind"} == set(MESSAGE_KINDS)


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
    from epochsim.runner import run_scenario

    text = ('expect = "pass"\n[run]\nduration_ms = 12000\nsettle_ms = 1000\n'
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


def test_an_assignment_implies_the_replication_factor():
    sc = parse_scenario('expect = "pass"\n[[topics]]\nname = "t"\npartitions = 2\n'
                        'assignment = [[1, 2], [2, 3]]\n')
    assert sc.options["topics"][0]["replication_factor"] == 2
    with pytest.raises(ScenarioError) as info:  # every list must have that many replicas
        parse_scenario('expect = "pass"\n[[topics]]\nname = "t"\npartitions = 2\n'
                       'assignment = [[1, 2], [2]]\n')
    assert info.value.key == "topics[0].assignment[1]"


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
