"""Invariants: pure folds over a trace (init, step, finish).

Contract: invariants read trace events only (vocabulary in `sim.kafka.vocab`), never live model
objects, so the same code checks a run online and a stored trace offline (`epochsim check`).
Each declares whether it is a safety rule (always), a liveness rule (after faults heal) or a
sanity rule, and which event kinds it reads.
"""
