"""A client library's clock and randomness, bound to the run: choices do not depend on the
order a set gave them, and the real modules serve outside a simulated client."""

from __future__ import annotations

import random
import time
from collections import namedtuple

from sim.kafka.wire import shims

Broker = namedtuple("Broker", "nodeId host port rack")


class _Kernel:
    now_us = 2_500_000


def test_choices_ignore_the_order_of_their_input():
    nodes = [Broker(i, f"b{i}", 9092, None) for i in (3, 1, 2)]
    picks = []
    for order in (nodes, nodes[::-1], nodes[1:] + nodes[:1]):
        with shims.running(_Kernel(), random.Random(7)):
            picks.append((shims.RANDOM.choice(order), shims.RANDOM.choice([3, 1, 2])))
            shuffled = list(order)
            shims.RANDOM.shuffle(shuffled)
            picks[-1] += (tuple(shuffled),)
    assert picks[0] == picks[1] == picks[2]


def test_the_clock_is_the_simulation_s_while_a_client_runs():
    with shims.running(_Kernel(), random.Random(1)):
        assert shims.CLOCK.monotonic() == 2.5
        assert shims.CLOCK.time() == shims.EPOCH_S + 2.5
        assert shims.CLOCK.time_ns() == (shims.EPOCH_S * 1000 + 2500) * 1_000_000
    real = time.monotonic()
    assert abs(shims.CLOCK.monotonic() - real) < 60  # outside: the real clock


def test_bind_library_rebinds_only_that_library():
    import aiokafka.client
    import aiokafka.conn

    shims.bind_library("aiokafka")
    assert aiokafka.client.time is shims.CLOCK and aiokafka.client.random is shims.RANDOM
    assert aiokafka.conn.random is shims.RANDOM
    assert time.monotonic is not shims.CLOCK.monotonic  # the process's own module is untouched


def test_an_ordered_frozenset_iterates_sorted_and_is_still_a_set():
    members = [("t", 1), ("t", 0), ("a", 3)]
    s = shims.OrderedFrozenSet(members)
    assert list(s) == sorted(members) and ("t", 0) in s and s == frozenset(members)

    class Assignment:
        def __init__(self, tps):
            self._topic_partitions = frozenset(tps)
            self._tp_state = {tp: None for tp in self._topic_partitions}

    shims.order_assignment(Assignment)
    shims.order_assignment(Assignment)  # once only
    a = Assignment(members)
    assert list(a._topic_partitions) == sorted(members) == list(a._tp_state)
