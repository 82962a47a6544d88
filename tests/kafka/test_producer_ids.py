"""Producer ids from brokers: block allocation (`rules.producer_ids`, `producer_ids`) and the
0.11-2.4 producer's reset through InitProducerId (`producer_idempotence.reset_producer_id`)."""

from __future__ import annotations

import pytest

from sim.kafka import errors as E
from sim.kafka.rules import producer_ids as R


def test_zk_blocks_follow_the_znode():
    assert R.next_zk_block(None) == (0, 999)
    assert R.next_zk_block((0, 999)) == (1000, 1999)
    assert R.next_zk_block((1000, 1999)) == (2000, 2999)


def test_kraft_prefetch_and_usable_blocks():
    assert R.prefetch_target((0, 999)) == 900
    assert R.prefetch_target((1000, 1999)) == 1900
    assert R.usable_block(R.EMPTY_BLOCK, 0, 1000)
    assert not R.usable_block((1000, 1999), 0, 1000)  # not monotonic
    assert not R.usable_block(R.EMPTY_BLOCK, -1, 10)
    assert not R.usable_block(R.EMPTY_BLOCK, 0, -1)


def test_controller_checks_the_broker_epoch():
    assert R.allocate_producer_ids_error(3, 3) == E.NONE
    assert R.allocate_producer_ids_error(None, 0) == E.STALE_BROKER_EPOCH
    assert R.allocate_producer_ids_error(3, 99) == E.STALE_BROKER_EPOCH


RUN = """
name = "producer-ids"
expect = "pass"
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
{mode}
[[topics]]
name = "t"
partitions = 3
replication_factor = 3
{producers}
[run]
duration_ms = {until_ms}
settle_ms = 1000
"""
PRODUCER = """
[[producers]]
name = "p{i}"
topic = "t"
enable_idempotence = true
records_per_sec = 50
{options}"""


def _run(profile: str, mode: str = "", producers: int = 4, until_ms: int = 4000, extra: str = "",
         options: str = ""):
    """A run of `producers` idempotent producers (each with the TOML lines `options`), with
    the TOML `extra` (faults) after them."""
    from epochsim.runner import run_scenario
    from scenarios.schema import parse_scenario
    text = RUN.format(profile=profile, mode=mode, until_ms=until_ms,
                      producers="".join(PRODUCER.format(i=i, options=options)
                                        for i in range(1, producers + 1)))
    return run_scenario(parse_scenario(text + extra), 1, keep_events=True)


def _answers(verdict) -> list[tuple[str, int, int]]:
    """(producer, id, error) of every InitProducerId answer, in order."""
    return [(e["dst"], e["producer_id"], e["error"]) for e in verdict["_events"]
            if e["kind"] == "send" and e.get("msg") == "InitProducerIdResponse"]


@pytest.mark.parametrize("profile,mode", [("2.4", ""), ("3.7", ""),
                                          ("3.7", 'mode = "kraft"\ncontrollers = 1')])
def test_every_producer_gets_its_own_id_from_a_broker(profile, mode):
    verdict = _run(profile, mode)
    assert verdict["violations"] == []
    given = [(dst, pid) for dst, pid, err in _answers(verdict) if err == E.NONE]
    producers = sorted({dst for dst, _pid in given})
    assert producers == ["p1", "p2", "p3", "p4"], given
    pids = [pid for _dst, pid in given]
    assert len(set(pids)) == len(pids), "an id handed out twice"
    appended = {b["pid"] for e in verdict["_events"] if e["kind"] == "append"
                for b in e["batches"] if "pid" in b}
    assert appended and appended <= set(pids)


def test_a_kraft_broker_without_a_block_answers_coordinator_load_in_progress():
    verdict = _run("3.7", 'mode = "kraft"\ncontrollers = 1', producers=1)
    errors = [err for _dst, _pid, err in _answers(verdict)]
    assert errors[0] == E.COORDINATOR_LOAD_IN_PROGRESS and errors[-1] == E.NONE, errors
    records = [e for e in verdict["_events"] if e["kind"] == "send"
               and e.get("msg") == "AllocateProducerIdsResponse"]
    assert records and records[0]["error"] == E.NONE and records[0]["start"] == 0


RESTART = """
[[faults]]
at_ms = 1500
action = "crash"
target = "p1"
[[faults]]
at_ms = 2000
action = "restart"
target = "p1"
"""


@pytest.mark.parametrize("profile", ["0.11", "2.4", "3.7"])
def test_a_restarted_producer_process_takes_a_new_id_from_sequence_0(profile):
    """A producer process that restarts is a new KafkaProducer: its first send loop asks for a
    new id (no transactional.id ties it to the old one, KIP-98) and numbers every partition
    from sequence 0 again; the invariants hold."""
    verdict = _run(profile, producers=1, extra=RESTART)
    assert verdict["violations"] == []
    asked = [e["t"] for e in verdict["_events"] if e["kind"] == "send"
             and e.get("msg") == "InitProducerId"]
    assert len(asked) == 2 and asked[1] >= 2_000_000, asked
    old, new = ({b["pid"]: b for e in verdict["_events"] if e["kind"] == "append"
                 and (e["t"] >= 2_000_000) == later for b in e["batches"]} for later in (False, True))
    assert old and new and not set(old) & set(new)
    firsts = {}
    for e in verdict["_events"]:
        if e["kind"] == "append" and e["t"] >= 2_000_000:
            for b in e["batches"]:
                firsts.setdefault(b["tp"], b["base_seq"])
    assert firsts and set(firsts.values()) == {0}, firsts


