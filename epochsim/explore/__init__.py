"""Counterexample search and shrinking: from a failing seed to the smallest story that breaks a
protocol.

Contract of the package:
- `strategies` turns a scenario into a fault space and a hypothesis strategy of `Case`s (run
  seed, fault schedule, workload tweaks), drawn swarm-style so that hypothesis can shrink them;
- `oracle` runs one case and says which invariants it confirmably broke;
- `search` drives hypothesis (generate, then shrink while the same invariant fails);
- `shrink` minimises a concrete recorded schedule (delta debugging, then time simplification);
- `coverage` folds run traces into which protocol situations the search reached;
- `words` renders a schedule in plain words; `output` writes the counterexample directory.
Everything here is deterministic given the scenario and the search seed.
"""
