"""A probe's checks of a client's side of its fetch sessions (KIP-227, `FetchSessionHandler`):
what a consumer's or a follower's Fetch carries and the session it keeps with each broker, and a
probe's FetchResponse with a top-level error and a session id."""

from types import SimpleNamespace

from sim.kafka.fetch_session import FetchSessionHandler
from sim.kafka.messages import Fetch, FetchPartition
from sim.kafka.probe import observe
from sim.kafka.probe.observable import Seen
from tests.probe.helpers import assert_refused, broker_probe, probe_checks

FOLLOWER = """
[[probe.state.partitions]]
tp = "t-0"
leader = 2
leader_epoch = 5
replicas = [1, 2]
log = [{ leader_epoch = 5, record_count = 2 }]
"""


def answer(extra: str, expect: str, records: str = "") -> str:
    return (f'\n[[probe.steps]]\ndeliver = "FetchResponse"\nfrom = "b2"\nbody = {{ {extra}'
            f'partitions = [{{ tp = "t-0", high_watermark = 2{records} }}] }}\n'
            f'expect = {{ {expect} }}\n')


def test_the_checks_are_a_consumer_s_and_a_broker_s():
    for role in ("consumer", "broker"):
        for key in ("fetch_sent.session_id", "fetch_sent.session_epoch", "fetch_sent.partitions",
                    "fetch_sent.forgotten", "fetch_session_epoch:b1", "fetch_session_id:b1",
                    "fetch_session_partitions:b1"):
            assert observe.check_key(role, key) is None, (role, key)
            assert key.partition(":")[0] in observe.names(role)
        assert observe.check_key(role, "fetch_session_epoch").startswith("needs an argument")
        assert observe.check_key(role, "fetch_sent.partitions:t-0").startswith("takes no")
    assert observe.check_key("producer", "fetch_sent.session_epoch") == "unknown"


def test_the_checks_read_the_last_fetch_sent_and_the_handler_for_the_broker():
    handler = FetchSessionHandler()
    handler.build_full([FetchPartition("t-1", 0, 0, -1), FetchPartition("t-0", 0, 0, -1)])
    handler.session_id, handler.epoch = 123, 4
    follower = SimpleNamespace(fetch_handlers={2: handler})
    fetch = Fetch(1, 1, 0, (FetchPartition("t-0", 3, 0, -1),), 123, 4, ("t-1",))
    seen = Seen(follower, sent=[("b2", "Fetch", fetch), ("b3", "Produce", None)])
    values = {key: observe.value("broker", key, seen) for key in (
        "fetch_sent.session_id", "fetch_sent.session_epoch", "fetch_sent.partitions",
        "fetch_sent.forgotten", "fetch_session_id:b2", "fetch_session_epoch:2",
        "fetch_session_partitions:b2", "fetch_session_epoch:b3", "fetch_session_id:x")}
    assert values == {"fetch_sent.session_id": 123, "fetch_sent.session_epoch": 4,
                      "fetch_sent.partitions": ["t-0"], "fetch_sent.forgotten": ["t-1"],
                      "fetch_session_id:b2": 123, "fetch_session_epoch:2": 4,
                      "fetch_session_partitions:b2": ["t-1", "t-0"],
                      "fetch_session_epoch:b3": "none", "fetch_session_id:x": "none"}
    consumer = SimpleNamespace(assigned=["t-0"], sessions={2: handler})
    assert observe.value("consumer", "fetch_session_epoch:b2", Seen(consumer)) == 4
    assert observe.value("consumer", "fetch_sent.session_epoch", Seen(consumer)) == "none"


def test_a_follower_fetches_in_the_session_its_leader_opened():
    """A follower's full Fetch asks for a session; b2's answer opens 123 with a record, and the
    next Fetch is incremental in it, naming t-0 again, altered (from offset 3); an
    INVALID_FETCH_SESSION_EPOCH answer makes the next one full again, closing 123
    (`FetchSessionHandler`, which serves the follower too)."""
    text = broker_probe("ReplicaFetcherThreadTest.probe", "b1", 2) + FOLLOWER + answer(
        "session_id = 123, ", '"fetch_sent.session_id" = 123, "fetch_sent.session_epoch" = 1, '
        '"fetch_sent.partitions" = ["t-0"], "fetch_session_partitions:b2" = ["t-0"], '
        '"log_end_offset:t-0" = 3', ", records = [{ base_offset = 2, leader_epoch = 5 }]") + answer(
        'error = "INVALID_FETCH_SESSION_EPOCH", session_id = 0, ',
        '"fetch_sent.session_id" = 123, "fetch_sent.session_epoch" = 0, '
        '"fetch_sent.partitions" = ["t-0"]')
    checks = probe_checks(text, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def test_a_fetch_response_names_its_top_level_error():
    text = broker_probe("ReplicaFetcherThreadTest.probe", "b1", 2) + FOLLOWER + answer(
        'error = "NO_SUCH_ERROR", ', '"fetch_sent.session_epoch" = 1')
    assert_refused(text, "error")
