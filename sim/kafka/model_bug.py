"""Assertions of model state that must always hold, whatever the protocol switches.

Contract: `ModelBug` is raised when the model's own state breaks a rule Kafka's code keeps by
construction (a replica's leader epoch never goes back, log offsets are contiguous, the high
watermark never passes the log end). It is a bug in the model, never a finding about Kafka:
it ends the run loudly instead of writing a trace that looks like a protocol violation. The
checks are single comparisons on paths already taken, cheap enough for the benchmark.
"""

from __future__ import annotations


class ModelBug(AssertionError):
    """The model's state broke one of its own rules (see the module docstring)."""
