"""The paced kernel stops as interrupted when a Ctrl-C came before its loop began."""

from __future__ import annotations

from epochsim.live.pacing import PacedKernel


def test_an_interrupt_before_the_loop_stops_the_run_at_its_first_look():
    ran = []
    kernel = PacedKernel(1_000_000, 100, 1.0, lambda _timeout: None)
    kernel.call_later(0, ran.append, "first")
    kernel.interrupted = True  # what serve's SIGINT handler sets
    outcome = kernel.run()
    assert outcome.stopped_by == "interrupted"
    assert ran == [] and outcome.events == 0


def test_without_an_interrupt_the_paced_run_reaches_its_end():
    ran = []
    kernel = PacedKernel(2_000, 100, 1.0, lambda _timeout: None)
    kernel.call_later(0, ran.append, "first")
    outcome = kernel.run()
    assert outcome.stopped_by == "until" and ran == ["first"]
