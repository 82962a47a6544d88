"""Kernel: integer time, tie order, bounded runs."""

import pytest

from sim.core.kernel import Kernel


def test_time_is_integer_microseconds():
    k = Kernel(until_us=10_000)
    seen = []
    k.call_later(1_500, lambda: seen.append(k.now_us))
    k.call_later(0, lambda: seen.append(k.now_us))
    out = k.run()
    assert seen == [0, 1_500]
    assert all(type(t) is int for t in seen)
    assert type(out.end_us) is int


def test_equal_times_run_in_scheduling_order():
    k = Kernel(until_us=10_000)
    order = []
    for i in range(20):
        k.call_later(500, order.append, i)
    # scheduled from inside a callback at the same instant: runs after those already queued
    k.call_later(0, lambda: k.call_later(500, order.append, "late"))
    k.run()
    assert order == list(range(20)) + ["late"]


def test_callbacks_receive_their_arguments():
    k = Kernel(until_us=100)
    got = []
    k.call_later(1, lambda *a: got.append(a), 1, "x", None)
    k.run()
    assert got == [(1, "x", None)]


def test_run_stops_before_until():
    k = Kernel(until_us=1_000)
    ran = []
    k.call_later(999, ran.append, 999)
    k.call_later(1_000, ran.append, 1_000)
    k.call_later(1_001, ran.append, 1_001)
    out = k.run()
    assert ran == [999]
    assert out.stopped_by == "until"
    assert out.end_us == 1_000
    assert out.events == 1


def test_run_stops_after_max_events():
    k = Kernel(until_us=1_000_000, max_events=5)
    ran = []
    for i in range(10):
        k.call_later(i * 10, ran.append, i)
    out = k.run()
    assert ran == [0, 1, 2, 3, 4]
    assert out.stopped_by == "max_events"
    assert out.events == 5
    assert out.end_us == 50  # the sixth callback was due at 50 and did not run


def test_self_rescheduling_loop_is_bounded_by_max_events():
    k = Kernel(until_us=10**12, max_events=1_000)

    def tick():
        k.call_later(0, tick)

    k.call_later(0, tick)
    out = k.run()
    assert out.stopped_by == "max_events"
    assert out.events == 1_000


def test_run_reports_idle_when_queue_empties():
    k = Kernel(until_us=1_000)
    k.call_later(10, lambda: None)
    out = k.run()
    assert out.stopped_by == "idle"
    assert out.events == 1
    assert out.end_us == 10


def test_negative_delay_rejected():
    k = Kernel(until_us=1_000)
    with pytest.raises(ValueError, match="negative delay"):
        k.call_later(-1, lambda: None)


@pytest.mark.parametrize("until_us, max_events", [(-1, 10), (10, 0)])
def test_bad_bounds_rejected(until_us, max_events):
    with pytest.raises(ValueError):
        Kernel(until_us=until_us, max_events=max_events)


def test_simpy_processes_interleave_in_simpy_order():
    k = Kernel(until_us=100)
    env = k.env
    order = []

    def proc():
        order.append(("proc start", k.now_us))
        yield env.timeout(10)
        order.append(("proc", k.now_us))
        yield env.timeout(200)  # beyond until: never resumes
        order.append(("late", k.now_us))

    k.call_later(10, order.append, ("a", 10))
    env.process(proc())  # starts URGENT at 0, its timeout is queued after "a" and "c"
    k.call_later(10, order.append, ("c", 10))
    k.call_later(0, order.append, ("zero", 0))
    out = k.run()
    assert order == [("proc start", 0), ("zero", 0), ("a", 10), ("c", 10), ("proc", 10)]
    assert out.events == 3  # only call_later callbacks count
    assert out.stopped_by == "until" and out.end_us == 100


def test_until_must_be_in_the_future():
    k = Kernel(until_us=0)
    with pytest.raises(ValueError):
        k.run()


def test_exceptions_from_callbacks_propagate():
    k = Kernel(until_us=100)

    def boom():
        raise RuntimeError("boom")

    k.call_later(5, boom)
    with pytest.raises(RuntimeError, match="boom"):
        k.run()
    assert k.now_us == 5
