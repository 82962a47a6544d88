"""A fault schedule in plain words, one line a step.

Contract: `describe(step)` returns one English sentence for a `FaultStep` (no time), and
`story(steps)` returns `t=<seconds>s <sentence>` lines in schedule order, e.g.
"t=3.000s hold StopReplica to b3 until a later LeaderAndIsr". The sentences are the reports'
own (`reports.words.fault_sentence`), so a counterexample reads the same in both places.
"""

from __future__ import annotations

from reports.words import fault_sentence


def describe(step) -> str:
    """One sentence for `step` (a FaultStep)."""
    return fault_sentence(step.action, step.target, step.params)


def story(steps) -> list[str]:
    """`t=<s>s <sentence>` for each step, in order."""
    return [f"t={s.at_us / 1e6:.3f}s {describe(s)}" for s in steps]
