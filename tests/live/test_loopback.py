"""A live run's listeners with no client library: a client written by hand (kafka-python's
protocol classes only) asks a broker's port for Metadata and hears the listeners' ports, and
the frames are in the trace as the `live` node's."""

from __future__ import annotations

import json
import os
import socket
import threading

from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from epochsim.live.serve import serve
from scenarios.schema import load_scenario
from tests.conftest import scenario_path

SHORT = {"run.duration_ms": 1500, "run.settle_ms": 200}


def _read_frame(sock) -> bytes:
    size = int.from_bytes(_exactly(sock, 4), "big")
    return _exactly(sock, size)


def _exactly(sock, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def test_a_hand_written_client_hears_the_listeners(tmp_path):
    scenario = load_scenario(scenario_path("live/librdkafka-leader-move-fresh-hint"), SHORT)
    ready, box = threading.Event(), {}

    def on_ready(endpoints):
        box["endpoints"] = endpoints
        ready.set()

    def run():
        box["verdict"] = serve(scenario, str(tmp_path), start_clients=False, on_ready=on_ready)

    server = threading.Thread(target=run)
    server.start()
    try:
        assert ready.wait(60)
        host, port = box["endpoints"][2]
        request = MetadataRequest[8](topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                                     allow_auto_topic_creation=False,
                                     include_cluster_authorized_operations=False,
                                     include_topic_authorized_operations=False)
        request.with_header(correlation_id=5, client_id="probe")
        with socket.create_connection((host, port), timeout=30) as sock:
            sock.sendall(request.encode(header=True, framed=True))
            resp = MetadataResponse.decode(_read_frame(sock), version=8, header=True)
    finally:
        server.join(60)
    assert resp.header.correlation_id == 5
    assert sorted((b.node_id, b.host, b.port) for b in resp.brokers) == \
        [(b, h, p) for b, (h, p) in sorted(box["endpoints"].items())]
    assert [p.leader_id for p in resp.topics[0].partitions] in ([1, 2], [2, 1])
    with open(os.path.join(tmp_path, "trace.jsonl"), encoding="utf-8") as fh:
        events = [json.loads(line) for line in fh]
    asked = [e for e in events if e.get("kind") == "send" and e.get("api") == "Metadata"]
    assert [(e["node"], e["dst"]) for e in asked] == [("live", "b2"), ("b2", "live")]
    assert box["verdict"]["run"]["stopped_by"] == "until"
