"""Consumer client: fetches every partition of its topic from the partitions' leaders.

Contract: from `start_ms` the consumer keeps one Fetch in flight per leader broker, naming every
partition that broker leads in its metadata, with `replica_id = -1`, `CurrentLeaderEpoch` = the
epoch it knows (KIP-320) and `max_wait = fetch_max_wait_ms`; the broker returns only batches
below the high watermark. Each partition's position starts with a ListOffsets reset
(`consumer_reset.py`: `auto_offset_reset`, earliest by default, as there are no committed
offsets), and it consumes from there in order, recording each run of consumed batches as a
`consume` event. Its metadata cache is `ClientMetadata` (ref §3.1,
KIP-951 §3.3), so every change it accepts is a `client_epoch` event. Per-partition errors
follow `FetchCollector` (ref §3.2):
- NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR
  request a metadata update; with `kip951` discovery a CurrentLeader hint is applied first
  (`AbstractFetch`, ref §3.3.1);
- UNKNOWN_LEADER_EPOCH is only logged (the broker is behind the consumer);
- OFFSET_OUT_OF_RANGE makes the position wait for a reset (`handleOffsetOutOfRange`): a
  ListOffsets round trip by `auto.offset.reset`, whichever side of the range it fell; with
  no reset policy (`none`) the position stays and OffsetOutOfRangeException is surfaced.
An answer for a partition without a valid position, or records or OFFSET_OUT_OF_RANGE for a
Fetch from another offset than the position's (a seek since), is dropped
(`consumer_subscription.py`).
Each error is a `fetch_error` event, and the partition then rests `retry.backoff.ms` unless the
client knows, or learns, a newer leader epoch than the failed Fetch carried (a hint, metadata);
`refresh_no_backoff` discovery refreshes metadata at once and never rests. (The Java consumer
has no per-partition rest: it fetches again on its next poll; the rest stands in for that poll
pacing.) Metadata requests go to the least loaded node (`connection.least_loaded_node`) and
wait there behind any parked Fetch; a node whose connection just closed is left alone for
`reconnect.backoff.ms`.
Each partition is fetched from its position's leader, which follows the metadata's current
leader as `position_leader` decides (KAFKA-9840: from 2.6 a partition the metadata knows no
leader for is fetched on from the last one); with none it waits for a Metadata answer. After a
leader change a partition it has read from waits for position validation
(`consumer_validation.py`, KIP-320) before it is fetched again.
With `fetch_sessions` (KIP-227, 1.1+) it keeps a fetch session with each broker it fetches
from (`FetchSessionHandler`): after the first, full, Fetch its Fetches name only the
partitions whose position or epoch changed and forget those it no longer fetches there, and
the broker answers only with partitions that have news; an answer whose partitions do not fit
the session (`handleResponse` false) is not read.
Not modelled: consumer groups and committed offsets.
"""

from __future__ import annotations

from sim.core.actor import Actor
from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.client_metadata import ClientMetadata
from sim.kafka.client_refresh import MetadataRefresher
from sim.kafka.consumer_poll import FetchCollector
from sim.kafka.consumer_reset import OffsetResetter
from sim.kafka.consumer_subscription import SubscriptionUser
from sim.kafka.consumer_validation import PositionValidator
from sim.kafka.fetch_session import FetchSessionHandler
from sim.kafka.messages import Fetch, FetchPartition
from sim.kafka.options import ConsumerOptions, TopicOptions
from sim.kafka.rules import rules_for

RETRY_BACKOFF_MS = 100  # retry.backoff.ms default (ref §0)
RETRY_BACKOFF_MAX_MS = 1000  # retry.backoff.max.ms default (3.7+, ref §0)
MAX_IN_FLIGHT = 5  # per connection, for choosing the Metadata node
REFRESH_ERRORS = E.INVALID_METADATA | {E.KAFKA_STORAGE_ERROR}
HINT_ERRORS = (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)


