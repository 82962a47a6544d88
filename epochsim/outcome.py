"""A run's outcome against its scenario's `expect`, in words, for the reports that say why a
run failed (the pytest plugin's failure report, `suite --junit-xml`).

Contract: `expectation_line(expect, violated, met, note)` is one line; for a run that met its
expectation it says so, and for one that did not it names what was expected and what the run
showed instead (the invariants it broke, the note of a run cut short or of a probe).
"""

from __future__ import annotations


def expectation_line(expect: str, violated: list[str], met: bool, note: str | None = None) -> str:
    """"expectation 'pass' met", or what was expected and what happened instead."""
    head = f"expectation {expect!r} " + ("met" if met else "NOT met")
    if met:
        return head
    broke = ", ".join(violated)
    if note and expect != "agree" and not violated:  # a pass cut short: the note says why
        return f"{head}: {note}"
    if expect == "pass":
        return f"{head}: violated {broke}" + (f"; {note}" if note else "")
    if expect == "agree":  # a probe: the first check where the model and Kafka differ
        return f"{head}: the model disagrees with Kafka: {note or 'the probe did not finish'}"
    wanted = expect.split(":", 1)[1]
    shown = f"violated only {broke}" if violated else "no invariant was violated"
    return f"{head}: {wanted} was not violated ({shown})" + (f"; {note}" if note else "")
