"""Probes: one Kafka unit test posed to the model (spec, state, wire, observe, run)."""