class Consumer(SubscriptionUser, FetchCollector, OffsetResetter, PositionValidator,
               MetadataRefresher, Actor):
    def __init__(self, world, spec: ConsumerOptions, topic_spec: TopicOptions, protocol):
        super().__init__(spec.name, world)
        self.spec = spec
        self.protocol = protocol
        self.rules = rules_for(protocol)
        self.tps = [f"{topic_spec.name}-{i}" for i in range(topic_spec.partitions)]
        self.bootstrap = tuple(range(1, world.options.cluster.brokers + 1))
        self.discovery = spec.leader_discovery or protocol.leader_discovery
        self._reset()

    def _reset(self) -> None:
        self.meta = ClientMetadata(self, self.protocol)
        self.position = {tp: 0 for tp in self.tps}
        self.resting: dict[str, tuple[int, int]] = {}  # tp -> (until_us, epoch of the failed Fetch)
        self.fetching: dict[int, int] = {}  # broker -> corr of its Fetch in flight
        # broker -> {tp: FetchPartition} its Fetch in flight stands for (a session's whole view)
        self.fetch_sent: dict[int, dict] = {}
        self.sessions: dict[int, FetchSessionHandler] = {}  # broker -> its fetch session
        self.corr = 0
        self.meta_inflight = None
        self.meta_node = -1
        self.reconnect_at: dict[int, int] = {}  # node -> end of its reconnect backoff
        self.init_refresh()
        self.running = False
        self.wake_at_us = -1  # when the pending "fetch" timer fires (-1: none pending)
        self.refresh_at_us = -1  # when the pending "refresh" timer fires
        self.init_validation()
        self.init_reset()
        self.init_subscription()
        self.init_poll()

    # -- lifecycle and timers ------------------------------------------------------------
    def start(self) -> None:
        # a consumer appends nothing: "off" keeps the idempotence fold's view of it exact
        self.emit(V.CLIENT_CONFIG, {"idempotence": "off", "effective_idempotence": "off",
                                    "leader_discovery": self.discovery, "role": "consumer"})
        self.set_timer(self.spec.start_ms * 1000, "begin")

    def on_restart(self) -> None:
        self._reset()
        self.set_timer(0, "begin")

    def on_timer(self, name: str, data) -> None:
        if name == "begin":
            self.running = True
            self.maybe_refresh()
            self.arm_metadata_expiry()
        elif self.on_metadata_timer(name, data):
            pass
        elif name in ("fetch_timeout", "validate_timeout", "reset_timeout"):
            # a Fetch, OffsetsForLeaderEpoch or ListOffsets still unanswered: NetworkClient
            # disconnects
            in_flight = {"fetch_timeout": self.fetching, "validate_timeout": self.validating,
                         "reset_timeout": self.resetting}[name]
            broker, corr = data
            if in_flight.get(broker) == corr:
                del in_flight[broker]
                if name == "fetch_timeout":
                    self._fetch_failed(broker)
                self.close_connection_with(f"b{broker}")  # the broker sees it close
                self.request_update()
                self.fetch()
        elif name == "fetch":
            self.fetch()

    def on_disconnect(self, peer: str) -> None:
        """A broker died: forget what was in flight to it and look again (NetworkException)."""
        if not peer.startswith("b"):
            return
        self.close_connection(int(peer[1:]))

    def close_connection(self, broker: int) -> None:
        """The connection to `broker` closed: what was in flight on it is lost, the node waits
        out `reconnect.backoff.ms`, and metadata is refreshed (`handleServerDisconnect`)."""
        self.lose_connection(broker)
        if self.meta_inflight is not None and self.meta_node == broker:
            self.metadata_failed()
        if self.fetching.pop(broker, None) is not None:
            self._fetch_failed(broker)
        self.validating.pop(broker, None)
        self.resetting.pop(broker, None)
        self.request_update()  # as NetworkClient.handleServerDisconnect does
        self.fetch()

    # -- fetching ------------------------------------------------------------------------
    def _fetchable(self, tp: str, epoch: int) -> bool:
        rest = self.resting.get(tp)
        if rest is None:
            return True
        if self.now_us >= rest[0] or epoch > rest[1]:
            del self.resting[tp]  # rested long enough, or a newer leader is known
            return True
        return False

    def fetch(self) -> None:
        """One Fetch to every leader that has none in flight, for all its fetchable partitions."""
        if not self.running:
            return
        by_leader: dict[int, list] = {}
        for tp in self.assigned:
            leader, epoch = self.follow_current_leader(tp)
            if leader < 0:  # `prepareFetchRequests`: "missing the current leader node"
                self.request_update()
                continue
            reconnect_us = self.reconnect_at.get(leader, 0)
            if reconnect_us > self.now_us and reconnect_us > self.resting.get(tp, (0,))[0]:
                self.resting[tp] = (reconnect_us, epoch)  # its leader's connection just closed
            if tp in self.awaiting_reset or tp in self.awaiting:
                continue
            if tp in self.paused:  # `isFetchable`: not fetched, still reset and validated
                continue
            if self.buffered(tp):  # `fetchablePartitions`: its answer waits for a poll
                continue
            if leader not in self.fetching and self._fetchable(tp, epoch):
                by_leader.setdefault(leader, []).append(
                    FetchPartition(tp, self.position[tp], epoch, -1))
        for leader in sorted(by_leader):
            self._send_fetch(leader, tuple(by_leader[leader]))
        self.validate()
        self.reset_positions()
        self._wake_for_resting()

    def _wake_for_resting(self) -> None:
        """One timer for the earliest rest to end; rests that have ended but whose leader still
        has a Fetch in flight are looked at again when that Fetch returns."""
        now = self.now_us
        ends = [until for until, _ in self.resting.values() if until > now]
        if ends and (self.wake_at_us <= now or min(ends) < self.wake_at_us):
            self.wake_at_us = min(ends)
            self.set_timer(self.wake_at_us - now, "fetch")

    def _send_fetch(self, leader: int, parts: tuple) -> None:
        session_id, session_epoch, forget = 0, -1, ()
        if self.protocol.fetch_sessions:
            session = self.sessions.get(leader)
            if session is None:
                session = self.sessions[leader] = FetchSessionHandler()
            session_id, session_epoch = session.session_id, session.epoch
            if session.full:
                parts, forget = session.build_full(list(parts))
            else:
                wanted = {fp.tp: fp for fp in parts}  # in the order `fetch` offers them
                wanted.update((tp, None) for tp in session.parts if tp not in wanted)
                parts, forget = session.build_incremental(wanted)
            sent = session.parts.values()
        else:
            sent = parts
        self.fetch_sent[leader] = {fp.tp: fp for fp in sent}
        if not self.protocol.fetch_epoch_check:  # a Fetch before v9 (KIP-320, 2.1) has no
            parts = tuple(fp._replace(current_leader_epoch=-1) for fp in parts)  # such field
        self.corr += 1
        self.fetching[leader] = self.corr
        wait_us = self.spec.fetch_max_wait_ms * 1000
        self.send(f"b{leader}", "Fetch", Fetch(-1, self.corr, wait_us, parts, session_id,
                                               session_epoch, forget))
        self.set_timer(wait_us + self.request_timeout_us(), "fetch_timeout", (leader, self.corr))

    def _fetch_failed(self, broker: int) -> None:
        """A Fetch to `broker` was lost (`FetchSessionHandler.handleError`): the next is full."""
        session = self.sessions.get(broker)
        if session is not None:
            session.handle_error()

    def on_message(self, msg) -> None:
        if msg.kind == "FetchResponse":
            self._on_fetch_response(int(msg.src[1:]), msg.body)
        elif msg.kind == "MetadataResponse":
            self._on_metadata_response(msg)
        elif msg.kind == "OffsetsForLeaderEpochResponse":
            self.on_validation_response(int(msg.src[1:]), msg.body)
        elif msg.kind == "ListOffsetsResponse":
            self.on_reset_response(int(msg.src[1:]), msg.body)

    def _on_fetch_response(self, broker: int, resp) -> None:
        if self.fetching.get(broker) != resp.corr:
            return
        del self.fetching[broker]
        sent = self.fetch_sent.pop(broker, {})
        session = self.sessions.get(broker)
        if session is not None and not session.handle_response(
                resp.error, resp.session_id, [data.tp for data in resp.partitions]):
            self.fetch()  # `Fetcher`: an answer `handleResponse` refuses is not read
            return
        for data in resp.partitions:
            fp = sent.get(data.tp)
            if self.polls_when_told:  # the application's poll collects it (consumer_poll.py)
                self.buffer_fetch(broker, data, fp, resp.node_endpoints)
                continue
            if not self.wanted_fetch(data, fp.fetch_offset if fp else -1):
                continue  # no valid position any more, or a stale answer, or kept while paused
            if data.error == E.NONE:
                self._consume(data)
            else:
                self.on_fetch_error(broker, data, resp.node_endpoints,
                                    fp.current_leader_epoch if fp else -1)
        self.fetch()

    def _consume(self, data) -> None:
        """Take the batches that continue this partition's position, in order."""
        position = self.position[data.tp]
        taken = [e for e in data.entries if e[0] + e[1] > position]
        if not taken:
            return
        now = self.now_us
        self.position[data.tp] = taken[-1][0] + taken[-1][1]
        self.offset_epoch[data.tp] = taken[-1][2]  # the next position's offsetEpoch
        self.last_returned[data.tp] = (position, self.position[data.tp], tuple(taken))
        self.emit(V.CONSUME, {"tp": data.tp, "offset": taken[0][0],
                              "next_offset": self.position[data.tp], "batches": len(taken),
                              "count": sum(e[1] for e in taken), "leader_epoch": taken[-1][2],
                              "end_to_end_us": [now - e[3].created_us for e in taken],
                              "read": [[e[0], e[3].bid] for e in taken]})

    def apply_fetch_hint(self, broker: int, data, endpoints: tuple) -> bool:
        """With `kip951` discovery, apply a NOT_LEADER/FENCED answer's CurrentLeader hint
        (`AbstractFetch.handleFetchSuccess`); whether the cache took it."""
        return bool(data.error in HINT_ERRORS and data.current_leader
                    and self.discovery == "kip951"
                    and self.meta.apply_hint(data.tp, *data.current_leader, endpoints,
                                             f"b{broker}"))

    def on_fetch_error(self, broker: int, data, endpoints: tuple, epoch: int,
                       hinted: bool | None = None) -> None:
        """`epoch` is the CurrentLeaderEpoch the failed Fetch carried: a newer one known since
        (from a hint, metadata or another response) ends the partition's rest at once.
        `hinted`: the hint was already looked at on arrival (None: look now)."""
        err, tp = data.error, data.tp
        if hinted is None:
            hinted = self.apply_fetch_hint(broker, data, endpoints)
        action = "hint" if hinted else "backoff"
        if err in REFRESH_ERRORS:
            self.request_update(immediate=self.discovery == "refresh_no_backoff")
        elif err == E.OFFSET_OUT_OF_RANGE and self.reset_ts is None:
            # `handleInitializeErrors`: no reset policy, the position stays and poll raises
            self.surface(tp, "OffsetOutOfRangeException", self.position[tp])
            action = "raise"
        elif err == E.OFFSET_OUT_OF_RANGE:
            self.request_reset(tp)
            action = "reset"
        if action == "backoff" and (self.meta.epoch(tp) > epoch
                                    or self.discovery == "refresh_no_backoff"):
            action = "retry"  # a newer leader is already known, or this mode never waits
        rest = self.rules.rest_after_fetch_error("backoff" if action == "raise" else action,
                                                 self.now_us, RETRY_BACKOFF_MS * 1000, epoch)
        if rest is not None:
            self.resting[tp] = rest
        self.emit(V.FETCH_ERROR, {"tp": tp, "error": err, "broker": broker,
                                  "leader_epoch": epoch, "action": action,
                                  "position": self.position[tp]})

    # -- metadata ------------------------------------------------------------------------
    def learn_leader_epoch(self, tp: str, epoch: int, source: str, broker: int) -> None:
        """A leader epoch of `tp` learnt from an answer other than Metadata: a ListOffsets
        answer's `leaderEpoch` (`source` "list_offsets"; `OffsetFetcherUtils` at 3.7 calls
        `Metadata.updateLastSeenEpochIfNewer` with it when it resets a position), or a
        committed offset's, which this model has none of. A newer epoch than the last seen
        makes the cached entry stale and asks for metadata; the position then follows
        `position_leader` (no leader until a Metadata answer at that epoch). Fetched batches do
        not come here: their epoch is the position's `offset_epoch` only, as in Kafka."""
        if self.meta.update_last_seen_epoch_if_newer(tp, epoch, source, f"b{broker}"):
            self.request_update()

    def in_flight_to(self, node: int) -> int:
        """Requests in flight to `node`; a node in reconnect backoff counts as full."""
        if self.reconnect_at.get(node, 0) > self.now_us:
            return MAX_IN_FLIGHT
        return ((node in self.fetching) + (node in self.validating) + (node in self.resetting)
                + (self.meta_inflight is not None and self.meta_node == node))

    # -- metadata refresh settings (MetadataRefresher) ---------------------------------------
    def refresh_allowed(self) -> bool:
        return self.running

    def arm_refresh(self, wait_us: int) -> None:
        if self.refresh_at_us <= self.now_us:  # one pending timer is enough
            self.refresh_at_us = self.now_us + wait_us
            self.set_timer(wait_us, "refresh")

    def retry_backoff_us(self) -> int:
        return RETRY_BACKOFF_MS * 1000

    def retry_backoff_max_us(self) -> int:
        return RETRY_BACKOFF_MAX_MS * 1000

    def request_timeout_us(self) -> int:
        return self.spec.request_timeout_ms * 1000

    def in_flight_limit(self) -> int:
        return MAX_IN_FLIGHT

    def after_metadata(self) -> None:
        self.fetch()
