"""The probe format: a node set to a state, sent hand-written messages, judged per expectation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, load_scenario, parse_scenario

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

STOP = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 2
[probe]
kafka_test = "ReplicaManagerTest.testStopReplicaWithExistingPartitionAndOlderLeaderEpoch"
kafka_tag = "2.6.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 1
replicas = [1, 2]
log = [{{leader_epoch = 0, record_count = 4}}]
[[probe.steps]]
deliver = "StopReplica"
body = {{ partitions = [{{ tp = "t-0", {epoch}delete = true }}] }}
expect = {{ "error:t-0" = "{error}", "log_exists:t-0" = {kept} }}
"""


E0 = "leader_epoch = 0, "


def _verdict(text: str, path: str = "probe.toml") -> dict:
    return run_scenario(parse_scenario(text, path), 1)


def test_a_probe_that_agrees_with_kafka_is_met():
    v = _verdict(STOP.format(profile="2.6", error="FENCED_LEADER_EPOCH", kept="true", epoch=E0))
    assert v["expectation_met"], v.get("expectation_note")
    assert [c["check"] for c in v["probe"]] == ["error:t-0", "log_exists:t-0"]
    assert all(c["agree"] for c in v["probe"])


def test_the_model_answers_by_its_profile():
    # 2.5 sends StopReplica v2 without an epoch: the older epoch is not fenced, the log goes
    v = _verdict(STOP.format(profile="2.5", error="NONE", kept="false", epoch=""))
    assert v["expectation_met"], v.get("expectation_note")


def test_a_disagreement_is_not_met_and_named():
    v = _verdict(STOP.format(profile="2.5", error="FENCED_LEADER_EPOCH", kept="true", epoch=""))
    assert not v["expectation_met"]
    assert v["expectation_note"].startswith("step 0 error:t-0: Kafka FENCED_LEADER_EPOCH, "
                                            "model NONE")
    assert "(and 1 more)" in v["expectation_note"]


@pytest.mark.parametrize("name", ["leader_answers.toml", "producer_retries.toml"])
def test_probe_files_agree_and_replay(name):
    sc = load_scenario(str(HERE / name))
    first, second = run_scenario(sc, 1), run_scenario(sc, 1)
    assert first["expectation_met"], first.get("expectation_note")
    assert first["trace_digest"] == second["trace_digest"]
    assert len(first["probe"]) >= 5


