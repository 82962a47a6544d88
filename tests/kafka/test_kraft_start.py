"""A KRaft broker's start: what its heartbeats report, and when it reads requests (the
controller's unfencing, KAFKA-14658)."""

from __future__ import annotations

import pytest

from tests.kafka.test_kraft import _events


def test_a_heartbeat_reports_the_last_record_applied_and_unfences_only_past_registration():
    """A broker's heartbeat carries CurrentMetadataOffset, the offset of the last record it
    applied (`MetadataLoader.lastAppliedOffset`, -1 for none), and the controller unfences it
    once that reaches its RegisterBrokerRecord's offset (`currentMetadataOffset >=
    registerBrokerRecordOffset`): never before the broker applied its own registration."""
    events = _events("kraft-smoke")
    applied: dict[str, int] = {}  # broker -> offset of the last record applied so far
    registered: dict[str, int] = {}  # broker -> offset of its RegisterBrokerRecord
    heartbeats = 0
    for e in events:
        if e["kind"] == "metadata_apply":
            applied[e["node"]] = e["to_offset"] - 1
        elif e["kind"] in ("crash", "restart"):
            applied.pop(e["node"], None)
        elif e["kind"] == "send" and e["msg"] == "BrokerRegistrationResponse":
            registered[e["dst"]] = e["broker_epoch"]
        elif e["kind"] == "send" and e["msg"] == "BrokerHeartbeat":
            heartbeats += 1
            assert e["metadata_offset"] == applied.get(e["node"], -1), e
        elif e["kind"] == "send" and e["msg"] == "BrokerHeartbeatResponse" and not e["fenced"]:
            assert applied.get(e["dst"], -1) >= registered[e["dst"]], e
    assert heartbeats and registered


def _unfencings_and_early_requests(events: list[dict]) -> tuple[dict, list, list]:
    """From a KRaft trace: when each broker first heard it was unfenced, the requests (any
    message kind but an answer) delivered to a broker before its incarnation heard it, and
    the `refused` drops."""
    kinds = {e["mid"]: (e["msg"], e.get("fenced")) for e in events if e["kind"] == "send"}
    unfenced: set[str] = set()  # brokers whose incarnation has heard it is unfenced
    first, early, refused = {}, [], []
    for e in events:
        node = e["node"]
        if e["kind"] in ("crash", "restart"):
            unfenced.discard(node)
        elif e["kind"] == "deliver" and node.startswith("b"):
            kind, fenced = kinds[e["mid"]]
            if kind == "BrokerHeartbeatResponse" and fenced is False:
                unfenced.add(node)
                first.setdefault(node, e["t"])
            elif not kind.endswith("Response") and node not in unfenced:
                early.append(e)
        elif e["kind"] == "drop" and e["reason"] == "refused":
            refused.append(e)
    return first, early, refused


@pytest.mark.parametrize("opens_when_unfenced", [True, False])
def test_a_starting_broker_reads_no_request_until_unfenced(opens_when_unfenced):
    """KAFKA-14658 (3.5): a starting KRaft broker's ports stay closed until the controller
    unfences it, so clients are refused (at the run's start; nothing reaches b1 after its
    restart at 14 s until it is unfenced again). Before, the ports are open and requests wait unread: none is refused, and no answer to a
    client leaves a broker before it was first unfenced."""
    events = _events("kraft-smoke", (("protocol.kraft_port_opens_when_unfenced",
                                      opens_when_unfenced),))
    unfenced_at, early, refused = _unfencings_and_early_requests(events)
    if opens_when_unfenced:
        assert not early and refused
        assert {e["dst"] for e in refused} == {"b1", "b2", "b3"}
        return
    assert early and not refused
    answers = [e for e in events if e["kind"] == "send" and e["node"] in unfenced_at
               and e["msg"] in ("MetadataResponse", "ProduceResponse", "FetchResponse")]
    assert answers and all(a["t"] >= unfenced_at[a["node"]] for a in answers)
