"""Generic deterministic discrete-event toolkit over simpy.

Contract: nothing in this package knows about Kafka. It offers integer-microsecond time
(`kernel`), named seeded random substreams (`rng`), a JSON Lines trace recorder with a digest
(`trace`), a simulated network (`network`: its messages and links in `links`, its rules in
`netrules`, its cuts in `topology`, what it needs of the world in `host`), faults as data
(`faults`), an actor base (`actor`) and the world that wires them together (`world`). The Kafka
model in `sim.kafka` is built from these pieces.
"""
