"""Connections: a broker's request queue with per-connection ordering, and a client's choice of
node for a Metadata request.

Contract, broker side (`RequestQueue`, mixin of `Broker`): Kafka handles the requests of one
connection one at a time and in order. The network thread mutes a connection when it reads a
request and unmutes it only once that request's response has been sent, so a Produce parked in
purgatory (acks=all waiting for the high watermark) holds back every later request on the same
connection, a Metadata request included (the head-of-line blocking of KIP-951's rejected
alternative, ref §3.4). Requests of unmuted connections wait in one FIFO queue per broker, served
by one request handler; a request takes `cluster.request_service_us × (1 + SERVICE_PER_BATCH ×
batches in the request)` and is handled when its service ends, so latency grows with load.
- Queued: Produce, Fetch (consumers and followers alike: they share Kafka's request handler
  pool), Metadata, OffsetsForLeaderEpoch and ListOffsets. A connection is the requesting node
  (one connection per node pair).
- Not queued: controller requests (LeaderAndIsr, UpdateMetadata, StopReplica) and responses.
  They are handled on arrival, as on a separate control-plane listener (KIP-291), so a network
  rule that delays them delays them by exactly that much.
- acks=0 Produce gets no response; its connection unmutes once it is handled (Kafka's
  NoOpResponse). The queue is volatile: a crash drops it, and clients learn of that from the
  closed connection (`Actor.on_disconnect`).

Contract, client side: `least_loaded_node` is `NetworkClient.leastLoadedNode`, which picks the
node a Metadata request goes to. The request then counts against that connection's in-flight
limit and waits in the broker's queue like any other request. A node whose connection closed
less than RECONNECT_BACKOFF_US ago counts as full, so no request goes to it (Kafka's
`canConnect` is false during reconnect.backoff.ms).
This module knows message kinds and the `partitions` of a Produce, nothing else of the model.
"""

from __future__ import annotations

from collections import deque

QUEUED_KINDS = frozenset({"Produce", "Fetch", "Metadata", "OffsetsForLeaderEpoch", "ListOffsets"})
# reconnect.backoff.ms: after a connection closes, a client leaves that node alone this long
# (Kafka grows it exponentially to reconnect.backoff.max.ms; one step is enough here)
RECONNECT_BACKOFF_US = 50_000
# Cost of one record batch relative to the fixed cost of a request: appending (and indexing)
# dominates a Produce, while a Fetch or Metadata request costs one fixed unit (reads are served
# from the page cache). A model assumption, documented in docs/kip-951-study.md.
SERVICE_PER_BATCH = 0.2


class RequestQueue:
    def init_request_queue(self) -> None:
        self.muted: dict[str, deque] = {}  # connection -> requests read but not yet queued
        self.serving: dict[str, int] = {}  # connection -> corr of its request being served
        self.request_queue: deque = deque()
        self.handler_busy = False

    def enqueue_request(self, msg) -> bool:
        """Take a client request into the queue; False if it is handled on arrival instead."""
        if msg.kind not in QUEUED_KINDS:
            return False
        waiting = self.muted.get(msg.src)
        if waiting is not None:
            waiting.append(msg)  # an earlier request of this connection is not answered yet
            return True
        self.muted[msg.src] = deque()
        self.serving[msg.src] = msg.body.corr
        self.request_queue.append(msg)
        self._serve_next()
        return True

    def connection_closed(self, peer: str) -> None:
        """`peer`'s connection closed (the network reset it, or `peer` died): the requests it
        had sent that were not read yet go with it, and a new connection starts unmuted. A
        request already being served still completes (Kafka does not cancel it, so a Produce
        may still be appended), but its answer unmutes nothing: it has no connection to go to."""
        self.muted.pop(peer, None)
        self.serving.pop(peer, None)

    def service_us(self, msg) -> int:
        batches = len(msg.body.partitions) if msg.kind == "Produce" else 0
        return int(self.cluster.request_service_us * (1 + SERVICE_PER_BATCH * batches))

    def _serve_next(self) -> None:
        if self.handler_busy or not self.request_queue:
            return
        msg = self.request_queue.popleft()
        self.handler_busy = True
        self.set_timer(self.service_us(msg), "request_served", msg)

    def on_request_served(self, msg) -> None:
        self.handler_busy = False
        self.dispatch(msg)
        if msg.kind == "Produce" and msg.body.acks == 0 \
                and self.serving.get(msg.src) == msg.body.corr:  # not of a closed connection
            self._unmute(msg.src)
        self._serve_next()

    def send(self, dst: str, kind: str, body) -> int:
        mid = super().send(dst, kind, body)
        # the answer to a connection's current request: its next request may now be read
        if kind.endswith("Response") and dst in self.muted and self.serving.get(dst) == body.corr:
            self._unmute(dst)
        return mid

    def _unmute(self, src: str) -> None:
        waiting = self.muted.get(src)
        if waiting is None:
            return
        if waiting:
            nxt = waiting.popleft()
            self.serving[src] = nxt.body.corr
            self.request_queue.append(nxt)  # still muted for this next request
            self._serve_next()
        else:
            del self.muted[src]
            del self.serving[src]


def least_loaded_node(nodes: tuple, in_flight, limit: int, offset: int,
                      rule: str = "oldest_attempt", connected=frozenset(),
                      attempts: dict | None = None) -> int | None:
    """`NetworkClient.leastLoadedNode` by the switch `least_loaded_node` (`rule`), scanning
    `nodes` from `offset` (a random start); `in_flight(node)` counts a node's requests in flight
    (`limit` or more: full, or in reconnect backoff), `connected` holds the nodes with an open
    connection, `attempts` when each was last connected to. A connected node with nothing in
    flight is taken at once. Otherwise `fewest_in_flight` (0.10.2-2.2) takes the node with the
    fewest in flight, a node without a connection counting as none, the first of equals;
    `established_first` (2.3-2.6) a connected node with the fewest in flight, and without one
    the last node it may connect to; `oldest_attempt` (2.7+) likewise, but of the nodes to
    connect to the one last attempted longest ago (never: 0), the first of equals. None: every
    node is full or backing off (the caller retries when a response frees one)."""
    best, fewest, spare = None, limit, None
    attempts = attempts or {}
    for i in range(len(nodes)):
        node = nodes[(offset + i) % len(nodes)]
        count = in_flight(node)
        if count >= limit:
            continue
        if node in connected:
            if count == 0:
                return node
            if count < fewest:
                best, fewest = node, count
        elif rule == "fewest_in_flight":
            if count < fewest:
                best, fewest = node, count
        elif rule == "established_first" or spare is None \
                or attempts.get(spare, 0) > attempts.get(node, 0):
            spare = node
    return best if best is not None else spare
