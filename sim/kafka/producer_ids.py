"""A broker's producer ids: its `ProducerIdManager` and its answer to a producer's InitProducerId.

Contract (mixin of `Broker`): any broker answers an idempotent producer's InitProducerId (no
transactional id) with a new producer id at epoch 0 (`KafkaApis.handleInitProducerIdRequest`,
`TransactionCoordinator.handleInitProducerId`: "if the transactional id is null, then always
blindly accept the request and return a new producerId"), or, when its manager has no id to
give, with the manager's error and no id or epoch (`initTransactionError`). Ids come in blocks
(`rules.producer_ids`), so no two brokers ever hand out the same one:

- ZooKeeper mode (`ProducerIdManager`, 0.11-2.8; `ZkProducerIdManager`, 3.x): a starting broker
  takes its first block at once, once registered (the manager's constructor, when
  `KafkaServer.startup` makes the transaction coordinator), and the next when it has handed
  out the last id of its block, by a conditional update of the `/latest_producer_id_block`
  znode (`store.claim_producer_id_block`; the model's ZooKeeper answers at once, so no other
  broker's write can come between the read and the update and the retry loop never runs).
- KRaft (`RPCProducerIdManager`, KIP-730, as at 3.6-3.9): a broker starts with no block and
  asks the active controller for one (AllocateProducerIds, with its broker epoch) when a
  request finds none, answering that request COORDINATOR_LOAD_IN_PROGRESS, which the producer
  retries; it asks for the next block ahead, when it hands out the id 90% into its block. One
  request at a time; an error answer waits 50 ms before the next (`RetryBackoffMs`), a
  NOT_CONTROLLER answer forgets the controller, and an unanswered request is given up after
  `controller.socket.timeout.ms` (Kafka's channel to the controller sends it again then;
  the next InitProducerId asks again here). The controller writes a ProducerIdsRecord and
  answers once it commits (`kraft_controller`). Before KAFKA-14694 (3.3-3.5,
  `kraft_producer_id_no_wait` off; read at 3.0.0 and 3.5.0) a request that finds no id asks
  for a block and waits for it inside the request, up to the broker's request.timeout.ms,
  holding the manager's lock so later requests queue behind it (`_wait_for_block`); a wait
  that ends with no block answers COORDINATOR_LOAD_IN_PROGRESS, a STALE_BROKER_EPOCH answer
  asks again at once, and another error fails the waiting request with it.

Elided, since no invariant or case reads it: ZooKeeper-mode brokers from 3.0 whose
inter-broker protocol is 3.0-IV0 or later ask the ZooKeeper-mode controller for blocks over
the same RPC (the controller writes the same znode); 3.0-3.5's request handler thread that
waits for a block (the model holds only the requests, not a thread, nor the connection's later
requests) and its prefetch at every id past 90% of a block while none is out or queued
(3.6+: at that one id); a broker with no controller known does not queue its
AllocateProducerIds but asks again at the next InitProducerId; a ZooKeeper-mode broker cut off from ZooKeeper
still takes its next block at once (Kafka's request thread waits for the session; 3.x's
`ZkProducerIdManager` answers a failed write with its error); the authorizer's IdempotentWrite
check; the exhausted id space near Long.MAX_VALUE.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka import vocab as V
from sim.kafka.kraft_messages import AllocateProducerIds
from sim.kafka.messages import InitProducerIdResponse
from sim.kafka.rules import producer_ids as R

ALLOCATE_RETRY_BACKOFF_US = 50_000  # `ProducerIdManager.RetryBackoffMs`
# 3.3-3.5: how long an InitProducerId waits for a block (`maxWaitMs`: the broker's
# request.timeout.ms, 30 s by default, `BrokerServer` at 3.5.0)
BLOCK_WAIT_US = 30_000_000


class ProducerIdManager:
    def init_producer_ids(self) -> None:
        """The manager's state, lost with the process (`_reset_volatile`)."""
        self.pid_block = R.EMPTY_BLOCK  # (first, last) of the block ids come from
        self.next_pid = 0  # the next id of it to hand out
        self.pid_next_block: tuple[int, int] | None = None  # KRaft: the block asked for ahead
        self.pid_block_asked: int | None = None  # the corr of the AllocateProducerIds out
        self.pid_block_retry_at = -1  # no AllocateProducerIds before this (after an error)
        # 3.3-3.5: the InitProducerId requests waiting for a block, oldest first (the first
        # holds the manager's lock and waits; the others wait for the lock), and the token of
        # the first one's wait
        self.pid_waiting: list = []
        self.pid_wait_token = 0
        # never reset, so an answer to an earlier incarnation's request matches none of this one
        self.pid_block_corr = getattr(self, "pid_block_corr", 0)

    def claim_zk_producer_id_block(self) -> None:
        """A ZooKeeper-mode broker takes a new block from the znode and hands out its ids."""
        self.pid_block = self.store.claim_producer_id_block()
        self.next_pid = self.pid_block[0]

    def on_init_producer_id(self, msg) -> None:
        """InitProducerId with no transactional id: a new id at epoch 0, or the manager's
        error with neither; a 3.3-3.5 KRaft broker with no id to give waits for a block
        (`_wait_for_block`)."""
        if self.kraft and not self.protocol.kraft_producer_id_no_wait \
                and (self.pid_waiting or not self._has_id()):
            self._wait_for_block(msg)
            return
        self._answer_init_producer_id(msg, *self.generate_producer_id())

    def _answer_init_producer_id(self, msg, error: int, pid: int) -> None:
        epoch = 0 if error == E.NONE else -1
        self.send(msg.src, "InitProducerIdResponse",
                  InitProducerIdResponse(msg.body.corr, pid, epoch, error))

    def _has_id(self) -> bool:
        """Whether the current block, or the next one asked for ahead, has an id to give."""
        return self.next_pid <= self.pid_block[1] or self.pid_next_block is not None

    def _wait_for_block(self, msg) -> None:
        """3.0-3.5's `RPCProducerIdManager.generateProducerId` (read at 3.0.0 and 3.5.0;
        KAFKA-14694 changed it in 3.6.0): with no id left the request asks for a block and
        waits for it in `nextProducerIdBlock.poll(maxWaitMs)`, holding the manager's lock, so
        later requests wait behind it; a wait that ends with no block answers
        COORDINATOR_LOAD_IN_PROGRESS."""
        self.pid_waiting.append(msg)
        if len(self.pid_waiting) == 1:
            self._start_block_wait()

    def _start_block_wait(self) -> None:
        """The first waiting request takes the lock: it asks for a block (`maybeRequestNextBlock`)
        and waits up to `BLOCK_WAIT_US`. Its wait is timed before the request goes, as the
        request thread's `poll` starts before the channel's thread sends it: a wait and a
        request timeout that end together end in that order."""
        self.pid_wait_token += 1
        self.set_timer(BLOCK_WAIT_US, "pid_block_wait", self.pid_wait_token)
        self._maybe_ask_for_block()

    def pid_block_wait_timeout(self, token: int) -> None:
        """The first waiting request's `poll` ended with no block: COORDINATOR_LOAD_IN_PROGRESS
        ("Timed out waiting for next producer ID block"); the next one takes the lock."""
        if token != self.pid_wait_token or not self.pid_waiting:
            return
        self._answer_init_producer_id(self.pid_waiting.pop(0), E.COORDINATOR_LOAD_IN_PROGRESS, -1)
        if self.pid_waiting:
            self._start_block_wait()

    def _serve_waiting(self) -> None:
        """A block came: the waiting requests get their ids in turn; one that finds none left
        (a block smaller than the queue) waits again at the head."""
        while self.pid_waiting and self._has_id():
            self._answer_init_producer_id(self.pid_waiting.pop(0), *self.generate_producer_id())
        if self.pid_waiting:
            self._start_block_wait()

    def generate_producer_id(self) -> tuple[int, int]:
        """(error, id): the next id of this broker's block (`generateProducerId`)."""
        if not self.kraft:
            if self.next_pid > self.pid_block[1]:
                self.claim_zk_producer_id_block()
            return self._hand_out()
        if self.next_pid > self.pid_block[1] and self.pid_next_block is not None:
            self.pid_block, self.pid_next_block = self.pid_next_block, None
            self.next_pid = self.pid_block[0]
        if self.next_pid > self.pid_block[1]:
            # "Return COORDINATOR_LOAD_IN_PROGRESS rather than REQUEST_TIMED_OUT since older
            # clients treat the error as fatal"
            self._maybe_ask_for_block()
            return E.COORDINATOR_LOAD_IN_PROGRESS, -1
        if self.next_pid == R.prefetch_target(self.pid_block):
            self._maybe_ask_for_block()
        return self._hand_out()

    def _hand_out(self) -> tuple[int, int]:
        pid, self.next_pid = self.next_pid, self.next_pid + 1
        return E.NONE, pid

    def _maybe_ask_for_block(self) -> None:
        """`maybeRequestNextBlock`: AllocateProducerIds to the active controller, unless one
        is out, a block waits unused, or the backoff after an error runs."""
        if self.pid_block_asked is not None or self.pid_next_block is not None:
            return
        if self.now_us < self.pid_block_retry_at or self.controller is None:
            return
        self.pid_block_corr += 1
        self.pid_block_asked = self.pid_block_corr
        self.send(self.controller, "AllocateProducerIds",
                  AllocateProducerIds(self.pid_block_corr, self.id, self.broker_epoch))
        self.set_timer(V.CONTROLLER_SOCKET_TIMEOUT_US, "allocate_pids_timeout",
                       self.pid_block_corr)

    def on_allocate_producer_ids_response(self, msg) -> None:
        """`handleAllocateProducerIdsResponse`: a usable block waits for the current one to
        run out; any other answer frees the request and backs off."""
        resp = msg.body
        if resp.corr != self.pid_block_asked:
            return
        self.pid_block_asked = None
        if resp.error == E.NONE and R.usable_block(self.pid_block, resp.start, resp.length):
            self.pid_next_block = (resp.start, resp.start + resp.length - 1)
            self._serve_waiting()
            return
        if resp.error == E.NOT_CONTROLLER:
            self.controller = None  # the channel asks the next controller it hears of
            return
        if self.protocol.kraft_producer_id_no_wait:
            self.pid_block_retry_at = self.now_us + ALLOCATE_RETRY_BACKOFF_US
        elif resp.error == E.STALE_BROKER_EPOCH:
            if self.pid_waiting:  # 3.0-3.5: "Our broker epoch was stale, trying again."
                self._maybe_ask_for_block()
        elif self.pid_waiting:  # 3.0-3.5: "giving up": the waiting request fails with it
            self._answer_init_producer_id(self.pid_waiting.pop(0), resp.error, -1)
            if self.pid_waiting:
                self._start_block_wait()

    def allocate_pids_timeout(self, corr: int) -> None:
        """The request timed out (`controller.socket.timeout.ms`): it is given up and the next
        InitProducerId asks again; 3.3-3.5 requests waiting for a block ask again at once
        (3.5.0 `handleTimeout`, which also stands for the channel's resend)."""
        if corr == self.pid_block_asked:
            self.pid_block_asked = None
            if self.pid_waiting:
                self._maybe_ask_for_block()  # 3.0-3.5 `handleTimeout` asks again at once
