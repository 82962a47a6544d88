"""Bad scenario input: each error is one line naming the file, the key and the fix."""

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from tests.scenarios.texts import bad, with_topic

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
    ("log_dir_beyond_log_dirs",
     with_topic(after=FAULT + 'action = "log_dir_failure"\ntarget = "b1"\ndir = 1\n'),
     "faults[0].dir", ["log dir 1 does not exist", "cluster.log_dirs = 1", "raise cluster.log_dirs"]),
    ("log_dir_negative",
     with_topic(after=FAULT + 'action = "log_dir_failure"\ntarget = "b1"\ndir = -1\n'),
     "faults[0].dir", ["negative"]),
    ("log_dir_failure_when_unknown",
     with_topic(after=FAULT + 'action = "log_dir_failure"\ntarget = "b1"\nwhen = "later"\n'),
     "faults[0].when", ["unknown value 'later'"]),
    ("log_dir_failure_data_unknown",
     with_topic(after=FAULT + 'action = "log_dir_failure"\ntarget = "b1"\ndata = "gone"\n'),
     "faults[0].data", ["unknown value 'gone'"]),
    ("log_dir_failure_of_a_controller",
     with_topic(after=FAULT + 'action = "log_dir_failure"\ntarget = "c1"\n'),
     "faults[0].target", ["is not a broker"]),
    ("log_dirs_zero", with_topic(after="\n[cluster]\nlog_dirs = 0\n"), "cluster.log_dirs",
     ["below the minimum 1"]),
    ("log_dirs_above_the_maximum", with_topic(after="\n[cluster]\nlog_dirs = 17\n"),
     "cluster.log_dirs", ["above the maximum 16"]),
    ("auto_offset_reset_unknown",
     with_topic(after='\n[[consumers]]\ntopic = "t"\nauto_offset_reset = "smallest"\n'),
     "consumers[0].auto_offset_reset", ["unknown value 'smallest'"]),
    ("auto_offset_reset_none_in_aiokafka",
     with_topic(after='\n[[consumers]]\ntopic = "t"\nauto_offset_reset = "none"\n'
                      'client = "aiokafka"\n'),
     "consumers[0].auto_offset_reset", ["aiokafka"]),
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
    ("create_topic_assignment_uneven",
     with_topic(after=FAULT + 'action = "create_topic"\nname = "u"\nassignment = [[1, 2], [1]]\n'),
     "faults[0].assignment", ["different replication factors", "as many replicas"]),
    ("create_topic_assignment_bad_broker",
     with_topic(after=FAULT + 'action = "create_topic"\nname = "u"\nassignment = [[1, 9]]\n'),
     "faults[0].assignment[0][1]", ["9"]),
    ("create_topic_assignment_empty",
     with_topic(after=FAULT + 'action = "create_topic"\nname = "u"\nassignment = []\n'),
     "faults[0].assignment", ["must not be empty"]),
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


def test_an_assignment_implies_the_replication_factor():
    sc = parse_scenario('expect = "pass"\n[[topics]]\nname = "t"\npartitions = 2\n'
                        'assignment = [[1, 2], [2, 3]]\n')
    assert sc.options.topics[0].replication_factor == 2
    with pytest.raises(ScenarioError) as info:  # every list must have that many replicas
        parse_scenario('expect = "pass"\n[[topics]]\nname = "t"\npartitions = 2\n'
                       'assignment = [[1, 2], [2]]\n')
    assert info.value.key == "topics[0].assignment[1]"
