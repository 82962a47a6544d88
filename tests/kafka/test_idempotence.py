"""Idempotent producer (KIP-192 / KIP-185): the issue's "must show" list, end to end."""

from __future__ import annotations

import pytest

from tests.conftest import run_cached


def _events(name, overrides=()):
    from epochsim.runner import run_scenario
    from scenarios.schema import load_scenario
    from tests.conftest import scenario_path
    verdict = run_scenario(load_scenario(scenario_path(name), dict(overrides)), 1, keep_events=True)
    return verdict, verdict["_events"]


@pytest.mark.parametrize("profile", ["1.0", "2.4", "2.5", "3.7", "proposed"])
def test_lost_responses_never_duplicate_with_idempotence(profile):
    verdict = run_cached("idem-lost-response-dedup", 1, (("protocol.profile", profile),
                                                         ("producers.0.enable_idempotence", True)))
    assert "duplicate_append" not in verdict["violated"]
    assert verdict["metrics"]["duplicates_non_idempotent"] == 0
    assert verdict["metrics"]["retries"] > 0  # the retries really happened


def test_lost_responses_duplicate_without_idempotence_counted_not_violation():
    verdict = run_cached("idem-lost-response-dedup", 1, (("producers.0.enable_idempotence", False),))
    assert verdict["violations"] == []
    assert verdict["metrics"]["duplicates_non_idempotent"] > 0


def test_dedup_returns_original_offset():
    _, events = _events("idem-lost-response-dedup")
    dups = [e for e in events if e["kind"] == "dup_append"]
    appended = {b["bid"]: b["base_offset"] for e in events if e["kind"] == "append" for b in e["batches"]}
    assert dups and all(appended[d["bid"]] == d["base_offset"] for d in dups)


def test_requested_mode_switches_on_after_format_upgrade():
    verdict, events = _events("idem-format-upgrade-requested")
    assert verdict["violations"] == [] and verdict["metrics"]["failed"] == 0
    rows = [(e["t"], "pid" in b) for e in events if e["kind"] == "append" for b in e["batches"]]
    before = [idem for t, idem in rows if t < 5_000_000]
    late = [idem for t, idem in rows if t > 8_000_000]
    assert before and not any(before)  # non-idempotent on format v1, without errors
    assert late and all(late)  # idempotent once metadata shows v2


def test_required_mode_fails_clearly_before_upgrade():
    verdict, events = _events("idem-format-upgrade-required")
    failed = [e for e in events if e["kind"] == "produce_failed"]
    assert failed and all(e["error_name"] == "IDEMPOTENCE_UNSUPPORTED_FORMAT" for e in failed)
    assert max(e["t"] for e in failed) < 8_000_000
    assert all("pid" in b for e in events if e["kind"] == "append" for b in e["batches"])
    assert verdict["violations"] == []


@pytest.mark.parametrize("name,mutant,invariant", [
    ("idem-format-upgrade-requested", "requested_as_required", "idempotence_mode_violated"),
    ("idem-retention-spurious-1.0", "spurious_out_of_order", "spurious_out_of_order_sequence"),
    ("idem-lost-response-dedup", "no_dedup_cache", "duplicate_append"),
    ("idem-unclean-loss-reported-1.0", "unknown_producer_id_always_benign", "unreported_data_loss"),
])
def test_idempotence_mutants_are_caught(name, mutant, invariant):
    verdict = run_cached(name, 1, (("protocol.mutant", mutant),))
    assert invariant in verdict["violated"], verdict["violated"]


REORDER = """
expect = "pass"
[run]
duration_ms = 6000
settle_ms = 2000
[protocol]
mutant = "{mutant}"
[[topics]]
name = "t"
partitions = 1
[[producers]]
topic = "t"
records_per_sec = 400
linger_ms = 10
enable_idempotence = true
[[faults]]
at_ms = 1000
action = "rule"
rule = "reorder"
kind = "Produce"
delay_ms = 40
duration_ms = 2000
"""


