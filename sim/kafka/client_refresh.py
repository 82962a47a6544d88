"""Metadata refresh shared by the producer and the consumer (Kafka's `Metadata` + NetworkClient).

Contract (mixin): `request_update` marks metadata stale and refreshes as soon as the backoff
allows; the Metadata request goes to the least loaded known broker (ref §3.1), one at a time,
with a request timeout; `on_metadata_timer` handles the `meta_age`, `refresh` and
`meta_timeout` timers and returns whether it did. The client supplies the settings and hooks:
`refresh_allowed`, `retry_backoff_us`, `retry_backoff_max_us`, `request_timeout_us`,
`in_flight_limit`, `in_flight_to`, `reconnect_at`, `arm_refresh`, `close_connection` (which must
call `lose_connection`, call `metadata_failed` when it drops a Metadata request in flight, and
request an update) and `after_metadata`; it calls `init_refresh` when it (re)starts and
`arm_metadata_expiry` when it begins to run. The mixin's `send` keeps which brokers the
client has a connection to, and when it last opened each, for `least_loaded_node`. An answer
that lists no brokers counts as a failed refresh (`NetworkClient`'s metadata updater), so it
changes no cached metadata.

Metadata expires `metadata.max.age.ms` after the last successful refresh
(`Metadata.timeToNextUpdate`: `lastSuccessfulRefreshMs + metadataExpireMs`, 0.11.0-3.7.0), so
a refresh an error asked for also puts off the next periodic one.

The backoff is `Metadata.timeToAllowUpdate`, by `client_backoff`: `constant` (before 3.7)
waits `retry.backoff.ms` after the last answer or failure; `exponential` (KIP-580, 3.7+) waits
the longer of backoff(failed attempts - 1) and, once answers stop bringing a newer leader epoch,
backoff(equivalent answers - 1), where backoff(n) = `retry.backoff.ms` * 2^n with ±20% jitter,
at most `retry.backoff.max.ms`. An answer with a newer (or first) epoch or a recreated topic,
and metadata expiry (`metadata.max.age.ms`), reset the count of equivalent answers.
"""

from __future__ import annotations

from sim.kafka.connection import RECONNECT_BACKOFF_US, least_loaded_node
from sim.kafka.messages import MetadataRequest
from sim.kafka.rules.backoff import JITTER, exponential_backoff_us
from sim.kafka.rules.client_metadata import metadata_answer_usable


