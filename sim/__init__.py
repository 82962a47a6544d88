"""The simulation: `sim.core` (generic discrete-event toolkit) and `sim.kafka` (the Kafka model)."""
