"""Metadata refresh shared by the producer and the consumer (Kafka's `Metadata` + NetworkClient).

Contract (mixin): `request_update` marks metadata stale and refreshes as soon as the retry
backoff allows; the Metadata request goes to the least loaded known broker (ref §3.1), one at a
time, with a request timeout; `on_metadata_timer` handles the `meta_age`, `refresh` and
`meta_timeout` timers and returns whether it did. The client supplies the settings and hooks:
`refresh_allowed`, `retry_backoff_us`, `request_timeout_us`, `in_flight_limit`, `arm_refresh`,
`close_connection` (which must drop a Metadata request in flight on that connection and request
an update) and `after_metadata`. A Metadata request that times out closes its connection and
counts as a failed update, which the next attempt waits `retry_backoff_us` after.
"""

from __future__ import annotations

from sim.kafka.connection import RECONNECT_BACKOFF_US, least_loaded_node
from sim.kafka.messages import MetadataRequest


class MetadataRefresher:
    def refresh_allowed(self) -> bool:
        return True

    def arm_refresh(self, wait_us: int) -> None:
        self.set_timer(wait_us, "refresh")

    def request_update(self, immediate: bool = False) -> None:
        self.need_update = True
        self.maybe_refresh(immediate)

    def maybe_refresh(self, immediate: bool = False) -> None:
        if self.meta_inflight is not None or not self.need_update or not self.refresh_allowed():
            return
        wait_us = self.last_refresh_us + self.retry_backoff_us() - self.now_us
        if wait_us > 0 and not immediate:
            self.arm_refresh(wait_us)
            return
        candidates = self.meta.brokers or self.bootstrap
        offset = self.rng("metadata").randrange(len(candidates))
        node = least_loaded_node(candidates, self.in_flight_to, self.in_flight_limit(), offset)
        self.meta_blocked = node is None
        if node is None:  # every node is in reconnect backoff or full
            self.set_timer(RECONNECT_BACKOFF_US, "refresh")
            return
        self.corr += 1
        self.meta_inflight = self.corr
        self.meta_node = node
        self.send(f"b{node}", "Metadata", MetadataRequest(self.corr))
        self.set_timer(self.request_timeout_us(), "meta_timeout", self.corr)

    def _on_metadata_response(self, msg) -> None:
        if msg.body.corr != self.meta_inflight:
            return
        self.meta_inflight = None
        self.need_update = False
        self.last_refresh_us = self.now_us
        self.meta.apply_response(msg.body, msg.src)
        self.after_metadata()

    def on_metadata_timer(self, name: str, data) -> bool:
        if name == "meta_age":
            self.request_update()
            self.set_timer(self.spec["metadata_max_age_ms"] * 1000, "meta_age")
        elif name == "refresh":
            self.maybe_refresh()
        elif name == "meta_timeout":
            if self.meta_inflight == data:
                # `Metadata.failedUpdate` sets lastRefreshMs, so the retry backs off; then
                # NetworkClient closes the connection (the client's `close_connection` drops
                # the Metadata request and what else was in flight there, and asks again)
                self.last_refresh_us = self.now_us
                self.reset_connection(f"b{self.meta_node}")
                self.close_connection(self.meta_node)
        else:
            return False
        return True
