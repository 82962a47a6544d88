"""[live] and [[live_clients]] of a scenario file: what `epochsim serve` runs beside the cluster.

Contract: `live_section(live, clients, names)` returns None when the file has neither (the
scenario is a simulated one only), else a `LiveOptions`: the wall-clock pacing (`slowdown`:
one simulated second takes that many wall seconds), where a broker's KIP-951 CurrentLeader
hint comes from (`hint`: "replica", the broker's replica state as Kafka does, or "cache", its
metadata cache, which lags under delayed UpdateMetadata: a stale hint), and the client
processes to start, each a `LiveClient`. Client names must differ from every other node's.
A simulated run (`epochsim run`) ignores both sections: nothing real runs inside it.
Errors are `scenarios.tables.Bad`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from scenarios.tables import NAME_RE, Bad, Names, Table, tables

KINDS = ("confluent-kafka", "kafka-python")
HINTS = ("replica", "cache")


@dataclass(frozen=True)
class LiveClient:
    name: str
    kind: str  # KINDS: which library the client process runs
    topic: str
    records: int = 200  # how many records it sends, round robin over the partitions
    records_per_sec: int = 100
    start_ms: int = 0  # simulated time before the first send
    acks: str = "all"  # "all", "1" or "0", as the library takes it
    enable_idempotence: bool = True
    linger_ms: int = 5
    read_back: bool = True  # after sending, read every partition from the start to its end

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LiveOptions:
    slowdown: float = 1.0
    hint: str = "replica"
    clients: tuple = ()  # of LiveClient

    def to_json(self) -> dict:
        return {"slowdown": self.slowdown, "hint": self.hint,
                "clients": [c.to_json() for c in self.clients]}


def live_section(live, clients, names: Names) -> LiveOptions | None:
    if live is None and clients is None:
        return None
    table = Table({} if live is None else live, "live")
    slowdown = table.number("slowdown", 1.0, lo=0.1, hi=100)
    hint = table.str("hint", "replica", HINTS)
    table.done()
    out, seen = [], []
    for i, raw in enumerate(tables(clients, "live_clients", False)):
        client = _client(Table(raw, f"live_clients[{i}]"), names)
        if client.name in names.nodes() or client.name in seen:
            raise Bad(f"live_clients[{i}].name", f"node name {client.name!r} is taken",
                      "give each client a name of its own")
        seen.append(client.name)
        out.append(client)
    return LiveOptions(float(slowdown), hint, tuple(out))


def _client(t: Table, names: Names) -> LiveClient:
    name = t.str("name")
    if not NAME_RE.match(name):
        raise Bad(t.path("name"), f"{name!r} is not a node name", "use letters, digits, '_' or '-'")
    kind = t.str("kind", choices=KINDS)
    topic = t.str("topic")
    if topic not in names.topics:
        raise Bad(t.path("topic"), f"unknown topic {topic!r}", "name a topic of [[topics]]")
    client = LiveClient(
        name=name, kind=kind, topic=topic,
        records=t.int("records", 200, lo=1, hi=100_000),
        records_per_sec=t.int("records_per_sec", 100, lo=1, hi=10_000),
        start_ms=t.int("start_ms", 0, lo=0),
        acks=str(t.raw("acks", "all")),
        enable_idempotence=t.bool("enable_idempotence", True),
        linger_ms=t.int("linger_ms", 5, lo=0, hi=60_000),
        read_back=t.bool("read_back", True))
    if client.acks not in ("all", "-1", "1", "0"):
        raise Bad(t.path("acks"), f"acks {client.acks!r}", 'use "all", 1 or 0')
    t.done()
    return client
