"""The simulated asyncio loop: coroutines sleep in kernel time, a timer re-armed for less than
a microsecond still lets time move on, and the loop reaches neither threads nor the OS."""

from __future__ import annotations

import asyncio

import pytest

from sim.core.asyncloop import SimLoop
from sim.core.kernel import Kernel


def _loop(until_us=10_000_000):
    kernel = Kernel(until_us)
    return kernel, SimLoop(kernel)


def test_coroutines_sleep_in_simulated_time():
    kernel, loop = _loop()
    seen = []

    async def sleeper(name, seconds):
        for _ in range(3):
            await asyncio.sleep(seconds)
            seen.append((name, kernel.now_us, asyncio.get_running_loop() is loop))

    loop.create_task(sleeper("a", 0.25))
    loop.create_task(sleeper("b", 0.4))
    kernel.call_later(0, loop.pump)
    kernel.run()
    assert seen == [("a", 250_000, True), ("b", 400_000, True), ("a", 500_000, True),
                    ("a", 750_000, True), ("b", 800_000, True), ("b", 1_200_000, True)]


def test_a_sub_microsecond_remainder_does_not_hold_time_still():
    # a client's batching timer re-arms itself for `deadline - time.monotonic()`: with a float clock
    # a remainder below the clock's step would fire again and again at one instant
    kernel, loop = _loop(1_000_000)
    fired = []

    def linger(deadline):
        fired.append(kernel.now_us)
        remainder = deadline - loop.time()
        if remainder > 0:
            loop.call_later(remainder, linger, deadline)

    loop.call_later(0.0, linger, 0.1 + 1e-12)
    kernel.call_later(0, loop.pump)
    kernel.run()
    assert fired[0] == 0 and fired[-1] <= 100_002 and len(fired) <= 4


def test_a_delay_below_the_float_clock_s_step_is_the_next_microsecond():
    # at 0.0421 s, a client's `deadline - time.monotonic()` can be 7e-18 s: time() + delay is
    # time() again, and the timer would be due at once, forever
    kernel, loop = _loop(1_000_000)
    fired = []

    def tick():
        fired.append(kernel.now_us)
        if len(fired) < 3:
            loop.call_later(7e-18, tick)

    kernel.call_later(42_100, loop.call_soon, tick)
    kernel.call_later(42_100, loop.pump)
    kernel.run()
    assert fired == [42_100, 42_101, 42_102]


def test_connections_come_from_the_connector_and_nothing_leaves_the_run():
    kernel, loop = _loop()
    asked = []
    loop.connector = lambda lp, factory, host, port: asked.append((host, port)) or ("t", "p")
    results = []

    async def main():
        results.append(await loop.create_connection(lambda: None, "b1", 9092))
        for call in (lambda: loop.run_in_executor(None, print),):
            with pytest.raises(RuntimeError):
                call()
        with pytest.raises(OSError):
            await loop.getaddrinfo("example.org", 80)

    loop.create_task(main())
    kernel.call_later(0, loop.pump)
    kernel.run()
    assert asked == [("b1", 9092)] and results == [("t", "p")]
