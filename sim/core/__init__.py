"""Generic deterministic discrete-event toolkit over simpy.

Contract: nothing in this package knows about Kafka. It offers integer-microsecond time
(`kernel`), named seeded random substreams (`rng`), a JSON Lines trace recorder with a digest
(`trace`), a simulated network (`network`), faults as data (`faults`) and an actor base
(`actor`). The Kafka model in `sim.kafka` is built from these pieces.
"""