def test_the_trace_records_steps_and_checks(tmp_path):
    sc = load_scenario(str(HERE / "leader_answers.toml"))
    run_scenario(sc, 1, str(tmp_path))
    lines = [json.loads(x) for x in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert lines[0]["probe"]["node"] == "b1"
    kinds = [ev["kind"] for ev in lines[1:]]
    assert kinds.count("probe_step") == 3 and kinds[-1] == "end"
    checks = [ev for ev in lines if ev.get("kind") == "probe_check"]
    assert {c["check"] for c in checks} >= {"answer.end_offset:t-0", "epoch_cache:t-0"}


BAD = [
    ('body = { partitions = [{ tp = "t-0", leader_epoch = 0, delet = true }] }',
     "probe.steps[0].body.partitions[0].delet: unknown field; did you mean 'delete'?"),
    ('deliver = "StopReplicas"', "probe.steps[0].deliver: unknown message 'StopReplicas'"),
    ('deliver = "ProduceResponse"', "probe.steps[0].deliver: a broker does not take ProduceResponse"),
    ('expect = { "hostd:t-0" = true }', "probe.steps[0].expect.hostd:t-0: unknown check for a broker"),
    ('expect = { "hosted" = true }', "probe.steps[0].expect.hosted: needs an argument"),
    ('body = { partitions = [{ tp = "t-0", leader_epoch = "x" }] }',
     "probe.steps[0].body.partitions[0].leader_epoch: expected an integer"),
    ('profile = "2.5"', "probe.steps[0].body: StopReplica carries no leader_epoch on this "
     "profile: it comes with StopReplica v3 (KIP-570, 2.6)"),
    # found by mutating the conformance cases: each failed inside the run before
    ("leader = 0", "probe.state.partitions[0].leader: broker 0 is not in the cluster (brokers 1-2)"),
    ("replicas = [1, 3]", "probe.state.partitions[0].replicas: broker 3 is not in the cluster"),
    ("log = [{leader_epoch = 0, record_count = 4}]\nhigh_watermark = 9",
     "probe.state.partitions[0].high_watermark: 9 is outside the log [0, 4]"),
    ('body = { partitions = [{ tp = "t-0", delete = true }, { tp = "t-0", delete = true }] }',
     "probe.steps[0].body.partitions: t-0 is listed twice"),
]


@pytest.mark.parametrize("line,message", BAD)
def test_bad_probe_fields_are_one_line_errors(line, message):
    text = STOP.format(profile="2.6", error="NONE", kept="true", epoch=E0)
    key = line.split(" = ")[0]
    lines = [line if x.startswith(key + " = ") else x for x in text.splitlines()]
    with pytest.raises(ScenarioError) as err:
        parse_scenario("\n".join(lines), "bad.toml")
    assert str(err.value).startswith(f"bad.toml: {message}")
    assert "\n" not in str(err.value)


def test_a_bad_probe_exits_2_on_the_command_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(STOP.format(profile="2.6", error="NOPE", kept="true", epoch=E0))
    proc = subprocess.run([sys.executable, "-m", "epochsim", "run", str(bad), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "unknown error 'NOPE'" in proc.stderr or "NOPE" in proc.stderr


def test_the_documented_probes_agree(tmp_path):
    """docs/scenarios.md teaches probes with two examples: both run and agree."""
    import re
    doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Probes"):]
    blocks = re.findall(r"```toml\n(.*?)```", section, re.S)
    assert len(blocks) == 2
    for i, text in enumerate(blocks):
        v = run_scenario(parse_scenario(text, f"doc-{i}.toml"), 1)
        assert v["expectation_met"], v.get("expectation_note")


def test_check_rejudges_a_probe_trace(tmp_path):
    """`epochsim check` on a probe's trace counts its recorded checks: exit 1 on a disagreement."""
    for name, rc in (("agree", 0), ("disagree", 1)):
        error = "FENCED_LEADER_EPOCH" if name == "agree" else "NONE"
        path = tmp_path / f"{name}.toml"
        path.write_text(STOP.format(profile="2.6", error=error, kept="true", epoch=E0))
        out = tmp_path / name
        run_scenario(load_scenario(str(path)), 1, str(out))
        proc = subprocess.run([sys.executable, "-m", "epochsim", "check", str(out / "trace.jsonl")],
                              capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == rc, proc.stdout + proc.stderr
        assert ("2/2 checks agree" if rc == 0 else "1/2 checks agree") in proc.stdout


KIP951 = """
[protocol]
profile = "3.7"
[cluster]
brokers = 1
[[topics]]
name = "t"
partitions = 2
replication_factor = 1
[[producers]]
topic = "t"
enable_idempotence = false
retry_backoff_ms = 10
[probe]
kafka_test = "SenderTest.x"
kafka_tag = "3.7.0"
node = "p1"
[probe.state]
metadata = [{{tp = "t-0", leader = 1, leader_epoch = 100}}]
batches = [{{batch_id = "a", tp = "t-0", in_flight_to = 1}}]
{extra}
[[probe.steps]]
deliver = "{kind}"
from = "b1"
wait_ms = 5
body = {body}
expect = {expect}
"""


def test_a_batch_set_in_flight_was_drained_under_the_cached_epoch():
    """A batch the state puts in flight carries the cached leader epoch, so a retry without a
    newer epoch waits its backoff (KIP-951 skips it only for a leader change)."""
    text = KIP951.format(extra="", kind="ProduceResponse",
                         body='{results = [{tp = "t-0", error = "NOT_LEADER_OR_FOLLOWER"}]}',
                         expect='{"batch:a" = "retrying", sent = ["Metadata"]}')
    v = _verdict(text)
    assert v["expectation_met"], v.get("expectation_note")


def test_a_metadata_request_set_in_flight_takes_its_answer():
    text = KIP951.format(extra="metadata_in_flight_to = 1", kind="MetadataResponse",
                         body='{partitions = [{tp = "t-1", leader = 1, leader_epoch = 7}]}',
                         expect='{"known:t-1" = true, "leader_epoch:t-1" = 7, "nodes" = [1]}')
    v = _verdict(text)
    assert v["expectation_met"], v.get("expectation_note")
    # without a request in flight the answer is unsolicited and ignored
    v = _verdict(text.replace("metadata_in_flight_to = 1", ""))
    assert not v["expectation_met"] and "known:t-1: Kafka True, model False" in v["expectation_note"]


def test_acknowledged_offsets_are_observable():
    text = KIP951.format(extra="", kind="ProduceResponse",
                         body='{results = [{tp = "t-0", error = "NONE", base_offset = 41}]}',
                         expect='{"batch_offset:a" = 41, "batch:a" = "acked"}')
    v = _verdict(text)
    assert v["expectation_met"], v.get("expectation_note")
    bad = _verdict(text.replace('"batch_offset:a" = 41', '"batch_offset:a" = 40'))
    assert "batch_offset:a: Kafka 40, model 41" in bad["expectation_note"]
FOLLOWER = """
[protocol]
profile = "3.7"
[cluster]
brokers = 2
[probe]
kafka_test = "x"
kafka_tag = "3.7.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 2
leader_epoch = 5
replicas = [1, 2]
log = [{leader_epoch = 3, record_count = 4}, {leader_epoch = 4, record_count = 2}]
high_watermark = 0
[[probe.steps]]
deliver = "FetchResponse"
from = "b2"
body = { partitions = [{ tp = "t-0", diverging_epoch = [3, 4] }] }
expect = { "log_end_offset:t-0" = 4 }
"""


def test_a_first_step_answers_the_fetch_still_on_the_wire():
    # the follower's first Fetch leaves at time 0 and reaches b2 after the step's answer is
    # written: the answer still names it, so the follower applies it (it truncates)
    v = _verdict(FOLLOWER)
    assert v["expectation_met"], v.get("expectation_note")


def test_a_request_level_field_is_refused_where_the_version_lacks_it():
    text = FOLLOWER.replace('profile = "3.7"', 'profile = "1.0"').replace(
        'deliver = "FetchResponse"\nfrom = "b2"\nbody = { partitions = [{ tp = "t-0", diverging_epoch = [3, 4] }] }',
        'deliver = "Fetch"\nfrom = "k1"\nbody = { replica_id = -1, client_metadata = true, partitions = [{ tp = "t-0", fetch_offset = 0 }] }')
    with pytest.raises(ScenarioError, match="Fetch carries no client_metadata on this profile: it "
                       r"comes with Fetch v11 \(KIP-392, 2.4\)"):
        parse_scenario(text, "probe.toml")
    parse_scenario(text.replace('profile = "1.0"', 'profile = "2.4"'), "probe.toml")


PARKED = """
[protocol]
profile = "2.4"
[cluster]
brokers = 2
[probe]
kafka_test = "x"
kafka_tag = "2.4.0"
node = "b1"
[[probe.state.partitions]]
tp = "t-0"
leader = 1
leader_epoch = 1
replicas = [1, 2]
log = [{leader_epoch = 1, record_count = 2}]
high_watermark = 0
[[probe.steps]]
deliver = "Fetch"
from = "b2"
wait_ms = 10
body = { max_wait_ms = 500, partitions = [{ tp = "t-0", fetch_offset = 2 }] }
expect = { "answered" = false, "follower_log_end_offset:t-0/2" = 2 }
[[probe.steps]]
deliver = "LeaderAndIsr"
answer_to = "b2"
body = { partitions = [{ tp = "t-0", leader = 2, leader_epoch = 2, replicas = [1, 2] }] }
expect = { "answered" = true, "error:t-0" = "NOT_LEADER_OR_FOLLOWER" }
"""


def test_answer_to_reads_an_answer_the_step_made_the_node_send_elsewhere():
    # the follower's Fetch waits in purgatory; the LeaderAndIsr (from c1) wakes it, and the
    # checks read the FetchResponse b1 sends b2, not the LeaderAndIsr's answer
    v = _verdict(PARKED)
    assert v["expectation_met"], v.get("expectation_note")
    assert [c["model"] for c in v["probe"]] == [False, 2, True, "NOT_LEADER_OR_FOLLOWER"]
    bad = PARKED.replace('answer_to = "b2"', 'answer_to = "b1"')
    with pytest.raises(ScenarioError, match="answer_to: 'b1' is the node under test"):
        parse_scenario(bad, "probe.toml")


def test_fetch_sent_reads_the_last_fetch_the_node_sent():
    # after the truncation to 4 the follower fetches again from 4, naming its last epoch, 3
    text = FOLLOWER.replace('expect = { "log_end_offset:t-0" = 4 }',
                            'expect = { "fetch_sent.fetch_offset:t-0" = 4, '
                            '"fetch_sent.last_fetched_epoch:t-0" = 3, '
                            '"fetch_sent.current_leader_epoch:t-0" = 5, '
                            '"fetch_sent.fetch_offset:t-9" = "none" }')
    v = _verdict(text)
    assert v["expectation_met"], v.get("expectation_note")


@pytest.mark.parametrize("sender", ["p1", "1e9", "b0", "b", "c1"])
def test_a_brokers_answer_must_come_from_a_broker(sender):
    # the follower reads the leader's id from the sender's name: any other name is refused
    # with the key and the fix, not left to fail inside the run
    bad = FOLLOWER.replace('from = "b2"', f'from = "{sender}"')
    with pytest.raises(ScenarioError, match=rf"probe.steps\[0\].from: '{sender}' is not a "
                       "broker: FetchResponse comes from a broker; name the broker"):
        parse_scenario(bad, "probe.toml")


def test_an_answer_naming_a_broker_outside_the_cluster_is_refused():
    # the producer would take broker 2 as a node and later ask it for metadata
    text = KIP951.format(extra="", kind="ProduceResponse", expect="{}",
                         body='{results = [{tp = "t-0", error = "NONE", base_offset = 0}], '
                              'node_endpoints = [1, 2]}')
    with pytest.raises(ScenarioError, match=r"probe.steps\[0\].body.node_endpoints: broker 2 "
                       r"is not in the cluster \(brokers 1-1\)"):
        parse_scenario(text, "probe.toml")
    parse_scenario(text.replace("node_endpoints = [1, 2]", "node_endpoints = [1]"), "probe.toml")


def test_a_followers_last_caught_up_time_is_named_by_the_step_it_fell_in():
    """`follower_last_caught_up` reads "never" for a follower outside the ISR of a new leader
    epoch (`resetReplicaState`), then the step whose Fetch caught it up, which a change at the
    same leader epoch keeps; a new leader epoch with the follower outside the ISR makes it
    "never" again."""
    from tests.probe.helpers import probe_checks
    path = ROOT / "scenarios" / "conformance" / "control-lai-same-epoch-keeps-replica-state-3.7.toml"
    bumped = path.read_text(encoding="utf-8").replace(
        "leader_epoch = 8, partition_epoch = 2", "leader_epoch = 9, partition_epoch = 2")
    checks = probe_checks(bumped, by_step=True)
    assert checks["1:follower_last_caught_up:test-topic-0/2"][1] == "step 1"
    assert checks["2:follower_last_caught_up:test-topic-0/2"][1] == "never"
    assert checks["2:follower_log_end_offset:test-topic-0/2"][1] == 0  # re-elected: kept