@pytest.mark.parametrize("mutant,violated", [("", False), ("no_sequence_check", True)])
def test_sequence_check_keeps_log_in_sequence_order(mutant, violated):
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    verdict = run_scenario(parse_scenario(REORDER.format(mutant=mutant)), 1)
    assert ("out_of_order_append" in verdict["violated"]) is violated, verdict["violated"]


# -- sequences of batches that expire (KAFKA-5494 unresolved sequences, KIP-360 epoch bump) ----
_PRODUCE_BLACKOUT = """
[[faults]]
at_ms = 1000
action = "rule"
rule = "drop"
kind = "Produce"
duration_ms = 1250
"""


def _selftest_base_run(mutant: str, faults: str, overrides: dict | None = None) -> dict:
    """Run the self-test base of `mutant`, with the mutant removed and `faults` added."""
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    from tests.conftest import scenario_path
    path = scenario_path(f"selftest/{mutant}")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    sc = parse_scenario(text + faults, path, {"protocol.mutant": "", **(overrides or {})})
    return run_scenario(sc, 1, keep_events=True)


def _blackout_run(overrides: dict):
    """Every Produce is lost for 1.25 s, longer than the 1.2 s delivery timeout: the batches
    sent in that window expire, leaving sequences the broker never saw."""
    verdict = _selftest_base_run("spurious_out_of_order", _PRODUCE_BLACKOUT,
                                 {"protocol.producer_id_expiration_ms": 600_000, **overrides})
    appended = [b for e in verdict["_events"] if e["kind"] == "append" for b in e["batches"]
                if "pid" in b]
    first = (appended[0]["pid"], appended[0]["producer_epoch"])
    restarted = [b for b in appended
                 if (b["pid"], b["producer_epoch"]) != first and b["base_seq"] == 0]
    return verdict, restarted, first[0]


@pytest.mark.parametrize("kip360_client", [False, True])
def test_expired_sent_batches_restart_the_sequence_under_a_new_epoch_or_id(kip360_client):
    """A 2.5+ client restarts at sequence 0 under a new epoch of its id; a 1.0-2.4 client
    resets its producer id and restarts under the new id a broker's InitProducerId gives."""
    verdict, restarted, first_pid = _blackout_run(
        {"protocol.client_retries_out_of_order": kip360_client})
    assert verdict["violations"] == []
    assert restarted, "the partition should start over at sequence 0 under a new epoch or id"
    same_id = all(b["pid"] == first_pid for b in restarted)
    assert same_id is kip360_client, (first_pid, [b["pid"] for b in restarted])
    # the producer goes on after the blackout (1 s to 2.25 s)
    assert sum(1 for e in verdict["_events"] if e["kind"] == "ack" and e["t"] > 2_250_000) >= 20


def test_without_sequence_resolution_an_expired_retried_batch_resets_the_producer_id():
    """A 0.11 client (no KAFKA-5494 sequence resolution) resets its producer id when a retried
    batch expires (`needsTransactionStateReset`, 0.11.0.0 `Sender.sendProducerData`), and goes
    on under the new id a broker gives, from sequence 0, past the gap."""
    verdict, restarted, first_pid = _blackout_run({"protocol.client_resolves_sequences": False})
    assert verdict["violations"] == []
    assert restarted and all(b["pid"] != first_pid for b in restarted)
    assert sum(1 for e in verdict["_events"] if e["kind"] == "ack" and e["t"] > 2_250_000) >= 20


def test_a_produce_request_timeout_closes_the_connection_and_loses_what_waited_on_it():
    """Over a cut link (`partition = "stall"`) requests wait; the producer's request timeout
    closes the connection (NetworkClient), so they never arrive after the retries."""
    verdict = _selftest_base_run("no_sequence_check",
                                 '\n[[faults]]\nat_ms = 1000\naction = "isolate"\ntarget = "b1"\n'
                                 '\n[[faults]]\nat_ms = 2500\naction = "heal"\n')
    closed = [e for e in verdict["_events"] if e["kind"] == "drop"
              and e["reason"] == "connection_closed" and e["node"] == "p1"]
    assert closed, "the timed-out Produce requests should die with their connection"
    assert verdict["violations"] == []


