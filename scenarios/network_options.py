"""[network] of a scenario file: default link settings and [[network.links]] overrides.

Contract: `network(raw, names)` returns the resolved `NetworkOptions` (types, defaults and
limits as its fields declare them); `fetch_takes_time(options)` refuses a setup in which a
Fetch is answered at the instant it is sent. Errors are `scenarios.tables.Bad`.
"""

from __future__ import annotations

import math
from typing import Any

from scenarios.tables import Bad, Names, Table, tables, wrap
from scenarios.targets import check_node
from sim.core.latency import LatencyDist
from sim.kafka.options import LinkOptions, NetworkOptions, Options


def fetch_takes_time(options: Options) -> None:
    """Refuse a Fetch that would be answered at the instant it is sent: a fetch wait of 0
    (a follower's replica_fetch_wait_max_ms, or a consumer's fetch_max_wait_ms), no request
    service time, and links that never take a microsecond either way between the fetcher and
    a broker. The fetcher asks again as soon as it is answered, so simulated time would never
    pass: the run would spin at t=0 until run.max_events, writing a trace of millions of events."""
    cluster, network = options.cluster, options.network
    if cluster.request_service_us:
        return
    links = {(link.src, link.dst): link for link in network.links}

    def instant(src: str, dst: str) -> bool:
        link = links.get((src, dst), network)
        return _max_latency_us(link.latency) == 0 and int(link.jitter_ms * 1000) == 0

    brokers = [f"b{i}" for i in range(1, cluster.brokers + 1)]
    fetchers = [(b, "cluster.replica_fetch_wait_max_ms") for b in brokers
                if cluster.replica_fetch_wait_max_ms == 0]
    fetchers += [(c.name, f"consumers[{i}].fetch_max_wait_ms")
                 for i, c in enumerate(options.consumers) if c.fetch_max_wait_ms == 0]
    for node, key in fetchers:
        for broker in brokers:
            if broker != node and instant(node, broker) and instant(broker, node):
                raise Bad(key, f"0, with cluster.request_service_us = 0 and no latency between "
                          f"{node} and {broker}: each Fetch would be answered at the instant it "
                          "is sent and simulated time would never pass",
                          "raise it, cluster.request_service_us, or the latency of those links")


def _max_latency_us(latency: LatencyDist) -> int:
    """The longest delay (µs) a latency distribution can draw; 0 means never any
    (`LatencyDist.sample` rounds to whole microseconds)."""
    if latency.dist in ("exponential", "lognormal"):  # unbounded, unless the scale is 0
        return 0 if latency.a == 0 else 1
    return round((latency.a if latency.dist == "constant" else latency.b) * 1000)


def _link(t: Table, cls, base: dict) -> dict:
    """Latency, jitter, drop and duplicate of a link (fields of `cls`); missing keys take
    `base`'s values."""
    out = {}
    latency = t.raw("latency", None)
    if latency is None:
        out["latency"] = base["latency"]
    elif not isinstance(latency, dict) or not isinstance(latency.get("dist", ""), str):
        raise Bad(t.path("latency"), "expected an inline table with a string dist",
                  'write latency = { dist = "constant", ms = 1 }')
    else:
        for name, value in latency.items():
            if isinstance(value, float) and not math.isfinite(value):  # parse accepts nan
                raise Bad(f"{t.path('latency')}.{name}", f"must be finite, got {value}",
                          "write a number of milliseconds")
        try:
            out["latency"] = LatencyDist.parse(latency)
        except ValueError as err:
            raise wrap(err, t.path("latency"), "see the latency table in the docs") from None
    for key in ("jitter_ms", "drop", "duplicate"):
        out[key] = t.option(cls, key, base[key])
    return out


_LINK_KEYS = ("latency", "jitter_ms", "drop", "duplicate")


def network(raw: Any, names: Names) -> NetworkOptions:
    """[network]: default link settings and per-link overrides [[network.links]]."""
    t = Table(raw, "network")
    out = _link(t, NetworkOptions, {k: getattr(NetworkOptions, k) for k in _LINK_KEYS})
    out["partition"] = t.option(NetworkOptions, "partition")
    links: list[LinkOptions] = []
    for i, item in enumerate(tables(t.raw("links", None), "network.links", nonempty=False)):
        lt = Table(item, f"network.links[{i}]")
        link = {"src": check_node(lt.raw("src"), lt.path("src"), names),
                "dst": check_node(lt.raw("dst"), lt.path("dst"), names)}
        if link["src"] == link["dst"] or (link["src"], link["dst"]) in [
                (o.src, o.dst) for o in links]:
            raise Bad(lt.path("dst"), f"link {link['src']}->{link['dst']} is a self-link or "
                      "listed twice", "give each directed link once, between two nodes")
        link.update(_link(lt, LinkOptions, out))
        lt.done()
        links.append(LinkOptions(**link))
    t.done()
    return NetworkOptions(**out, links=tuple(links))
