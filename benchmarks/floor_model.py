"""The least CPython does for a scenario's steady produce/replicate traffic: a lower bound.

`run_floor(options, seed)` replays the traffic shape of a scenario with nothing but a heap of
callbacks, dicts and tuples: every `linger.ms` each producer sends one Produce per leader
carrying one batch per partition it leads; the leader appends and parks an acks=all waiter;
each follower keeps one long-polling Fetch per leader naming every partition it follows; the
leader records the follower's offsets, moves the HW to the minimum log end offset and answers
the waiters the HW covers. Latency is drawn per message from the scenario's lognormal.
It reads the options as a trace header records them (`Options.to_json()`).

What it leaves out is everything the harness exists for: simpy, leader and partition epochs
and their checks, ISR changes, idempotence, the controller, faults and retries, the trace and
the invariants. So the time it takes bounds from below what any faithful model of the same
traffic can take in this interpreter; `bench_failover --breakdown` times it alongside the real
run, in one process, so the ratio is measured rather than guessed.

Returns (callbacks run, batches acknowledged); the second should be close to the real run's.
"""

from __future__ import annotations

import heapq
import random


def _leaders(options) -> dict:
    """Partition number (over all topics) -> broker index of its preferred leader, the first
    assigned replica."""
    firsts = [replicas[0] - 1 for t in options["topics"] for replicas in t["assignment"]]
    return dict(enumerate(firsts))


def run_floor(options, seed: int) -> tuple[int, int]:
    """Simulate `options["run"]["duration_ms"]` of steady traffic; see the module docstring."""
    rng = random.Random(seed)
    sigma = options["network"]["latency"].get("sigma", 0.0)
    median_us = options["network"]["latency"].get("median_ms", 1.0) * 1000
    brokers = range(options["cluster"]["brokers"])
    leader_of = _leaders(options)
    led = {b: [tp for tp, lb in leader_of.items() if lb == b] for b in brokers}
    others = {b: [r for r in brokers if r != b] for b in brokers}
    logs = {(b, tp): [] for b in brokers for tp in leader_of}  # [(base offset, count)]
    leo = dict.fromkeys(logs, 0)
    hw = dict.fromkeys(logs, 0)
    follower_leo = {(b, tp, f): 0 for (b, tp) in logs for f in brokers}
    parked: dict = {}  # (leader, follower) -> fetch offsets
    waiters = {b: [] for b in brokers}
    queue: list = []
    clock = {"now": 0, "seq": 0, "calls": 0, "acked": 0}

    def at(t, fn, *args):
        clock["seq"] += 1
        heapq.heappush(queue, (t, clock["seq"], fn, args))

    def send(fn, *args):
        at(clock["now"] + int(median_us * rng.lognormvariate(0.0, sigma)), fn, *args)

    def read(b, tp, offset):
        log = logs[b, tp]
        i = len(log)
        while i and log[i - 1][0] >= offset:
            i -= 1
        return log[i:i + 64]

    def answer(b, f, offsets):
        send(on_fetch_response, f, b, [(tp, hw[b, tp], read(b, tp, o)) for tp, o in offsets])

    def on_produce(b, batches):
        needs = []
        for tp, count in batches:
            leo[b, tp] += count
            logs[b, tp].append((leo[b, tp] - count, count))
            needs.append((tp, leo[b, tp]))
        for f in others[b]:
            offsets = parked.pop((b, f), None)
            if offsets is not None:
                answer(b, f, offsets)
        waiters[b].append(needs)

    def on_fetch(b, f, offsets):
        moved = False
        for tp, offset in offsets:
            follower_leo[b, tp, f] = offset
            new_hw = leo[b, tp]
            for r in others[b]:
                if follower_leo[b, tp, r] < new_hw:
                    new_hw = follower_leo[b, tp, r]
            if new_hw > hw[b, tp]:
                hw[b, tp], moved = new_hw, True
        if moved:
            waiting = []
            for w in waiters[b]:
                if any(hw[b, tp] < need for tp, need in w):
                    waiting.append(w)
                else:
                    send(on_ack, len(w))
            waiters[b] = waiting
        if any(read(b, tp, offset) for tp, offset in offsets):
            answer(b, f, offsets)
        else:
            parked[b, f] = offsets

    def on_fetch_response(f, b, datas):
        for tp, leader_hw, entries in datas:
            for base, count in entries:
                if base == leo[f, tp]:
                    logs[f, tp].append((base, count))
                    leo[f, tp] = base + count
            hw[f, tp] = min(leader_hw, leo[f, tp])
        fetch(f, b)

    def fetch(f, b):
        send(on_fetch, b, f, [(tp, leo[f, tp]) for tp in led[b]])

    def on_ack(count):
        clock["acked"] += count

    def linger(producer):
        per_linger = producer["records_per_sec"] * producer["linger_ms"] // 1000
        n = len(leader_of)
        for b in brokers:
            batches = [(tp, per_linger // n + (i < per_linger % n))
                       for i, tp in enumerate(leader_of) if leader_of[tp] == b]
            send(on_produce, b, batches)
        at(clock["now"] + producer["linger_ms"] * 1000, linger, producer)

    for producer in options["producers"]:
        at(0, linger, producer)
    for f in brokers:
        for b in others[f]:
            at(0, fetch, f, b)
    end_us = options["run"]["duration_ms"] * 1000
    while queue:
        t, _, fn, args = heapq.heappop(queue)
        if t > end_us:
            break
        clock["now"] = t
        clock["calls"] += 1
        fn(*args)
    return clock["calls"], clock["acked"]