class MetadataRefresher:
    def init_refresh(self) -> None:
        self.need_update = True
        self.last_refresh_us = -10**12
        self.meta_failures = 0  # Metadata.attempts: failed refreshes since the last answer
        self.meta_equivalent = 0  # Metadata.equivalentResponseCount
        self.meta_factors = (1.0, 1.0)  # jitter of the two backoffs since the last refresh
        self.meta_expires_us = 0  # when the metadata expires (`arm_metadata_expiry` sets it)
        self.connected: set[int] = set()  # brokers with an open connection
        self.connect_attempts: dict[int, int] = {}  # broker -> when it was last connected to

    def send(self, dst: str, kind: str, body) -> int:
        """Every request goes on the connection to `dst`, opened first if there is none (the
        model opens it at once; `leastLoadedNode` prefers open ones, from 2.3)."""
        if dst[0] == "b":
            node = int(dst[1:])
            if node not in self.connected:
                self.connected.add(node)
                self.connect_attempts[node] = self.now_us
        return super().send(dst, kind, body)

    def lose_connection(self, node: int) -> None:
        """The connection to `node` closed: it is left alone for `reconnect.backoff.ms`."""
        self.connected.discard(node)
        self.reconnect_at[node] = self.now_us + RECONNECT_BACKOFF_US

    def _expires_from_now(self) -> None:
        """The metadata expires `metadata.max.age.ms` from now."""
        self.meta_expires_us = self.now_us + self.spec.metadata_max_age_ms * 1000

    def arm_metadata_expiry(self) -> None:
        """Start the expiry clock: the metadata expires `metadata.max.age.ms` from now unless
        a successful refresh comes first (`meta_age` checks `meta_expires_us` when it fires)."""
        self._expires_from_now()
        self.set_timer(self.meta_expires_us - self.now_us, "meta_age")

    def refresh_allowed(self) -> bool:
        return True

    def arm_refresh(self, wait_us: int) -> None:
        self.set_timer(wait_us, "refresh")

    def request_update(self, immediate: bool = False) -> None:
        self.need_update = True
        self.maybe_refresh(immediate)

    def pick_least_loaded(self, stream: str) -> int | None:
        """`NetworkClient.leastLoadedNode` over the brokers the client knows (its bootstrap
        list before any), the scan starting where the client's `stream` draws; None when every
        node is full or in reconnect backoff."""
        candidates = self.meta.brokers or self.bootstrap
        offset = self.rng(stream).randrange(len(candidates))
        return least_loaded_node(candidates, self.in_flight_to, self.in_flight_limit(), offset,
                                 self.protocol.least_loaded_node, self.connected,
                                 self.connect_attempts)

    def maybe_refresh(self, immediate: bool = False) -> None:
        if self.meta_inflight is not None or not self.need_update or not self.refresh_allowed():
            return
        wait_us = self.last_refresh_us + self.refresh_backoff_us() - self.now_us
        if wait_us > 0 and not immediate:
            self.arm_refresh(wait_us)
            return
        node = self.pick_least_loaded("metadata")
        self.meta_blocked = node is None
        if node is None:  # every node is in reconnect backoff or full
            self.set_timer(RECONNECT_BACKOFF_US, "refresh")
            return
        self.corr += 1
        self.meta_inflight = self.corr
        self.meta_node = node
        self.send(f"b{node}", "Metadata", MetadataRequest(self.corr))
        self.set_timer(self.request_timeout_us(), "meta_timeout", self.corr)

    def refresh_backoff_us(self) -> int:
        """How long after the last refresh the next may start (see the module contract)."""
        if self.protocol.client_backoff == "constant":
            return self.retry_backoff_us()
        base, most = self.retry_backoff_us() // 1000, self.retry_backoff_max_us() // 1000
        attempts_factor, equivalent_factor = self.meta_factors
        wait = exponential_backoff_us(base, most, max(self.meta_failures - 1, 0), attempts_factor)
        if self.meta_equivalent:
            wait = max(wait, exponential_backoff_us(base, most, self.meta_equivalent - 1,
                                                    equivalent_factor))
        return wait

    def _refreshed(self) -> None:
        """An answer arrived or a refresh failed now: the next one backs off from here."""
        self.last_refresh_us = self.now_us
        if self.protocol.client_backoff == "exponential":
            rng = self.rng("metadata_backoff")
            self.meta_factors = (rng.uniform(1 - JITTER, 1 + JITTER),
                                 rng.uniform(1 - JITTER, 1 + JITTER))

    def metadata_failed(self) -> None:
        """`Metadata.failedUpdate`: the request in flight timed out or its connection closed."""
        self.meta_inflight = None
        self.meta_failures += 1
        self._refreshed()

    def _on_metadata_response(self, msg) -> None:
        if msg.body.corr != self.meta_inflight:
            return
        if not metadata_answer_usable(msg.body.brokers):
            # a broker that has had no UpdateMetadata yet: a failed update, retried later
            self.metadata_failed()
            self.maybe_refresh()
            return
        self.meta_inflight = None
        self.need_update = False
        self.meta_failures = 0
        self._refreshed()
        self._expires_from_now()
        progressed = self.meta.apply_response(msg.body, msg.src)
        self.meta_equivalent = 0 if progressed else self.meta_equivalent + 1
        self.after_metadata()

    def on_metadata_timer(self, name: str, data) -> bool:
        if name == "meta_age":
            if self.now_us < self.meta_expires_us:  # refreshed since: expires later
                self.set_timer(self.meta_expires_us - self.now_us, "meta_age")
                return True
            self.meta_equivalent = 0  # expired metadata is asked for without that backoff
            self.request_update()
            self.arm_metadata_expiry()
        elif name == "refresh":
            self.maybe_refresh()
        elif name == "meta_timeout":
            if self.meta_inflight == data:
                # NetworkClient closes the connection; the client's `close_connection` fails
                # the Metadata request (`Metadata.failedUpdate`, so the retry backs off) and
                # what else was in flight there, and asks again
                self.close_connection_with(f"b{self.meta_node}")
                self.close_connection(self.meta_node)
        else:
            return False
        return True
