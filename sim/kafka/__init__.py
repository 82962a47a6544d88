"""The Kafka model: controller, brokers, partitions, clients, messages, errors, profiles.

Built from `sim.core` pieces. Invariants and reports never import this package's actors; they
read the trace, whose vocabulary lives in `sim.kafka.vocab` (importable on its own).
"""