def _rule(kind: str, at_ms: int = 0) -> str:
    return f"""
[[faults]]
at_ms = {at_ms}
action = "rule"
rule = "drop"
kind = "{kind}"
count = 1
"""


def _sends(verdict, msg: str) -> list[int]:
    return [e["t"] for e in verdict["_events"] if e["kind"] == "send" and e.get("msg") == msg]


@pytest.mark.parametrize("profile", ["2.4", "3.7"])
def test_a_lost_init_producer_id_answer_is_asked_again_after_the_timeout_and_backoff(profile):
    """A `drop` rule may name InitProducerIdResponse: the producer hears nothing, its request
    times out after request.timeout.ms, which closes the connection, and it asks again
    retry.backoff.ms later (3.7.0: `TxnRequestHandler.onComplete` re-enqueues a disconnected
    request, `Sender.maybeSendAndPollTransactionalRequest` sleeps `retryBackoffMs` before a
    retry; 2.4.0: `maybeWaitForProducerId` sleeps after the failed `sendAndReceive`)."""
    verdict = _run(profile, producers=1, extra=_rule("InitProducerIdResponse"),
                   options="request_timeout_ms = 1000\nretry_backoff_ms = 200\n")
    asked = _sends(verdict, "InitProducerId")
    assert len(asked) == 2, asked
    assert asked[1] - asked[0] == 1_000_000 + 200_000
    drops = [e for e in verdict["_events"] if e["kind"] == "drop"
             and e.get("msg") == "InitProducerIdResponse"]
    assert len(drops) == 1
    assert verdict["violations"] == []
    assert [e for e in verdict["_events"] if e["kind"] == "ack"]


def test_a_lost_allocate_producer_ids_answer_is_given_up_after_the_controller_timeout():
    """A KRaft broker whose AllocateProducerIds answer is lost waits for it until
    controller.socket.timeout.ms, answering InitProducerId COORDINATOR_LOAD_IN_PROGRESS
    meanwhile, then asks again (3.7.0's channel to the controller times the request out and
    sends it again, `NodeToControllerRequestThread.handleResponse`); the producer gets its id
    then."""
    verdict = _run("3.7", 'mode = "kraft"\ncontrollers = 1', producers=1, until_ms=34000,
                   extra=_rule("AllocateProducerIdsResponse"))
    asked = _sends(verdict, "AllocateProducerIds")
    assert len(asked) == 2 and asked[1] - asked[0] >= 30_000_000, asked
    errors = [err for _dst, _pid, err in _answers(verdict)]
    assert errors.count(E.COORDINATOR_LOAD_IN_PROGRESS) > 10 and errors[-1] == E.NONE


@pytest.mark.parametrize("profile", ["3.5", "3.6"])
def test_before_kafka_14694_a_kraft_broker_holds_init_producer_id_until_its_block_comes(profile):
    """3.3-3.5 (`kraft_producer_id_no_wait` off): a KRaft broker with no block holds each
    InitProducerId until the controller's block comes, so every producer gets its id from its
    first request, with no error; 3.6+ answers the first ones COORDINATOR_LOAD_IN_PROGRESS at
    once and the producers ask again (KAFKA-14694)."""
    verdict = _run(profile, 'mode = "kraft"\ncontrollers = 1')
    assert verdict["violations"] == []
    errors = [err for _dst, _pid, err in _answers(verdict)]
    if profile == "3.5":
        assert errors == [E.NONE] * 4
    else:
        assert E.COORDINATOR_LOAD_IN_PROGRESS in errors and errors[-4:] == [E.NONE] * 4
    given = [pid for _dst, pid, err in _answers(verdict) if err == E.NONE]
    assert len(given) == 4 and len(set(given)) == 4


def test_a_held_init_producer_id_whose_block_never_comes_times_out():
    """3.5: the AllocateProducerIds answer is lost, so the InitProducerId waiting for the block
    is answered COORDINATOR_LOAD_IN_PROGRESS after the broker's request.timeout.ms ("Timed out
    waiting for next producer ID block"); the broker asks the controller again then, and the
    producer's next InitProducerId gets its id."""
    verdict = _run("3.5", 'mode = "kraft"\ncontrollers = 1', producers=1, until_ms=34000,
                   extra=_rule("AllocateProducerIdsResponse"),
                   options="request_timeout_ms = 40000\n")
    answers = _answers(verdict)
    assert [err for _dst, _pid, err in answers] == [E.COORDINATOR_LOAD_IN_PROGRESS, E.NONE]
    held = _sends(verdict, "AllocateProducerIds")[0]
    assert _sends(verdict, "InitProducerIdResponse")[0] == held + 30_000_000
