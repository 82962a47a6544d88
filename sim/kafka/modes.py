"""Which control plane a Kafka release runs, and the order of releases.

Contract: plain functions of a profile's name (`sim.kafka.profiles.PROFILES` keys). `modes(profile)` gives (the default `cluster.mode`, the modes the release has): KRaft
is production-ready from 3.3 (KIP-833), ZooKeeper mode is gone from 4.0 (KIP-500's last step);
`proposed` (this harness's own switches) has both. `oldest_client(profile)` is the oldest client
release whose requests brokers of `profile` still take, None when they take every modelled one.
"""

from __future__ import annotations

from sim.kafka.profiles import release_order

ZK, KRAFT = "zk", "kraft"


def modes(profile: str) -> tuple[str, tuple[str, ...]]:
    """(default mode, allowed modes) of `profile`. Every release that has ZooKeeper mode
    defaults to it, so a scenario written before KRaft existed in the model runs as before."""
    release = release_order(profile)
    if profile == "proposed" or (0, 3, 3) <= release < (0, 4, 0):
        return ZK, (ZK, KRAFT)
    if release >= (0, 4, 0):
        return KRAFT, (KRAFT,)
    return ZK, (ZK,)


def oldest_client(profile: str) -> str | None:
    """The oldest client profile brokers of `profile` answer. Kafka 4.0 dropped Produce v0-v2 and
    Fetch v0-v3 (KIP-896; 4.0's ProduceRequest.json: "Versions 0-2 were removed in Apache Kafka
    4.0, version 3 is the new baseline", and its FetchRequest.json starts at version 4), the
    only versions a 0.10.2 client sends: Produce v3 and Fetch v4 came with 0.11 (KIP-98).
    `proposed` runs 3.x brokers and answers every client."""
    return "0.11" if profile != "proposed" and release_order(profile) >= (0, 4, 0) else None
