"""Which control plane a Kafka release runs, and the order of releases.

Contract: plain functions of a profile's name (`sim.kafka.profiles.PROFILES` keys). `modes(profile)` gives (the default `cluster.mode`, the modes the release has): KRaft
is production-ready from 3.3 (KIP-833), ZooKeeper mode is gone from 4.0 (KIP-500's last step);
`proposed` (this harness's own switches) has both.
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
