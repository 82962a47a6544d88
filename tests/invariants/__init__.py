"""Invariant unit tests: one hand-built good trace and one bad trace per invariant."""