# -- producer-state expiration (ref §2.3) --------------------------------------------------------
_IDLE_PRODUCER = """
name = "idle-producer"
expect = "pass"
seed = 1
[run]
duration_ms = 20000
settle_ms = 3000
[protocol]
profile = "2.4"
producer_id_expiration_ms = 3000
[cluster]
brokers = 3
{cluster}
[[topics]]
name = "t"
partitions = 1
replication_factor = 3
[[producers]]
name = "p1"
topic = "t"
records_per_sec = 0.2
linger_ms = 20
enable_idempotence = true
"""


def _unknown_producer_answers(cluster: str) -> int:
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    sc = parse_scenario(_IDLE_PRODUCER.format(cluster=cluster), "idle-producer.toml")
    events = run_scenario(sc, 1, keep_events=True)["_events"]
    return sum(1 for e in events if e["kind"] == "produce_result" and e["error"] == 59)


def test_idle_producer_state_expires_without_retention():
    # a batch every 5 s, state kept 3 s, checked every second: a batch after an idle gap finds
    # its producer forgotten (UNKNOWN_PRODUCER_ID on 2.4), although the topic has no retention
    assert _unknown_producer_answers("producer_id_expiration_check_interval_ms = 1000") >= 1
    # Kafka's default check interval (10 min) never comes round in a 20 s run
    assert _unknown_producer_answers("") == 0


def test_rebuilding_producer_state_keeps_its_age_and_what_retention_removed():
    from sim.kafka.idempotence import producers_of, rebuild, record_append
    from sim.kafka.log import Log
    from sim.kafka.messages import Batch

    log = Log()
    old = Batch("p#0", "p", 5, 100, pid=7, producer_epoch=0, base_seq=0)
    log.append(5, 0, old, 0)
    record_append(log, old, 0, 1_000)
    for i, pid in enumerate((8, 8)):
        batch = Batch(f"q#{i}", "q", 5, 200 + i, pid=pid, producer_epoch=0, base_seq=5 * i)
        base = log.append(5, 0, batch, 0)
        record_append(log, batch, base, 2_000 + i)
    log.hw = 15
    log.advance_start(5)  # retention removed producer 7's only batch
    log.truncate_to(10)  # and a truncation removes producer 8's last batch
    rebuild(log)
    producers = producers_of(log)
    assert producers[7].last_us == 1_000 and producers[7].last_offset == 4  # kept as it was
    assert producers[8].last_us == 2_001 and producers[8].last_offset == 9  # not made younger
    assert [b[0] for b in producers[8].batches] == [0]


def test_a_shipped_client_sends_to_an_old_format_and_meets_the_brokers_error():
    """MessageFormatVersion in metadata never shipped (ref §2.6): a 2.5 idempotent producer
    cannot know the topic is v1, so it sends and each batch fails on the broker's
    UNSUPPORTED_FOR_MESSAGE_FORMAT, not on the KIP-185 client-side check."""
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    text = """
name = "old-format"
expect = "pass"
[run]
duration_ms = 4000
settle_ms = 1000
[protocol]
profile = "2.5"
[[topics]]
name = "t"
message_format = 1
[[producers]]
topic = "t"
acks = "all"
enable_idempotence = true
records_per_sec = 100
linger_ms = 100
"""
    events = run_scenario(parse_scenario(text, "old-format.toml"), 1, keep_events=True)["_events"]
    failed = {e["error"] for e in events if e["kind"] == "produce_failed"}
    answered = [e for e in events if e["kind"] == "produce_result" and e["error"] == 43]
    assert failed == {43} and answered, failed
